"""The LLM client's concurrency slots, handed out by priority rather than by arrival.

Against a real API ingest, not the harness's CPU, decides how long a run takes: each speaker stream is a
chain of calls made one after another, so the run lasts as long as its longest stream's chain. A plain
semaphore serves waiters in arrival order, and a stream's next call then waits behind answer and judge
calls of conversations that finished early. Here a waiting call is served by its key instead:

* ingest calls on a stream's sequential chain first, those of the conversation with the most ingest work
  left (`ingest_priority`: the runner tells how many units are left; both speaker streams of a conversation
  are equally long);
* then ingest work a system runs ahead of its chain (`ingest_ahead`: Mem0's extraction and summaries under
  `method.lookahead`), in the same order, so it fills the slots the chains leave and never delays them;
* every other call (answers, judgements, the latency pass) after them;
* arrival order among equals, so nothing of the same rank is overtaken.

A free slot is taken at once whatever the key: the pool only orders the queue, it never holds a slot back,
and `llm.max_concurrency` (its size) stays the ceiling.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["PrioritySlots", "SlotKey", "current_key", "ingest_ahead", "ingest_priority"]

SlotKey = tuple[int, float]
"""(class, rank): lower is served first. Class 0: an ingest chain's calls, 1: ingest run ahead of its chain
(rank: minus the work left); 2: everything else."""

FILL: SlotKey = (2, 0.0)
"""The key of a call made outside any ingest: answers, judgements, the latency pass."""

_ingest: ContextVar[Callable[[], float] | None] = ContextVar("mem0bench_ingest_priority", default=None)
_ahead: ContextVar[bool] = ContextVar("mem0bench_ingest_ahead", default=False)


@contextmanager
def ingest_priority(remaining: Callable[[], float]) -> Iterator[None]:
    """Calls made in this block (and the tasks it starts) are ingest calls of work with `remaining()`
    units left, read when each call queues for a slot: more work left, served sooner."""
    token = _ingest.set(remaining)
    try:
        yield
    finally:
        _ingest.reset(token)


@contextmanager
def ingest_ahead() -> Iterator[None]:
    """Calls made in this block are ingest work run ahead of a chain: served after every chain's queued
    call, before answers and judgements."""
    token = _ahead.set(True)
    try:
        yield
    finally:
        _ahead.reset(token)


def current_key() -> SlotKey:
    """The key of a call made now, in this task."""
    remaining = _ingest.get()
    if remaining is None:
        return FILL
    return (1 if _ahead.get() else 0, -float(remaining()))


class PrioritySlots:
    """A counting semaphore of `size` slots whose waiters are served lowest key first, then in arrival
    order. `async with slots:` takes a slot with the caller's `current_key()`.

    One pool per event loop (its futures belong to the loop that first waits on it)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a slot pool needs at least one slot, not {size}")
        self.size = size
        self._free = size
        self._queue: list[tuple[SlotKey, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.waiting = 0
        """Calls queued for a slot now."""

    @property
    def in_use(self) -> int:
        return self.size - self._free

    async def acquire(self, key: SlotKey | None = None) -> None:
        """Take a slot, waiting behind every queued call of a lower key (or the same key, queued earlier)."""
        if self._free > 0 and not self.waiting:
            self._free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._queue, (current_key() if key is None else key, next(self._order), future))
        self.waiting += 1
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # the slot was handed over as we were cancelled: pass it on
            else:
                self.waiting -= 1  # still queued: its entry is skipped when it comes up
            raise

    def release(self) -> None:
        """Give a slot back: straight to the best waiter, if any."""
        while self._queue:
            _, _, future = heapq.heappop(self._queue)
            if not future.done():  # a cancelled waiter's future is done: skip it
                self.waiting -= 1
                future.set_result(None)
                return
        self._free = min(self._free + 1, self.size)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()
