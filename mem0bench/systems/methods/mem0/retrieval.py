"""Mem0's retrieval and its rendering for the answer model.

For a question, each speaker's store gives its top_k memories (cosine similarity to the question's
embedding, best first); the answer context lists them per speaker with the session date of their newest
information ('- [<updated_at>] <memory>').
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from mem0bench.common.text import one_line
from mem0bench.memory.records import MemoryRecord
from mem0bench.memory.vector_store import FaissVectorStore

__all__ = ["Section", "dia_ids_of", "render_hits", "render_memories", "search_sections"]

Section = tuple[str, list[tuple[MemoryRecord, float]]]
"""(section title, hits best first): one store's answer to a question."""


def render_memories(sections: Sequence[tuple[str, Sequence[MemoryRecord]]]) -> str:
    """The answer-context rendering: per section a header naming the speaker, then
    '- [<session date>] <memory>' lines in the given order."""
    blocks = []
    for title, records in sections:
        lines = [f"Memories of {title}:"]
        lines += [f"- [{r.updated_at}] {one_line(r.text)}" for r in records] or ["(no memories)"]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_hits(sections: Sequence[Section]) -> str:
    """`render_memories` of search results (scores dropped, order kept)."""
    return render_memories([(title, [record for record, _ in hits]) for title, hits in sections])


def search_sections(
    stores: Sequence[tuple[str, FaissVectorStore[MemoryRecord]]], vector: np.ndarray, k: int
) -> list[Section]:
    """The top-k hits of each (title, store), in the given order."""
    return [(title, store.search(vector, k)) for title, store in stores]


def dia_ids_of(groups: Iterable[Iterable[str]]) -> tuple[str, ...]:
    """The dia_ids of several sources, each once, in first-seen order."""
    seen: dict[str, None] = {}
    for ids in groups:
        seen.update(dict.fromkeys(ids))
    return tuple(seen)
