"""Rows written by the stages to the run directory (one JSON object per line)."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, TypeVar

from mem0bench.llm.types import FailureKind, as_failure_kind

T = TypeVar("T")

Label = Literal["CORRECT", "PARTIAL", "WRONG"]
"""PARTIAL only from a graded suite's judge (Locomo-Plus)."""
LABEL_SCORES: dict[str, float] = {"CORRECT": 1.0, "PARTIAL": 0.5, "WRONG": 0.0}


def label_score(label: str | None) -> float | None:
    """A judge label as a score: CORRECT 1, PARTIAL 0.5, WRONG 0; None for none (or an unknown one)."""
    return None if label is None else LABEL_SCORES.get(label)


def score_label(score: float | None) -> str | None:
    """The label of a score (the inverse of `label_score`)."""
    return None if score is None else "CORRECT" if score == 1 else "PARTIAL" if score == 0.5 else "WRONG"


def _from_dict(cls: type[T], row: dict[str, Any]) -> T:
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    kwargs = {
        k: (tuple(v) if isinstance(v, list) else v) for k, v in row.items() if k in names and k != "usage"
    }
    kwargs["usage"] = row.get("usage")
    return cls(**kwargs)


CONTEXT_KEEP_CHARS = 16_000
"""Characters of the retrieved context kept in an answer row (Mem0's contexts are ~7,000, Mem0^g's
~14,000; a full-context run's ~100,000 are cut)."""


def keep_context(text: str) -> str:
    """`text`, cut at `CONTEXT_KEEP_CHARS` with a last line saying how much was left out."""
    if len(text) <= CONTEXT_KEEP_CHARS:
        return text
    return text[:CONTEXT_KEEP_CHARS] + f"\n[... {len(text) - CONTEXT_KEEP_CHARS:,} more characters not kept]"


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
    answer_server_s: float | None = None
    """The answer call's own server time (its HTTP request); None when the cache answered it. The isolated
    latency pass adds it to its search time for the total."""
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
    cached: bool | None = None
    """True when any call behind this row (search or answer) was served from the cache, so its latencies
    are not a server's: latency percentiles leave it out. None in rows written before the field existed."""
    context_items: int | None = None
    """How many items (memories, relations, chunks, notes) the retrieved context held, where the system
    says; 0 with `context_tokens` 0 is an empty context."""
    context: str | None = None
    """The retrieved context as the answer model saw it, for reading (the HTML report); cut after
    `CONTEXT_KEEP_CHARS` characters so a full-context run's rows stay small."""
    evidence_sessions: tuple[int, ...] = ()
    """Session-level evidence (LongMemEval); left out of the row when empty, so LOCOMO rows are unchanged."""
    question_type: str | None = None
    """`Question.question_type` (LongMemEval's, by which its authors' figures count an abstention question);
    left out of the row when None, so other suites' rows are unchanged."""

    @property
    def failed_stage(self) -> str | None:
        return self.failure.split(":", 1)[0] if self.failure else None

    @property
    def failure_kind(self) -> FailureKind:
        parts = (self.failure or "").split(":", 2)
        return as_failure_kind(parts[1].strip() if len(parts) == 3 else None)

    def to_dict(self) -> dict[str, Any]:
        row = asdict(self)
        if not self.evidence_sessions:
            del row["evidence_sessions"]
        if self.question_type is None:
            del row["question_type"]
        # Added by issue 18: left out when unknown, so that rows of earlier runs read back (and aggregate)
        # to the same bytes.
        if row["answer_server_s"] is None:
            del row["answer_server_s"]
        return row

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> AnswerRecord:
        return _from_dict(cls, row)


