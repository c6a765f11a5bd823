"""The one Protocol every system under test implements: Mem0, Mem0^g, RAG, full context, later adapters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mem0bench.data.context import ContextKind, RetrievedContext
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.memory.costs import CostPlan, MethodConfig

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient

__all__ = [
    "ContextKind",
    "IngestReport",
    "MemorySystem",
    "RetrievedContext",
    "SystemBase",
    "SystemContext",
    "SystemFailure",
]


@dataclass(frozen=True)
class IngestReport:
    sample_id: str
    memory_tokens: int | None
    """Size of the memory store for this conversation in cl100k_base tokens (None where n/a)."""
    failures: int = 0
    details: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SystemContext:
    """What a system gets from the harness. Systems are built as
    `hydra.utils.instantiate(cfg.method, _partial_=True)(context=SystemContext(...))`."""

    client: LLMClient
    state_dir: Path
    """A folder of the run directory that belongs to this system (snapshots, operation logs)."""
    graph: Mapping[str, Any] = field(default_factory=dict)
    """The `graph` config group (backend, host, port, prefix); only Mem0^g reads it."""


SystemFailure = dict[str, Any]
"""A row of a memory system's own `failures` list (kind, message, stage, sample_id, qid, ...)."""


@runtime_checkable
class MemorySystem(Protocol):
    """Everything the pipeline uses of a system; `SystemBase` gives the defaults of all but ingest and
    retrieve."""

    name: str
    failures: list[SystemFailure]
    """The steps that failed inside this process's ingest and retrieve calls, appended as they fail;
    the pipeline records each row once (the calls themselves do not raise for them)."""

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

    def __init__(self) -> None:
        self.failures: list[SystemFailure] = []

    async def aclose(self) -> None:
        return None

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return CostPlan(context_tokens=0.0)
