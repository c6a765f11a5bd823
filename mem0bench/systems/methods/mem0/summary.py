"""The conversation summary S: a deterministic refresh schedule, run off the critical path.

The paper refreshes S periodically and asynchronously but gives no interval. Ours is deterministic: what a
pair sees depends on its index only, never on how fast a refresh ran. With E = ``every`` and L = ``lag``:

* S_0 = ''. When pair p = k*E (k >= 1) is reached, refresh k starts in the background from S_{k-1} and the
  turns of pairs [(k-1)*E, k*E), so S_k covers pairs [0, k*E).
* Refresh k becomes visible L pairs after it starts: pair p is given S_k with k = max((p - L) // E, 0),
  awaiting that refresh only if it has not finished yet (the pairs in between are its time budget).
* A refresh no pair will ever see is not started. A failed refresh keeps the previous summary.

Pair p's extraction prompt also shows the previous m messages, i.e. pairs [p - m/2, p). The pairs covered by
neither S nor that window are at most E + L - 1 - m/2 (reached just before the next refresh shows up), so
E + L <= m/2 + 1 leaves no gap: the defaults E = 5, L = 1 with m = 10 do. docs/design.md has a worked
example.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from mem0bench.data.model import Session, Turn
from mem0bench.prompts.summary import build_summary_messages

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient

__all__ = ["PairLines", "Refresh", "SummarySchedule", "refresh_summary", "uncovered_pairs"]

Refresh = Callable[[str, list[str], int], Coroutine[Any, Any, str]]
"""refresh(previous summary, rendered lines of the period, pair index that started it) -> new summary."""


def visible_refresh(p: int, every: int, lag: int) -> int:
    """k of the summary S_k that pair p is given (S_k covers pairs [0, k*every))."""
    return max((p - lag) // every, 0)


def uncovered_pairs(p: int, every: int, lag: int, m: int) -> int:
    """How many pairs before p are in neither pair p's summary nor its window of the previous m messages."""
    covered = visible_refresh(p, every, lag) * every
    window_start = max(p - m // 2, 0)
    return max(window_start - covered, 0)


class PairLines(Sequence[list[str]]):
    """`lines[p]`: pair p's turns rendered '[date] speaker: text', made when asked. The schedule reads one
    period's pairs per refresh; rendering the whole stream up front would hold the conversation's text
    once more per stream (a 10M-token conversation: ~40 MB a stream) for the whole ingestion."""

    def __init__(
        self, pairs: Sequence[tuple[int, tuple[Turn, ...]]], sessions: Mapping[int, Session]
    ) -> None:
        self._pairs = pairs
        self._sessions = sessions

    def _render(self, pair: tuple[int, tuple[Turn, ...]]) -> list[str]:
        date = self._sessions[pair[0]].date_text
        return [f"[{date}] {t.speaker}: {t.text}" for t in pair[1]]

    def __len__(self) -> int:
        return len(self._pairs)

    @overload
    def __getitem__(self, index: int) -> list[str]: ...
    @overload
    def __getitem__(self, index: slice) -> list[list[str]]: ...
    def __getitem__(self, index: int | slice) -> list[str] | list[list[str]]:
        if isinstance(index, slice):
            return [self._render(pair) for pair in self._pairs[index]]
        return self._render(self._pairs[index])


class SummarySchedule:
    """Which summary each pair of a stream sees, and when the refreshes start."""

    def __init__(
        self,
        every: int,
        lag: int,
        pair_lines: Sequence[list[str]],
        refresh: Refresh,
        summaries: dict[int, str],
    ) -> None:
        """`pair_lines[p]` are pair p's turns rendered with their session date; `summaries` (S_k by k,
        holding S_0) is filled in as refreshes finish."""
        if every < 1 or lag < 1:
            raise ValueError(f"summary every and lag must be >= 1, got {every} and {lag}")
        self.every = every
        self.lag = lag
        self.pair_lines = pair_lines
        self.refresh = refresh
        self.summaries = summaries
        self._tasks: dict[int, asyncio.Task[str]] = {}

    async def summary_for(self, p: int) -> str:
        """Start the refresh due at pair p, if any pair will see it; then the summary pair p is given."""
        self.start(p)
        return await self.visible(p)

    def start(self, p: int) -> None:
        """Start the refresh due when pair p is reached, if any pair will see it. Called for every pair in
        order (refresh k reads S_{k-1}, so the refreshes form their own chain in message order, whether
        the pairs' extractions run ahead or not)."""
        every = self.every
        if p > 0 and p % every == 0:
            k = p // every
            # Refresh k is first seen by pair k * every + lag: skip it if no such pair exists.
            if k * every + self.lag < len(self.pair_lines):
                self._tasks[k] = asyncio.create_task(self._run(k, p))

    async def visible(self, p: int) -> str:
        """The summary pair p is given (`start` has been called for every pair up to p)."""
        return await self._summary(visible_refresh(p, self.every, self.lag))

    async def _run(self, k: int, p: int) -> str:
        # Chained on S_{k-1}: with a lag longer than the period, refresh k may start before k-1 is done.
        previous = await self._summary(k - 1)
        window = [line for lines in self.pair_lines[(k - 1) * self.every : k * self.every] for line in lines]
        return await self.refresh(previous, window, p)

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