@dataclass(frozen=True)
class LatencyRecord:
    """One question's retrieval timed again by the isolated latency pass (latency.jsonl): alone, with
    nothing else of the run in flight, its model calls made live (not from the cache).

    `search_s` is the system's own search time; `server_s` the part spent in requests to the model
    server; `local_s` the rest (our code and the system's own computation). `total_s` adds the answer
    call's server time from the answer row (None when that reply came from the cache)."""

    qid: str
    conversation: str
    category_id: int
    search_s: float | None
    local_s: float | None
    server_s: float | None
    total_s: float | None
    requests: int = 0
    """Model calls the retrieval made (each one sent to the server)."""
    failure: str | None = None
    """'<stage>:<kind>: <message>' when the retrieval failed; the row then times nothing."""
    session: str | None = None
    """The attempt that measured it."""
    ingest_session: str | None = None
    """The ingest row whose memory was searched: a memory built again is measured again."""
    usage: dict[str, list[int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> LatencyRecord:
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
    score: float | None = None
    """A suite's own judge (BEAM's rubric, one call per item): the question's exact score in [0, 1], of
    which `label` is the nearest of 1 / 0.5 / 0. None for every other judge."""
    detail: dict[str, Any] | None = None
    """That judge's workings (each rubric item's score, the ordering's Kendall tau), kept for inspection."""

    def to_dict(self) -> dict[str, Any]:
        row = asdict(self)
        # Only a suite's own judge sets these: a yes/no judge's rows stay as they were written before.
        for key in ("score", "detail"):
            if row[key] is None:
                del row[key]
        return row

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Judgement:
        return _from_dict(cls, row)


@dataclass(frozen=True)
class FailureRecord:
    """A failures.jsonl row: one item that failed for good in one attempt (after the client's retries).

    `resolved` is set when the run finishes: true once a later attempt succeeded (the row is history),
    false while the item is still failed (it is counted in metrics.json and retried by the next run)."""

    stage: str
    kind: FailureKind
    """Read back from a row, a kind this version does not know is "unknown" (llm.types.as_failure_kind)."""
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

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> FailureRecord:
        # Tolerant of rows from older versions: a missing kind or message reads as unknown / empty.
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in row.items() if k in names}
        kwargs.setdefault("stage", "unknown")
        kwargs["kind"] = as_failure_kind(kwargs.get("kind"))
        kwargs.setdefault("message", "")
        return cls(**kwargs)


@dataclass(frozen=True)
class IngestRecord:
    """An ingest.jsonl row: one attempt at one conversation. Either it ran to the end (the store's size,
    the steps that failed on the way) or `failed` says why the conversation could not be ingested."""

    sample_id: str
    session: str | None = None
    failed: str | None = None
    """'ingest:<kind>: <message>' when the conversation could not be ingested at all."""
    kind: FailureKind | None = None
    """The failure kind of a `failed` attempt."""
    memory_tokens: int | None = None
    failures: int = 0
    """Steps that failed for good while the ingestion went on."""
    failure_kinds: dict[FailureKind, int] = field(default_factory=dict)
    retry: bool | None = None
    """True when a failed step may pass on a later attempt; None in rows written before it existed."""
    details: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, list[int]] | None = None
    """LLM use of this attempt: stage -> [calls, prompt, completion]."""

    @property
    def is_final(self) -> bool:
        """True when this attempt closes the conversation's ingestion: done, nothing a retry could fix."""
        if self.failed:
            return False
        if self.retry is not None:
            return not self.retry
        return not self.failures  # rows written before `retry` existed: any failure is retried

    @property
    def has_failures(self) -> bool:
        return bool(self.failed or self.failures)

    def to_dict(self) -> dict[str, Any]:
        if self.failed:
            return {
                "sample_id": self.sample_id,
                "failed": self.failed,
                "kind": self.kind,
                "session": self.session,
            }
        return {
            "sample_id": self.sample_id,
            "memory_tokens": self.memory_tokens,
            "failures": self.failures,
            "failure_kinds": self.failure_kinds,
            "retry": self.retry,
            "details": self.details,
            "usage": self.usage,
            "session": self.session,
        }

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> IngestRecord:
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in row.items() if k in names}
        kwargs["failures"] = int(row.get("failures") or 0)
        kwargs["details"] = row.get("details") or {}
        kinds: Counter[FailureKind] = Counter()
        for kind, n in (row.get("failure_kinds") or {}).items():
            kinds[as_failure_kind(kind)] += int(n)
        kwargs["failure_kinds"] = dict(kinds)
        if row.get("kind") is not None:
            kwargs["kind"] = as_failure_kind(row["kind"])
        return cls(**kwargs)
