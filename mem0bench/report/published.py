"""Published LOCOMO results (the package's `published_locomo.json`): rows beside ours, never mixed in.

They are read only by `report --published`, which shows them as rows marked "published, not measured
here". Nothing else reads them: `compare`, the paired baseline column and the 95% intervals work on run
directories alone (a published row has no per-question data to resample or pair).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

__all__ = ["MARK", "PublishedResult", "load_published"]

FILE = "published_locomo.json"
MARK = "published, not measured here"
LOCOMO_NAMES = ("multi_hop", "temporal", "open_domain", "single_hop")


@dataclass(frozen=True)
class PublishedResult:
    """One published figure. J values are in % as published; categories by LOCOMO's own names."""

    system: str
    j: float
    answer_model: str
    judge: str
    category5: str
    source: str
    how_known: str
    date: str | None = None
    j_std: float | None = None
    categories: dict[str, float] = field(default_factory=dict)
    note: str = ""


def _result(entry: Any, where: str) -> PublishedResult:
    if not isinstance(entry, dict):
        raise ValueError(f"{FILE}: {where}: not an object")
    categories = entry.get("categories") or {}
    unknown = set(categories) - set(LOCOMO_NAMES)
    if unknown:  # a source's own label slipped in unmapped
        raise ValueError(f"{FILE}: {where}: categories {sorted(unknown)} are not LOCOMO's names")
    try:
        return PublishedResult(
            system=str(entry["system"]), j=float(entry["j"]), answer_model=str(entry["answer_model"]),
            judge=str(entry["judge"]), category5=str(entry["category5"]), source=str(entry["source"]),
            how_known=str(entry["how_known"]), date=entry.get("date"),
            j_std=None if entry.get("j_std") is None else float(entry["j_std"]),
            categories={k: float(v) for k, v in categories.items()}, note=str(entry.get("note") or ""),
        )  # fmt: skip
    except KeyError as exc:
        raise ValueError(f"{FILE}: {where}: no field {exc.args[0]!r}") from None


def load_published() -> list[PublishedResult]:
    text = (resources.files("mem0bench.report") / FILE).read_text(encoding="utf-8")
    entries = json.loads(text)["results"]
    return [_result(e, f"result {i + 1}") for i, e in enumerate(entries)]
