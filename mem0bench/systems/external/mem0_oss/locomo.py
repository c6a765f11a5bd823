"""LOCOMO as mem0's evaluation harness fed it (evaluation/src/memzero/add.py).

Each conversation is added twice, once per speaker, under that speaker's user id: session by session, the
session's turns become chat messages, `"<speaker>: <text>"`, the speaker's own turns with role `user` and
the other's with role `assistant`; they are added `batch_size` messages at a time (the harness's 2), in
order, and every add carries the session's date as `metadata={"timestamp": <LOCOMO's date string>}`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from mem0bench.data.model import Conversation

__all__ = ["Batch", "speaker_batches"]


@dataclass(frozen=True)
class Batch:
    """One `add` call: up to batch_size consecutive messages of one session."""

    index: int
    """The batch's position in the speaker's stream (0-based)."""
    session_index: int
    session_date: datetime
    session_date_text: str
    """LOCOMO's session date string ('1:56 pm on 8 May, 2023'), stored as the memory's timestamp."""
    messages: tuple[dict[str, str], ...]
    dia_ids: tuple[str, ...]


def speaker_batches(conversation: Conversation, speaker: str, batch_size: int) -> list[Batch]:
    """The add calls of one speaker's stream, in order (sessions with no turns give none)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    batches: list[Batch] = []
    for session in conversation.sessions:
        turns = list(session.turns)
        for start in range(0, len(turns), batch_size):
            chunk = turns[start : start + batch_size]
            messages = tuple(
                {"role": "user" if t.speaker == speaker else "assistant", "content": f"{t.speaker}: {t.text}"}
                for t in chunk
            )
            batches.append(
                Batch(
                    index=len(batches),
                    session_index=session.index,
                    session_date=session.date_time,
                    session_date_text=session.date_text,
                    messages=messages,
                    dia_ids=tuple(t.dia_id for t in chunk),
                )
            )
    return batches
