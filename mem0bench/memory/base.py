"""The one Protocol every system under test implements: Mem0, Mem0^g, RAG, full context, later adapters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from mem0bench.data.model import Conversation, Question

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient

ContextKind = Literal["memories", "graph_memories", "chunks", "full_context"]


@dataclass(frozen=True)
class RetrievedContext:
    """What a system hands to the answer stage for one question."""

    kind: ContextKind
    text: str
    """The context block, already rendered (memories with timestamps, chunks, ...)."""
    tokens: int
    """cl100k_base tokens of `text`."""
    source_dia_ids: tuple[str, ...] = ()
    """The dia_ids behind the retrieved context, where the system knows them."""
    search_latency_s: float | None = None
    """Wall time to build the context (query embedding and LLM calls included, queueing excluded);
    None for systems with no search (full context)."""
    local_search_s: float | None = None
    """The part of the search spent outside network calls (the harness's own cost)."""


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


@runtime_checkable
class MemorySystem(Protocol):
    name: str

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Build the system's memory of one conversation. Idempotent: resumes from its state_dir."""
        ...

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """Build the answer context for one question about an ingested conversation."""
        ...
