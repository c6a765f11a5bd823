"""Fact extraction (Mem0, extraction phase): candidate facts about the store's speaker from one message pair.

Two switches change what is asked (a per-speaker stream; a shared stream is about both people):

* `source` (`method.extraction_source`): ``both`` (our default) takes facts about the store's owner from
  either speaker's messages (what the other person tells us about them included); ``owner`` (the paper's
  harness) takes facts only from the owner's own messages, the other speaker's turns being context.
* `style` (`method.memory_style`): ``short`` (our default), one short sentence a fact; ``rich`` (the paper's
  harness), a complete statement that carries its own context (who, what, when, where, why), so that it
  reads right when it is retrieved alone.

The prompt carries the conversation summary S, the previous m messages with their session dates, the new
pair and the new pair's session date. The session date is essential: without it the model resolves
"yesterday" against its own notion of today.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from pydantic import Field, field_validator

from mem0bench.data.model import Turn
from mem0bench.llm.structured import ReplyModel, parse_reply, spec_from_model, texts_or_empty
from mem0bench.llm.types import Message, StructuredSpec
from mem0bench.prompts.files import PromptFile


class ExtractedFacts(ReplyModel):
    """The extraction reply: the schema sent and the validation of what came back."""

    facts: list[str] = Field(
        default_factory=list,
        description="Self-contained facts, one short sentence each; empty if there are none.",
    )

    # A missing or empty field means no facts; non-string items are read as their text.
    _lenient = field_validator("facts", mode="before")(texts_or_empty)


class RichFacts(ExtractedFacts):
    """The extraction reply in the rich style: the same validation, its own field description."""

    facts: list[str] = Field(
        default_factory=list,
        description="Complete, self-contained statements, each with its context; empty if there are none.",
    )


ExtractionSource = Literal["both", "owner"]
EXTRACTION_SOURCES: tuple[ExtractionSource, ...] = get_args(ExtractionSource)
MemoryStyle = Literal["short", "rich"]
MEMORY_STYLES: tuple[MemoryStyle, ...] = get_args(MemoryStyle)

EXTRACTION_SPEC = spec_from_model(
    "record_facts", "Record the candidate facts found in the new messages.", ExtractedFacts, mode=None
)
RICH_EXTRACTION_SPEC = spec_from_model(
    "record_facts", "Record the candidate facts found in the new messages.", RichFacts, mode=None
)


def extraction_spec(style: MemoryStyle = "short") -> StructuredSpec:
    """The extraction reply's spec in the memory style `style`."""
    return RICH_EXTRACTION_SPEC if style == "rich" else EXTRACTION_SPEC


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

_WHAT_BOTH = """Read the NEW MESSAGES and write down the facts worth remembering about {user}: their life, people, \
plans, preferences, opinions, activities, possessions and events, including what {other} tells us \
that concerns {user}. Use the summary and the earlier messages only to understand the new messages; \
do not repeat facts that come only from them."""

_WHAT_OWNER = """Read the NEW MESSAGES and write down the facts worth remembering about {user} that {user}'s own \
messages (the "user" turns) state: their life, people, plans, preferences, opinions, activities, \
possessions and events. {other}'s messages are context only: use them, the summary and the earlier \
messages to understand what {user} says, but never take a fact from them alone."""

_SHORT_RULE = """- One short sentence that stands on its own: name people instead of using pronouns ("{user}", not \
"I" or "the user"), and keep every name exactly as written."""

_RICH_RULE = """- A complete statement that stands on its own when read alone: who, what, and where known when, \
where and why, with the details that give it meaning, in one or two sentences. Name people instead \
of using pronouns ("{user}", not "I" or "the user"), and keep every name exactly as written."""

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


_SHARED_SHORT_RULE = """- One short sentence that stands on its own: name who it is about ("{user}" or "{other}"), never "I" \
or "the user", and keep every name exactly as written."""


def _system(shared: bool, source: ExtractionSource, style: MemoryStyle) -> str:
    """The system prompt's template; the defaults give the wording every earlier run sent, unchanged."""
    if shared:
        template = _SYSTEM_SHARED
    else:
        template = _SYSTEM_ONE
        if source == "owner":
            template = template.replace(_WHAT_BOTH, _WHAT_OWNER)
    if style == "rich":
        template = template.replace(_SHORT_RULE, _RICH_RULE).replace(_SHARED_SHORT_RULE, _RICH_RULE)
    return template


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
    source: ExtractionSource = "both",
    style: MemoryStyle = "short",
    template: PromptFile | None = None,
) -> list[Message]:
    """The extraction prompt for one new message pair (turns of `user` are the 'user' role); `template`
    (method.extraction_prompt_file) replaces our wording, `source` and `style` included."""
    earlier = "\n".join(render_turn(t, d, user, shared) for t, d in zip(previous, previous_dates)) or "(none)"
    new = "\n".join(render_turn(t, session_date, user, shared) for t in pair)
    if template is not None:
        return template.render(
            user=user, other=other, date=session_date, summary=summary.strip(), earlier=earlier, new=new
        )
    system = _system(shared, source, style).format(user=user, other=other, date=session_date)
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
