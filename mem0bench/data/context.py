"""What a memory system hands the answer stage for one question.

It lives at the bottom layer because two layers share it: memory/ builds it and prompts/ renders it; the
prompts must not import the memory package above them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ContextKind = Literal["memories", "graph_memories", "chunks", "full_context", "notes", "evidence", "none"]


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
    items: int | None = None
    """How many retrieved items the context holds (memories, relations, chunks, notes, turns); None where
    a system does not say."""
