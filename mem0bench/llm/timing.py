"""Per-task timing of LLM calls, so that a stage can tell its own time from the network's and the queue's.

A stage wraps its work in `measure()`; every call made inside (in the same asyncio task or its children
created after entry) adds the interval it waited for a concurrency slot or rate limit (`add_wait`), the
interval it spent in an HTTP request (`add_network`), its token usage per stage (`usage`, cached calls
included: it is what the work needed, whether or not it was paid for again) and how many calls the cache
answered without a request (`cached_calls`: the scope's latency is then not a server's).

A scope's calls may overlap (a system that searches two stores at once, a reranker's 40 parallel
calls), so its time is split by intervals, not sums: `server_s` is the time at least one of its
requests was in flight; `local_s` the time none was in flight or waiting (the system's and our own
code); queueing (`queued_only_s`) is the time some call waited while none was in flight. Sums of
overlapping calls would exceed the wall time and read as a local part of 0.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


def _union_s(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one of `intervals` ((start, end) pairs)."""
    total = 0.0
    end = float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


@dataclass
class CallTiming:
    started: float = 0.0
    elapsed_s: float = 0.0
    usage: dict[str, list[int]] = field(default_factory=dict)
    """stage -> [calls, prompt_tokens, completion_tokens]."""
    cached_calls: int = 0
    """Calls served whole from the cache (no request made)."""
    parent: CallTiming | None = None
    """The enclosing measurement: calls count in every enclosing scope."""
    waits: list[tuple[float, float]] = field(default_factory=list)
    """(start, end) of every wait of a call made in the scope: a slot, a rate limit, a backoff."""
    requests: list[tuple[float, float]] = field(default_factory=list)
    """(start, end) of every HTTP request (or local model batch) made in the scope."""

    @property
    def wait_s(self) -> float:
        """Sum of the calls' waits (overlapping waits all count)."""
        return sum(end - start for start, end in self.waits)

    @property
    def network_s(self) -> float:
        """Sum of the calls' request times (overlapping requests all count; see `server_s`)."""
        return sum(end - start for start, end in self.requests)

    @property
    def server_s(self) -> float:
        """Time at least one request of this scope was in flight."""
        return _union_s(self.requests)

    @property
    def queued_only_s(self) -> float:
        """Time some call of this scope waited (a slot, a rate limit, a backoff) while none was in flight."""
        return _union_s(self.waits + self.requests) - self.server_s

    @property
    def latency_s(self) -> float:
        """Wall time minus queueing: what the user would see with the server to themselves. A wait while
        another of the scope's own requests is in flight is not subtracted: the scope is being served."""
        return max(self.elapsed_s - self.queued_only_s, 0.0)

    @property
    def local_s(self) -> float:
        """Wall time with no call of this scope waiting or in flight: the system's and the harness's own work."""
        return max(self.elapsed_s - _union_s(self.waits + self.requests), 0.0)


_current: ContextVar[CallTiming | None] = ContextVar("mem0bench_call_timing", default=None)


@contextmanager
def measure() -> Iterator[CallTiming]:
    timing = CallTiming(started=time.perf_counter(), parent=_current.get())
    token = _current.set(timing)
    try:
        yield timing
    finally:
        timing.elapsed_s = time.perf_counter() - timing.started
        _current.reset(token)


def _scopes() -> Iterator[CallTiming]:
    t = _current.get()
    while t is not None:
        yield t
        t = t.parent


def add_wait(seconds: float) -> None:
    """A wait of `seconds` that ended now."""
    if seconds <= 0:
        return
    end = time.perf_counter()
    for t in _scopes():
        t.waits.append((end - seconds, end))


def add_network(seconds: float) -> None:
    """A request of `seconds` that ended now."""
    end = time.perf_counter()
    for t in _scopes():
        t.requests.append((end - seconds, end))


def add_cached() -> None:
    """Count one call the cache answered without a request."""
    for t in _scopes():
        t.cached_calls += 1


def add_usage(stage: str, prompt_tokens: int, completion_tokens: int) -> None:
    for t in _scopes():
        entry = t.usage.setdefault(stage, [0, 0, 0])
        entry[0] += 1
        entry[1] += prompt_tokens
        entry[2] += completion_tokens
