"""Saved notes: one dated note about one speaker, their rendering, and the token cap.

The answer context lists each speaker's notes under a header, oldest first, each as
'- [<session date>] <note>'. When the rendering is over the cap, the oldest notes (of both speakers, by
session, then speaker order, then the order they were written in) are dropped until it fits, and the
number dropped is counted: ChatGPT shows its saved memories whole, and its memory fills up rather than
ranking, so nothing here ranks notes by the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mem0bench.common.text import one_line
from mem0bench.tokens import count_tokens

__all__ = ["CappedNotes", "Note", "cap_notes", "newest_within", "render_memories", "render_notes"]


@dataclass(frozen=True)
class Note:
    """One saved note: about `speaker`, written after session `session` (dated `date`)."""

    speaker: str
    session: int
    date: str
    """The session's date as LOCOMO writes it (e.g. '1:56 pm on 8 May, 2023')."""
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"speaker": self.speaker, "session": self.session, "date": self.date, "text": self.text}

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Note:
        return cls(str(row["speaker"]), int(row["session"]), str(row["date"]), str(row["text"]))


def _line(note: Note) -> str:
    return f"- [{note.date}] {one_line(note.text)}"


def render_notes(notes: Sequence[Note], speakers: Sequence[str]) -> str:
    """Per speaker (in `speakers` order) a header, then that speaker's notes in the given order."""
    blocks = []
    for speaker in speakers:
        lines = [f"Notes about {speaker}:"]
        lines += [_line(n) for n in notes if n.speaker == speaker] or ["(no notes)"]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_memories(notes: Sequence[Note]) -> str:
    """The reference form: every entry as the model wrote it, one list, no headers and no added dates."""
    return "\n".join(f"- {one_line(n.text)}" for n in notes)


@lru_cache(maxsize=65536)
def _line_tokens(line: str) -> int:
    return count_tokens(line)


def newest_within(notes: Sequence[Note], speakers: Sequence[str], max_tokens: int | None) -> tuple[Note, ...]:
    """`cap_notes(...).kept`, without rendering when the notes clearly fit: each line's tokens (counted
    once), its newline and the headers, with a margin for merges across lines, stay under the cap."""
    if not max_tokens:
        return tuple(notes)
    bound = sum(_line_tokens(_line(n)) + 1 for n in notes)
    bound += sum(_line_tokens(f"Notes about {s}:\n(no notes)") + 2 for s in speakers)
    if bound + 16 <= max_tokens:
        return tuple(notes)
    return cap_notes(notes, speakers, max_tokens).kept


@dataclass(frozen=True)
class CappedNotes:
    """What goes into the answer context: the notes kept under the cap, rendered, and what was dropped."""

    kept: tuple[Note, ...]
    dropped: int
    text: str
    tokens: int


def cap_notes(notes: Sequence[Note], speakers: Sequence[str], max_tokens: int | None) -> CappedNotes:
    """The rendering of `notes` (oldest first) within `max_tokens` cl100k tokens, oldest dropped first.

    `max_tokens` None or 0 means no cap. The fewest notes are dropped (a binary search over how many of
    the oldest go: the rendering only shrinks as notes go)."""
    ordered = tuple(notes)

    def rendered(k: int) -> tuple[str, int]:
        text = render_notes(ordered[k:], speakers)
        return text, count_tokens(text)

    text, tokens = rendered(0)
    if not max_tokens or tokens <= max_tokens:
        return CappedNotes(ordered, 0, text, tokens)
    lo, hi = 1, len(ordered)  # the answer lies in [lo, hi]: dropping every note always "fits" by definition
    while lo < hi:
        mid = (lo + hi) // 2
        if rendered(mid)[1] <= max_tokens:
            hi = mid
        else:
            lo = mid + 1
    text, tokens = rendered(lo)
    return CappedNotes(ordered[lo:], lo, text, tokens)
