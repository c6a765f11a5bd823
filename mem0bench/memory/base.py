"""The one Protocol every system under test implements: Mem0, Mem0^g, RAG, full context, later adapters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from mem0bench.data.context import ContextKind, RetrievedContext
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.types import FailureKind, as_failure_kind
from mem0bench.memory.costs import CostPlan, MethodConfig

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient
    from mem0bench.prompts.files import PromptFile

__all__ = [
    "ContextKind",
    "IngestReport",
    "MemorySystem",
    "RetrievedContext",
    "SystemBase",
    "SystemContext",
    "StepFailure",
    "expects_empty_context",
]


@dataclass(frozen=True)
class IngestReport:
    sample_id: str
    memory_tokens: int | None
    """Size of the memory store for this conversation in cl100k_base tokens (None where n/a)."""
    failures: int = 0
    details: dict[str, int] = field(default_factory=dict)
    restored: bool = False
    """True when the memory was reopened from a saved state (nothing ingested by this call): the attempt
    that built it keeps its ingest record, so the failures it recorded stay open until a retry fixes them
    (`failures` then repeats the saved count)."""


@dataclass(frozen=True)
class SystemContext:
    """What a system gets from the harness. Systems are built as
    `hydra.utils.instantiate(cfg.method, _partial_=True)(context=SystemContext(...))`."""

    client: LLMClient
    state_dir: Path
    """A folder of the run directory that belongs to this system (snapshots, operation logs)."""
    graph: Mapping[str, Any] = field(default_factory=dict)
    """The `graph` config group (backend, host, port, prefix); only Mem0^g reads it."""


@dataclass(frozen=True)
class StepFailure:
    """A step that failed inside a system's ingest or retrieve call (the call itself went on).

    An ingestion step names the stream's speaker and the message pair; a retrieval step names the
    question (`qid`). `to_dict` is the row the stream snapshots and failures.jsonl have always held.
    """

    system: str
    sample_id: str
    stage: str
    """The system's own step (extraction, update, summary, graph_entities, graph_query_entities, ...)."""
    kind: FailureKind
    message: str
    speaker: str | None = None
    pair_index: int | None = None
    dia_ids: tuple[str, ...] = ()
    fact: str | None = None
    qid: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON row, keys in the order the files always had them."""
        if self.qid is not None:
            where: dict[str, Any] = {"qid": self.qid}
        else:
            where = {"speaker": self.speaker, "pair_index": self.pair_index, "dia_ids": list(self.dia_ids)}
        row = {"system": self.system, "sample_id": self.sample_id, **where}
        row.update(stage=self.stage, kind=self.kind, message=self.message)
        if self.fact is not None:
            row["fact"] = self.fact
        return row

    def detail(self) -> dict[str, Any]:
        """What failures.jsonl keeps under `detail`: the row less its stage, kind, message and sample."""
        return {k: v for k, v in self.to_dict().items() if k not in ("kind", "message", "stage", "sample_id")}

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> StepFailure:
        """A row read back from a stream snapshot (tolerant of a missing field, as older files may be)."""
        return cls(
            system=str(row.get("system", "")),
            sample_id=str(row.get("sample_id", "")),
            stage=str(row.get("stage", "unknown")),
            kind=as_failure_kind(row.get("kind")),
            message=str(row.get("message", "")),
            speaker=row.get("speaker"),
            pair_index=row.get("pair_index"),
            dia_ids=tuple(row.get("dia_ids") or ()),
            fact=row.get("fact"),
            qid=row.get("qid"),
        )


@runtime_checkable
class MemorySystem(Protocol):
    """Everything the pipeline uses of a system; `SystemBase` gives the defaults of all but ingest and
    retrieve."""

    name: str
    packages: tuple[str, ...]
    """Distributions the system runs on beyond mem0bench's own (a third-party library): run.json records
    their installed versions."""
    failures: list[StepFailure]
    """The steps that failed inside this process's ingest and retrieve calls, appended as they fail;
    the pipeline records each row once (the calls themselves do not raise for them)."""

    # Optional members, read with a default when absent (`SystemBase` has them): `prompt_files`,
    # `empty_context_expected` (see `expects_empty_context`) and `bound` (see `declared_bound`).

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Build the system's memory of one conversation. Idempotent: resumes from its state_dir."""
        ...

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """Build the answer context for one question about an ingested conversation."""
        ...

    async def aclose(self) -> None:
        """Release connections; awaited once after the run, also after an error."""
        ...

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """The dry run's estimate of this system's own calls (ingest and search) for `dataset`, built from
        the `method` config group without constructing the system."""
        ...


class SystemBase:
    """Defaults for a MemorySystem: no failed steps yet, nothing to close, no calls of its own."""

    name: str
    packages: tuple[str, ...] = ()
    prompt_files: tuple[PromptFile, ...] = ()
    """The prompt files the system's own calls use (recorded in run.json)."""
    empty_context_expected: bool = False
    """True for a system whose contexts are empty by design (the no-memory floor). Recorded in run.json,
    so aggregating the run, then or later, does not mistake its empty contexts for lost memories."""
    bound: Literal["ceiling", "floor"] | None = None
    """A reference row rather than a memory system: "ceiling" (given the evidence) or "floor" (given
    nothing). Recorded in run.json; the report marks such rows as bounds."""

    def __init__(self) -> None:
        self.failures: list[StepFailure] = []

    async def aclose(self) -> None:
        return None

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return CostPlan(context_tokens=0.0)


def declared_bound(system: object) -> str | None:
    """The bound `system` declares itself (`bound`: "ceiling" or "floor"), else None."""
    bound = getattr(system, "bound", None)
    return bound if bound in ("ceiling", "floor") else None


def expects_empty_context(system: object) -> bool:
    """Whether `system` declares that it retrieves nothing by design (`empty_context_expected`). A system
    outside SystemBase that does not say is taken to retrieve something: its empty contexts are warned of."""
    return getattr(system, "empty_context_expected", False) is True
