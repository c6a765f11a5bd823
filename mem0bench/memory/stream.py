"""One ingestion stream: a conversation seen from one speaker, cut into message pairs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from mem0bench.data.model import Conversation, Turn


@dataclass(frozen=True)
class PairContext:
    """Everything the extraction steps see for one new message pair (m_{t-1}, m_t)."""

    sample_id: str
    speaker: str
    """Whose store this is: their turns are the 'user' messages, the other speaker's the 'assistant's."""
    other: str
    index: int
    """Position of the pair in the stream (0-based); drives the deterministic summary schedule."""
    session_index: int
    session_date: datetime
    session_date_text: str
    pair: tuple[Turn, ...]
    """One or two turns (a session with an odd number of turns ends on a single turn)."""
    previous: tuple[Turn, ...]
    """Up to m turns before the pair, oldest first (they may come from earlier sessions)."""
    previous_dates: tuple[str, ...]
    """The session date text of each turn in `previous`."""
    summary: str
    """The conversation summary S available to this pair ('' before the first refresh)."""


def message_pairs(conversation: Conversation) -> list[tuple[int, tuple[Turn, ...]]]:
    """Cut each session into consecutive pairs of turns: [(session_index, (t0, t1)), ...].

    Pairs never cross a session boundary, so every pair has exactly one session date.
    """
    pairs: list[tuple[int, tuple[Turn, ...]]] = []
    for session in conversation.sessions:
        turns = session.turns
        for start in range(0, len(turns), 2):
            pairs.append((session.index, tuple(turns[start : start + 2])))
    return pairs
