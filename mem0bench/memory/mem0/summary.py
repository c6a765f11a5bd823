"""The conversation summary S: a deterministic refresh schedule, run off the critical path.

The paper refreshes S periodically and asynchronously but gives no interval. Ours is deterministic and lagged
one period, so timing never changes what a pair sees:

* S_0 = ''. When pair p with p % every == 0 and p > 0 is reached, refresh k = p // every starts in the
  background from S_{k-1} and the turns of pairs [(k-1)*every, k*every).
* Pair p is given S_{max(p // every - 1, 0)}, awaiting that refresh only if it has not finished.
* A refresh no pair will ever see is not started. A failed refresh keeps the previous summary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from mem0bench.prompts.summary import build_summary_messages

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient

__all__ = ["Refresh", "SummarySchedule", "refresh_summary"]

Refresh = Callable[[str, list[str], int], Coroutine[Any, Any, str]]
"""refresh(previous summary, rendered lines of the period, pair index that started it) -> new summary."""


class SummarySchedule:
    """Which summary each pair of a stream sees, and when the refreshes start."""

    def __init__(
        self, every: int, pair_lines: Sequence[list[str]], refresh: Refresh, summaries: dict[int, str]
    ) -> None:
        """`pair_lines[p]` are pair p's turns rendered with their session date; `summaries` (S_k by k,
        holding S_0) is filled in as refreshes finish."""
        self.every = every
        self.pair_lines = pair_lines
        self.refresh = refresh
        self.summaries = summaries
        self._tasks: dict[int, asyncio.Task[str]] = {}

    async def summary_for(self, p: int) -> str:
        """Start the refresh due at pair p, if any pair will see it; then the summary pair p is given."""
        every = self.every
        if p > 0 and p % every == 0:
            k = p // every
            # Refresh k is first seen by pair (k + 1) * every: skip it if no such pair exists.
            if (k + 1) * every < len(self.pair_lines):
                window = [line for lines in self.pair_lines[(k - 1) * every : k * every] for line in lines]
                previous = await self._summary(k - 1)
                self._tasks[k] = asyncio.create_task(self.refresh(previous, window, p))
        return await self._summary(max(p // every - 1, 0))

    async def _summary(self, k: int) -> str:
        if k not in self.summaries:
            self.summaries[k] = await self._tasks[k]
        return self.summaries[k]

    def cancel(self) -> None:
        """Stop refreshes still running (the stream ended or failed)."""
        for task in self._tasks.values():
            task.cancel()


async def refresh_summary(
    client: LLMClient, speakers: tuple[str, str], previous: str, lines: list[str]
) -> str:
    """S_k from S_{k-1} and the lines of period k (an empty reply keeps S_{k-1}); raises LLMCallError."""
    messages = build_summary_messages(speakers=speakers, previous_summary=previous, lines=lines)
    reply = await client.chat(messages, stage="ingest")
    return reply.text.strip() or previous
