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

from pydantic import Field, field_validator

from mem0bench.data.model import Turn
from mem0bench.llm.structured import ReplyModel, parse_reply, spec_from_model, texts_or_empty
from mem0bench.llm.types import Message

__all__ = [
    "MEMORIES_SPEC",
    "NOTES_SPEC",
    "SavedNotes",
    "SessionMemories",
    "build_memory_messages",
    "build_notes_messages",
    "parse_memories",
    "parse_notes",
    "session_lines",
]


class SavedNotes(ReplyModel):
    """The note-writing reply: the schema sent and the validation of what came back. A missing or empty
    field means nothing new; non-string items are read as their text."""

    notes: list[str] = Field(
        default_factory=list,
        description="New notes to save, one short third-person sentence each; empty if nothing is new.",
    )

    _lenient = field_validator("notes", mode="before")(texts_or_empty)


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
    return _distinct(parse_reply(SavedNotes, data).notes)


def _distinct(raw_items: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    items: list[str] = []
    for raw in raw_items:
        item = " ".join(raw.split())
        if item and item.lower() not in seen:
            seen.add(item.lower())
            items.append(item)
    return items


# ------------------------------------------------------------------ the reference form (the paper's method)
#
# The Mem0 paper's OpenAI baseline pasted each whole session, both speakers as '(date) Speaker: text' lines,
# into ChatGPT with one fixed request to pull out what matters and save memory entries for each user with
# their timestamp; the memories ChatGPT saved, one list per conversation, were then copied out whole. This
# request is our wording of that instruction. It sets no date rule and no limit: whatever dates the entries
# carry are the model's own. The entries saved so far are shown as ChatGPT shows its saved memories in a new
# chat, so the model can skip what it already has.


class SessionMemories(ReplyModel):
    """The memory-writing reply: new entries, each as the model wrote it (its own timestamp included)."""

    memories: list[str] = Field(
        default_factory=list,
        description="New memory entries from this conversation, each with its timestamp; empty if none.",
    )

    _lenient = field_validator("memories", mode="before")(texts_or_empty)


MEMORIES_SPEC = spec_from_model(
    "save_memories", "Save memory entries from this conversation.", SessionMemories, mode=None
)

_MEMORY_REQUEST = """You have a memory feature: entries you save are shown to you in every later chat.

Read the conversation below. Extract the relevant information it holds and write memory entries for \
each user in it, with the timestamp. Call save_memories with the new entries."""


def session_lines(session_date: str, turns: Sequence[Turn]) -> list[str]:
    """A whole session, both speakers, as '(date) Speaker: text' lines."""
    return [f"({session_date}) {render_chat_turn(t)}" for t in turns]


def build_memory_messages(*, lines: Sequence[str], saved: Sequence[str]) -> list[Message]:
    """The fixed request for one session: the memories saved so far, then the session's lines."""
    shown = "\n".join(f"- {text}" for text in saved) or "(none yet)"
    chat = "\n".join(lines) or "(empty)"
    body = f"SAVED MEMORIES:\n{shown}\n\nCONVERSATION:\n{chat}"
    return [{"role": "system", "content": _MEMORY_REQUEST}, {"role": "user", "content": body}]


def parse_memories(data: Any) -> list[str]:
    """The non-empty, de-duplicated entries of a reply, in order; ReplyShapeError when it does not fit."""
    return _distinct(parse_reply(SessionMemories, data).memories)
