"""LangMem's stored values as note text, and the notes context the answer model reads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Note", "memory_text", "render_notes"]


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


def render_notes(notes: Sequence[Note]) -> str:
    """One line per note, best first: '[date] text' (the date in square brackets where known)."""
    return "\n".join(f"[{n.date}] {n.text}" if n.date else n.text for n in notes)
