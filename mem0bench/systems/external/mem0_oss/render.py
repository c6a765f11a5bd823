"""mem0's search results rendered as the answer context: one list per speaker, like our own Mem0.

A memory line is '- [<session date>] <memory>', the date being the LOCOMO session date passed as the
memory's `timestamp` metadata by the add that last wrote it (as mem0's harness rendered
'<timestamp>: <memory>'). A relation line is '- [<session date>] source -> relationship -> destination',
the date being that of the add that first created the relation (mem0's Kuzu store keeps only the
machine's clock, so the adapter keeps the session date beside it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from mem0bench.common.text import one_line

__all__ = ["RelationKey", "memory_dia_ids", "memory_line", "relation_line", "render_sections"]

RelationKey = tuple[str, str, str]
"""(source, relationship, destination) as mem0's graph names them."""


def memory_score(item: Mapping[str, Any]) -> float:
    """The item's similarity score, 0.0 when missing or not a finite number (it only orders memories)."""
    try:
        score = float(item.get("score") or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return score if math.isfinite(score) else 0.0


def memory_date(item: Mapping[str, Any]) -> str:
    """The session date mem0 kept for a memory (its `timestamp` metadata), else mem0's own clock."""
    metadata = item.get("metadata") or {}
    stamp = metadata.get("timestamp") if isinstance(metadata, Mapping) else None
    return str(stamp or item.get("updated_at") or item.get("created_at") or "unknown date")


def memory_line(item: Mapping[str, Any]) -> str:
    return f"- [{memory_date(item)}] {one_line(str(item.get('memory', '')))}"


def memory_dia_ids(item: Mapping[str, Any]) -> list[str]:
    """The dia_ids of the batch that last wrote the memory (kept in its metadata by the adapter)."""
    metadata = item.get("metadata") or {}
    ids = metadata.get("dia_ids") if isinstance(metadata, Mapping) else None
    return [str(i) for i in ids] if isinstance(ids, list) else []


def relation_line(relation: Mapping[str, Any], dates: Mapping[RelationKey, str]) -> str:
    key = relation_key(relation)
    date = dates.get(key)
    prefix = f"[{date}] " if date else ""
    return f"- {prefix}{key[0]} -> {key[1]} -> {key[2]}"


def relation_key(relation: Mapping[str, Any]) -> RelationKey:
    destination = relation.get("destination", relation.get("target", ""))
    return (str(relation.get("source", "")), str(relation.get("relationship", "")), str(destination))


def render_sections(
    speakers: Sequence[str],
    memories: Sequence[Sequence[Mapping[str, Any]]],
    relations: Sequence[Sequence[Mapping[str, Any]]] | None = None,
    dates: Sequence[Mapping[RelationKey, str]] | None = None,
) -> str:
    """'Memories of <speaker>:' blocks (and, with relations, 'Relations of <speaker>:' blocks after them)."""
    blocks = []
    for speaker, items in zip(speakers, memories, strict=True):
        lines = [f"Memories of {speaker}:"] + ([memory_line(m) for m in items] or ["(no memories)"])
        blocks.append("\n".join(lines))
    if relations is not None:
        known = dates if dates is not None else [{} for _ in speakers]
        for speaker, rels, when in zip(speakers, relations, known, strict=True):
            lines = [f"Relations of {speaker}:"] + (
                [relation_line(r, when) for r in rels] or ["(no relations)"]
            )
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
