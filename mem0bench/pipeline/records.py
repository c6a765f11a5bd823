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
    """'<stage>:<kind>: <message>' (stage: ingest, search or answer) when no prediction was produced."""
    usage: dict[str, list[int]] | None = None
    """LLM use for this question (search and answer): stage -> [calls, prompt, completion]."""
    degraded: tuple[str, ...] = ()
    """Failed steps the system got past while building the context ('<kind>: <message>', e.g. Mem0^g's
    query-entity call): the prediction exists but was made from a poorer context."""
    session: str | None = None
    """Which process wrote the row (the runner's session id); judgements name the answer they judged by it."""
    ingest_session: str | None = None
    """The session of the ingest row whose memory answered: an answer made from a memory that was later
    built again (a retried ingestion) is made again."""

    @property
    def failed_stage(self) -> str | None:
        return self.failure.split(":", 1)[0] if self.failure else None

    @property
    def failure_kind(self) -> str:
        parts = (self.failure or "").split(":", 2)
        return parts[1].strip() if len(parts) == 3 else "unknown"

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
    session: str | None = None
    answer_session: str | None = None
    """The `session` of the answer row judged: labels of an answer that was later made again do not count."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Judgement:
        return _from_dict(cls, row)


@dataclass(frozen=True)
class FailureRecord:
    """A failures.jsonl row: one item that failed for good in one attempt (after the client's retries).

    `resolved` is set when the run finishes: true once a later attempt succeeded (the row is history),
    false while the item is still failed (it is counted in metrics.json and retried by the next run)."""

    stage: str
    kind: str
    message: str
    conversation: str | None = None
    qid: str | None = None
    run: int | None = None
    """The judge run, for a judge failure."""
    step: str | None = None
    """Where inside the stage (a system's own step, e.g. Mem0's extraction or update)."""
    detail: dict[str, Any] | None = None
    session: str | None = None
    resolved: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
