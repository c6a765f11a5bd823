"""Fact extraction (Mem0, extraction phase): candidate facts about the store's speaker from one message pair.

The prompt carries the conversation summary S, the previous m messages with their session dates, the new
pair and the new pair's session date. The session date is essential: without it the model resolves
"yesterday" against its own notion of today.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from mem0bench.data.model import Turn
from mem0bench.llm.structured import parse_reply, spec_from_model
from mem0bench.llm.types import Message


class ExtractedFacts(BaseModel):
    """The extraction reply: the schema sent and the validation of what came back."""

    facts: list[str] = Field(
        default_factory=list,
        description="Self-contained facts, one short sentence each; empty if there are none.",
    )

    @field_validator("facts", mode="before")
    @classmethod
    def _lenient(cls, value: Any) -> Any:
        # A missing or empty field means no facts; non-string items are read as their text.
        if not value:
            return []
        return [str(item) for item in value] if isinstance(value, list) else value


EXTRACTION_SPEC = spec_from_model(
    "record_facts", "Record the candidate facts found in the new messages.", ExtractedFacts, mode=None
)

_SYSTEM_ONE = """You maintain the long-term memory of {user}. {user} is the "user" in this conversation; \
{other} is the "assistant".

Read the NEW MESSAGES and write down the facts worth remembering about {user}: their life, people, \
plans, preferences, opinions, activities, possessions and events, including what {other} tells us \
that concerns {user}. Use the summary and the earlier messages only to understand the new messages; \
do not repeat facts that come only from them.

Rules for each fact:
- One short sentence that stands on its own: name people instead of using pronouns ("{user}", not \
"I" or "the user"), and keep every name exactly as written.
- Dates: the new messages were sent on {date}. Turn every relative time ("yesterday", "last week", \
"next month", "two years ago") into an absolute date or period computed from that date, e.g. \
"the week before 8 May 2023". Never use today's date.
- Keep concrete details (numbers, places, titles, names of pets, books, events).
- Skip greetings, small talk and anything with no lasting value.

Call record_facts with the list (an empty list if nothing is worth remembering)."""

_SYSTEM_SHARED = """You maintain the long-term memory of a conversation between {user} and {other}.

Read the NEW MESSAGES and write down the facts worth remembering about either participant: their \
life, people, plans, preferences, opinions, activities, possessions and events. Use the summary and \
the earlier messages only to understand the new messages; do not repeat facts that come only from them.

Rules for each fact:
- One short sentence that stands on its own: name who it is about ("{user}" or "{other}"), never "I" \
or "the user", and keep every name exactly as written.
- Dates: the new messages were sent on {date}. Turn every relative time ("yesterday", "last week", \
"next month", "two years ago") into an absolute date or period computed from that date, e.g. \
"the week before 8 May 2023". Never use today's date.
- Keep concrete details (numbers, places, titles, names of pets, books, events).
- Skip greetings, small talk and anything with no lasting value.

Call record_facts with the list (an empty list if nothing is worth remembering)."""


def role_of(turn: Turn, user: str, shared: bool) -> str:
    """'user' for the store's speaker, 'assistant' for the other one (in a shared store: both 'user')."""
    return "user" if shared or turn.speaker == user else "assistant"


def render_turn(turn: Turn, date: str, user: str, shared: bool = False) -> str:
    return f"[{date}] {role_of(turn, user, shared)} ({turn.speaker}): {turn.text}"


def build_extraction_messages(
    *,
    user: str,
    other: str,
    summary: str,
    previous: Sequence[Turn],
    previous_dates: Sequence[str],
    pair: Sequence[Turn],
    session_date: str,
    shared: bool = False,
) -> list[Message]:
    """The extraction prompt for one new message pair (turns of `user` are the 'user' role)."""
    system = (_SYSTEM_SHARED if shared else _SYSTEM_ONE).format(user=user, other=other, date=session_date)
    earlier = "\n".join(render_turn(t, d, user, shared) for t, d in zip(previous, previous_dates)) or "(none)"
    new = "\n".join(render_turn(t, session_date, user, shared) for t in pair)
    body = (
        f"CONVERSATION SUMMARY SO FAR:\n{summary.strip() or '(none yet)'}\n\n"
        f"EARLIER MESSAGES (context only):\n{earlier}\n\n"
        f"NEW MESSAGES (sent on {session_date}):\n{new}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": body}]


def parse_facts(data: Any) -> list[str]:
    """The non-empty, de-duplicated facts of a reply, in order; ReplyShapeError when it does not fit."""
    seen: set[str] = set()
    facts: list[str] = []
    for raw in parse_reply(ExtractedFacts, data).facts:
        fact = " ".join(raw.split())
        if fact and fact.lower() not in seen:
            seen.add(fact.lower())
            facts.append(fact)
    return facts
