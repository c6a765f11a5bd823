"""LangMem's stored values as note text, and the notes context the answer model reads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Note", "memory_text", "render_notes", "render_sections"]


def memory_text(value: Any) -> str:
    """The text of a stored memory, whichever tool wrote it.

    The store manager writes `{"kind": "Memory", "content": {"content": "..."}}` (its default `Memory`
    schema); the agent's manage-memory tool writes `{"content": "..."}`. Anything else is shown as JSON.
    """
    content = value.get("content") if isinstance(value, dict) else value
    if isinstance(content, dict) and set(content) == {"content"}:
        content = content["content"]
    if isinstance(content, str):
        return " ".join(content.split())
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class Note:
    """One retrieved memory: its text, the session date of the message that last wrote it (None if
    unknown), its dia_id, and its search score."""

    text: str
    date: str | None
    dia_id: str | None
    score: float | None


def render_notes(notes: Sequence[Note], *, dates: bool = True) -> str:
    """One line per note, in the given order: '[date] text' (the date where known and `dates`), else the
    text as the library stored it."""
    return "\n".join(f"[{n.date}] {n.text}" if n.date and dates else n.text for n in notes)


def render_sections(sections: Sequence[tuple[str | None, Sequence[Note]]], *, dates: bool) -> str:
    """One block per namespace, 'Memories of <speaker>:' then its notes best first (no header for a
    shared namespace, `None`); an empty namespace has no block, so no memory at all is an empty text."""
    blocks = []
    for speaker, notes in sections:
        if not notes:
            continue
        body = render_notes(notes, dates=dates)
        blocks.append(f"Memories of {speaker}:\n{body}" if speaker else body)
    return "\n\n".join(blocks)
