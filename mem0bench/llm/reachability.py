"""Is the server still there? A watch over consecutive connection failures and timeouts.

Each call already retries with backoff, and a call that gives up is recorded and the run goes on. When
the server itself is gone, that turns into hours of silent retries, item after item. The watch sees every
attempt: a reply of any kind (even a 429 or a 5xx: something answered) ends a failure streak; a streak of
connection failures and timeouts that lasts longer than `llm.unreachable_after_s` marks the server down.
From then on every call raises `ServerUnreachable` at once, so every stage stops, and the run ends with
one line naming the server and the last error. While a streak lasts, a warning line says since when.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TextIO

__all__ = ["ReachabilityWatch", "ServerDown", "ServerUnreachable"]


@dataclass(frozen=True)
class ServerDown:
    """Why the server was declared unreachable."""

    base_url: str
    since: datetime
    """Wall-clock time of the first failure of the streak (UTC)."""
    seconds: float
    """How long the streak had lasted when the server was declared down."""
    last_error: str

    def describe(self) -> str:
        return (
            f"the server at {self.base_url} has been unreachable since {self.since:%H:%M:%S} UTC "
            f"({self.seconds:.0f} s of failed calls); last error: {self.last_error}"
        )


class ServerUnreachable(Exception):
    """Calls to the server have failed to connect or timed out for longer than `llm.unreachable_after_s`.

    Deliberately not an `LLMCallError`: the stages record those as failed items and go on; this one must
    stop the whole run."""

    def __init__(self, down: ServerDown):
        super().__init__(down.describe())
        self.down = down


class ReachabilityWatch:
    """Tracks the current streak of connection failures / timeouts across all calls of one client.

    Args:
        base_url: named in the messages.
        window_s: a streak longer than this marks the server down.
        warn_every_s: while a streak lasts, a warning line at most this often (the first one as soon as
            the streak is older than a few seconds, or half the window when that is shorter).
    """

    def __init__(
        self,
        base_url: str,
        window_s: float,
        *,
        warn_every_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        out: TextIO | None = None,
    ) -> None:
        self.base_url = base_url
        self.window_s = window_s
        self.warn_every_s = warn_every_s
        self._clock = clock
        self._out = out
        self._started: float | None = None  # monotonic time of the streak's first failure
        self._started_wall: datetime | None = None
        self._last_error = ""
        self._last_warning: float | None = None
        self.down: ServerDown | None = None
        self._down_event: asyncio.Event | None = None

    @property
    def failing(self) -> bool:
        """A streak of failures is going on."""
        return self._started is not None

    def reply(self) -> None:
        """The server answered something: the streak (if any) is over."""
        if self._started is not None and self.down is None:
            if self._last_warning is not None:
                self._say(f"calls to {self.base_url} are answered again")
            self._started = self._started_wall = self._last_warning = None

    def failed(self, message: str) -> None:
        """A connection failure or a timeout; may declare the server down."""
        now = self._clock()
        if self._started is None:
            self._started = now
            self._started_wall = datetime.now(UTC)
        self._last_error = message
        age = now - self._started
        if self.down is None and age >= self.window_s:
            assert self._started_wall is not None
            self.down = ServerDown(self.base_url, self._started_wall, age, message)
            if self._down_event is not None:
                self._down_event.set()
            return
        first_after = min(5.0, self.window_s / 2)
        due = self._last_warning is None and age >= first_after
        due = due or (self._last_warning is not None and now - self._last_warning >= self.warn_every_s)
        if due and self.down is None:
            self._last_warning = now
            assert self._started_wall is not None
            self._say(
                f"calls to {self.base_url} have been failing since {self._started_wall:%H:%M:%S} UTC "
                f"({age:.0f} s; last error: {message}); the run stops if this goes on for "
                f"{self.window_s:g} s (llm.unreachable_after_s)"
            )

    def check(self) -> None:
        """Raise `ServerUnreachable` once the server has been declared down."""
        if self.down is not None:
            raise ServerUnreachable(self.down)

    async def sleep(self, delay: float) -> None:
        """A backoff pause that ends early when the server is declared down meanwhile, and that never
        sleeps past the end of the window (so the attempt that decides comes on time)."""
        if self._started is not None:
            age = self._clock() - self._started
            delay = min(delay, max(self.window_s - age, 0.0) + 0.01)
            first_warning = min(5.0, self.window_s / 2)
            if self._last_warning is None and age < first_warning:
                # The attempt after this pause comes when the first warning is due, so a user waiting on
                # a dead server always reads it before the stop (a long backoff would skip past it).
                delay = min(delay, first_warning - age + 0.01)
        if delay <= 0:
            return
        if self._down_event is None:
            self._down_event = asyncio.Event()
            if self.down is not None:
                self._down_event.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._down_event.wait(), timeout=delay)

    def _say(self, text: str) -> None:
        print(f"warning: {text}", file=self._out or sys.stderr, flush=True)
