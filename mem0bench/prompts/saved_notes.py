"""Saved notes (the ChatGPT-memory emulation): after one conversation session, short notes about one person.

ChatGPT's memory keeps "saved memories": short third-person facts about the user, each dated, shown to
the model in later chats. Its own policy for choosing them is not public; this prompt is our wording of
the idea, not OpenAI's. One call per session and person: the person is treated as the account's user, the
other speaker as the person they talk with. The person's notes so far are shown, so the model adds only
what is new. The reply is a JSON list of notes (`notes`), possibly empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from mem0bench.data.model import Turn
from mem0bench.llm.structured import parse_reply, spec_from_model
from mem0bench.llm.types import Message

__all__ = ["NOTES_SPEC", "SavedNotes", "build_notes_messages", "parse_notes"]


class SavedNotes(BaseModel):
    """The note-writing reply: the schema sent and the validation of what came back."""

    notes: list[str] = Field(
        default_factory=list,
        description="New notes to save, one short third-person sentence each; empty if nothing is new.",
    )

    @field_validator("notes", mode="before")
    @classmethod
    def _lenient(cls, value: Any) -> Any:
        # A missing or empty field means nothing new; non-string items are read as their text.
        if not value:
            return []
        return [str(item) for item in value] if isinstance(value, list) else value


NOTES_SPEC = spec_from_model(
    "save_notes", "Save the new notes about the person from this chat.", SavedNotes, mode=None
)

_SYSTEM = """You are an assistant with a memory feature. {person} uses you, and you keep a short list of \
saved notes about {person} that you will see at the start of every future chat.

Below is a chat between {person} and {other} that took place on {date}. Decide what, if anything, is \
worth saving about {person} for future chats: facts about their life, people, work, plans, \
preferences, opinions, activities, possessions and events, including what {other} says that concerns \
{person}.

Rules:
- Each note is one short sentence in the third person that names {person} (never "I" or "the user"); \
keep every name exactly as written.
- The chat took place on {date}: write relative times ("yesterday", "last week", "next month") as an \
absolute date or period computed from that date.
- Keep concrete details (names, places, numbers, titles).
- Save only what is new: do not repeat a note already saved. Skip greetings and small talk.
- Save at most {max_notes} notes; an empty list is fine when nothing is worth keeping.

Call save_notes with the new notes."""


def render_chat_turn(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}"


def build_notes_messages(
    *,
    person: str,
    other: str,
    session_date: str,
    turns: Sequence[Turn],
    saved: Sequence[tuple[str, str]],
    max_notes: int,
) -> list[Message]:
    """The prompt for one session and one person; `saved` are that person's notes so far as
    (date, text), oldest first."""
    system = _SYSTEM.format(person=person, other=other, date=session_date, max_notes=max_notes)
    shown = "\n".join(f"- [{date}] {text}" for date, text in saved) or "(none yet)"
    chat = "\n".join(render_chat_turn(t) for t in turns) or "(empty)"
    body = f"NOTES ALREADY SAVED ABOUT {person}:\n{shown}\n\nCHAT ON {session_date}:\n{chat}"
    return [{"role": "system", "content": system}, {"role": "user", "content": body}]


def parse_notes(data: Any) -> list[str]:
    """The non-empty, de-duplicated notes of a reply, in order; ReplyShapeError when it does not fit."""
    seen: set[str] = set()
    notes: list[str] = []
    for raw in parse_reply(SavedNotes, data).notes:
        note = " ".join(raw.split())
        if note and note.lower() not in seen:
            seen.add(note.lower())
            notes.append(note)
    return notes
