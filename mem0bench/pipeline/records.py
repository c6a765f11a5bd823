"""Rows written by the stages to the run directory (one JSON object per line)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, TypeVar

T = TypeVar("T")

Label = Literal["CORRECT", "WRONG"]


def _from_dict(cls: type[T], row: dict[str, Any]) -> T:
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    kwargs = {
        k: (tuple(v) if isinstance(v, list) else v) for k, v in row.items() if k in names and k != "usage"
    }
    kwargs["usage"] = row.get("usage")
    return cls(**kwargs)


@dataclass(frozen=True)
class AnswerRecord:
    """The answer stage's output for one question. `failure` set means no prediction was produced;
    such a row is retried by the next run and scored as an empty answer if it stays failed."""

    qid: str
    conversation: str
    question: str
    gold: str
    category: str
    category_id: int
    prediction: str
    context_tokens: int | None
    search_latency_s: float | None
    total_latency_s: float | None
    local_search_s: float | None = None
    evidence: tuple[str, ...] = ()
    context_dia_ids: tuple[str, ...] = ()
    failure: str | None = None
    usage: dict[str, list[int]] | None = None
    """LLM use for this question (search and answer): stage -> [calls, prompt, completion]."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> AnswerRecord:
        return _from_dict(cls, row)


@dataclass(frozen=True)
class Judgement:
    """One judge run's label for one question; `label` None with `failure` set is a judge failure."""

    qid: str
    run: int
    label: Label | None
    signature: str
    """Which judge gave it (model, prompt, mode); a re-judge with other settings does not mix labels."""
    reasoning: str = ""
    failure: str | None = None
    usage: dict[str, list[int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Judgement:
        return _from_dict(cls, row)


@dataclass(frozen=True)
class FailureRecord:
    stage: str
    kind: str
    message: str
    conversation: str | None = None
    qid: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
