"""Conversation summary S (Mem0's asynchronous summary generator): refresh S with new messages."""

from __future__ import annotations

from collections.abc import Sequence

from mem0bench.llm.types import Message

_SYSTEM = """You keep a running summary of a long conversation between {a} and {b}, used as \
background when new messages are read. Rewrite the summary so it also covers the NEW MESSAGES.

- Keep it concise (at most about 250 words): main topics, important events, people, plans and \
preferences of both participants.
- Keep dates: attach each event to its absolute date, computing relative times ("last week") from \
the date on the message that mentions them.
- Keep names as written. Drop small talk. Output only the summary text."""


def build_summary_messages(
    *, speakers: tuple[str, str], previous_summary: str, lines: Sequence[str]
) -> list[Message]:
    """`lines` are the new messages, already rendered with their session dates."""
    body = (
        f"CURRENT SUMMARY:\n{previous_summary.strip() or '(empty: this is the start of the conversation)'}\n\n"
        "NEW MESSAGES:\n" + "\n".join(lines)
    )
    return [
        {"role": "system", "content": _SYSTEM.format(a=speakers[0], b=speakers[1])},
        {"role": "user", "content": body},
    ]
