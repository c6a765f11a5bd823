"""A-Mem's retrieval, as its `find_related_memories_raw` does it, and the notes it gives as answer context.

The library's method (what the authors' LOCOMO harness called, with k=10) takes the k notes nearest the
query in Chroma and, after each, the notes it links to (at most k per hit, read through the library's
cache). It returns one string; the adapter walks the same way with the library's own `retriever.search`
and `read`, so it knows each note's id (its turn) and can count them. Notes are not deduplicated: a note
linked from two hits appears twice, as in the library's string.

Rendered, one line per note, with the library's fields: `[session date] content (context: ...;
keywords: ...; tags: ...)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Note", "note_tokens_text", "render_notes", "walk_related"]


@dataclass(frozen=True)
class Note:
    id: str
    timestamp: str
    content: str
    context: str
    keywords: tuple[str, ...]
    tags: tuple[str, ...]
    links: tuple[str, ...] = ()
    """The ids of the notes this one links to (set by memory evolution)."""
    linked: bool = False
    """Reached through a link of a hit, not by similarity."""


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return (str(value),) if value not in (None, "") else ()


def note_from_metadata(metadata: dict[str, Any], *, linked: bool = False) -> Note:
    return Note(
        id=str(metadata.get("id", "")),
        timestamp=str(metadata.get("timestamp", "")),
        content=str(metadata.get("content", "")),
        context=str(metadata.get("context", "")),
        keywords=_strings(metadata.get("keywords")),
        tags=_strings(metadata.get("tags")),
        links=_strings(metadata.get("links")),
        linked=linked,
    )


def note_from_object(note: Any, *, linked: bool = False) -> Note:
    return Note(
        id=str(note.id),
        timestamp=str(note.timestamp),
        content=str(note.content),
        context=str(note.context),
        keywords=_strings(note.keywords),
        tags=_strings(note.tags),
        links=_strings(note.links),
        linked=linked,
    )


def walk_related(system: Any, query: str, k: int) -> list[Note]:
    """The notes `system.find_related_memories_raw(query, k)` renders, in its order. Sync (run it in a
    worker thread: the query embedding goes through the bridge)."""
    if system.retriever.count() == 0:
        return []
    results = system.retriever.search(query, k)
    ids = (results.get("ids") or [[]])[0][:k]
    metadatas = (results.get("metadatas") or [[]])[0]
    notes: list[Note] = []
    for i, _doc_id in enumerate(ids):
        if i >= len(metadatas):
            break
        metadata = metadatas[i]
        notes.append(note_from_metadata(metadata))
        links = metadata.get("links") or []
        taken = 0
        for link_id in links if isinstance(links, list) else ():
            neighbour = system.read(str(link_id))
            if neighbour is not None and taken < k:
                notes.append(note_from_object(neighbour, linked=True))
                taken += 1
    return notes


def _note_line(note: Note) -> str:
    parts = []
    if note.context:
        parts.append(f"context: {note.context}")
    if note.keywords:
        parts.append(f"keywords: {', '.join(note.keywords)}")
    if note.tags:
        parts.append(f"tags: {', '.join(note.tags)}")
    detail = f" ({'; '.join(parts)})" if parts else ""
    stamp = f"[{note.timestamp}] " if note.timestamp else ""
    return f"{stamp}{note.content}{detail}"


def render_notes(notes: Sequence[Note]) -> str:
    """The answer context: one line per note, in retrieval order."""
    return "\n".join(_note_line(n) for n in notes)


def note_tokens_text(notes: Sequence[Note]) -> str:
    """The whole store rendered the same way (its size in tokens is the conversation's memory size)."""
    return render_notes(sorted(notes, key=lambda n: n.id))
