"""Per-task timing of LLM calls, so that a stage can tell its own time from the network's and the queue's.

A stage wraps its work in `measure()`; every call made inside (in the same asyncio task or its children
created after entry) adds the seconds it waited for a concurrency slot or rate limit (`wait_s`), the
seconds it spent in HTTP requests (`network_s`), its token usage per stage (`usage`, cached calls
included: it is what the work needed, whether or not it was paid for again) and how many calls the cache
answered without a request (`cached_calls`: the scope's latency is then not a server's).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class CallTiming:
    wait_s: float = 0.0
    network_s: float = 0.0
    started: float = 0.0
    elapsed_s: float = 0.0
    usage: dict[str, list[int]] = field(default_factory=dict)
    """stage -> [calls, prompt_tokens, completion_tokens]."""
    cached_calls: int = 0
    """Calls served whole from the cache (no request made)."""
    parent: CallTiming | None = None
    """The enclosing measurement: calls count in every enclosing scope."""

    @property
    def latency_s(self) -> float:
        """Wall time minus queueing: what the user would see with the server to themselves."""
        return max(self.elapsed_s - self.wait_s, 0.0)

    @property
    def local_s(self) -> float:
        """Wall time spent outside queues and network calls: the harness's own work."""
        return max(self.elapsed_s - self.wait_s - self.network_s, 0.0)


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
    for t in _scopes():
        t.wait_s += seconds


def add_network(seconds: float) -> None:
    for t in _scopes():
        t.network_s += seconds


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
