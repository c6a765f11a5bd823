"""The sampling parameters a chat request went out with, as the request itself set them.

Each system's calls (the harness's own, and a library's through the bridge, which sends them as the
library built them) are recorded per ledger stage, so metrics.json can show side by side at what
temperature, top_p and completion limit every system's steps actually ran. A parameter the request left
out is None: the server's default (temperature 1 and top_p 1 at OpenAI).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Sampling", "merge_sampling"]


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


@dataclass(frozen=True)
class Sampling:
    """One combination of sampling parameters a request set (None: left to the server's default)."""

    temperature: float | None
    top_p: float | None
    max_tokens: int | None
    """`max_tokens`, or `max_completion_tokens` for a request that used the newer name."""

    @classmethod
    def of_request(cls, payload: Mapping[str, Any]) -> Sampling:
        limit = payload.get("max_tokens")
        if limit is None:
            limit = payload.get("max_completion_tokens")
        temperature, top_p, tokens = (
            _number(payload.get("temperature")),
            _number(payload.get("top_p")),
            _number(limit),
        )
        return cls(
            None if temperature is None else float(temperature),
            None if top_p is None else float(top_p),
            None if tokens is None else int(tokens),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> Sampling:
        return cls.of_request(row)


def _key(s: Sampling) -> tuple[tuple[bool, float], ...]:
    # None sorts first; a plain tuple sort would compare None with numbers.
    return tuple((v is not None, float(v or 0)) for v in (s.temperature, s.top_p, s.max_tokens))


def merge_sampling(
    blocks: Iterable[Mapping[str, Iterable[Mapping[str, Any]]] | None],
) -> dict[str, list[dict[str, Any]]]:
    """The union of {stage: [sampling, ...]} blocks (one per process that worked on a run), each stage's
    combinations listed once, in a stable order."""
    merged: dict[str, set[Sampling]] = {}
    for block in blocks:
        for stage, rows in (block or {}).items():
            for row in rows or ():
                if isinstance(row, Mapping):
                    merged.setdefault(str(stage), set()).add(Sampling.from_dict(row))
    return {stage: [s.to_dict() for s in sorted(found, key=_key)] for stage, found in sorted(merged.items())}
