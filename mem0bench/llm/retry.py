"""The one retry policy of the harness's HTTP calls: the LLM client's and the memory-service client's.

Owns which reply or failure is which `FailureKind` (`status_kind`, `classify`), which are worth another
attempt (the transient kinds), the backoff (the server's `Retry-After` / `retry-after-ms`, else exponential
with full jitter) and the loop (`call_with_retries`: concurrency slot, optional rate limiter, timing,
the reachability watch). The error body is read by `transport.error_message`.

Budgets: an answer of the server (a 429, a 5xx, an unreadable body) is retried up to `max_retries` times. A
connection failure or a timeout is retried for as long as that call's streak of them is shorter than the
unreachability window (`llm.unreachable_after_s`), and at least `max_retries` times: an outage shorter
than the window costs no call, and a longer one stops the run through the watch (`ServerUnreachable`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from mem0bench.llm import timing
from mem0bench.llm.reachability import ReachabilityWatch
from mem0bench.llm.transport import HTTPConnectError, HTTPFailure, HTTPStatusError, HTTPTimeout
from mem0bench.llm.types import TRANSIENT_KINDS, FailureKind

__all__ = [
    "MAX_RETRY_AFTER_S",
    "RetryPolicy",
    "Retryable",
    "backoff_delay",
    "call_with_retries",
    "classify",
    "parse_retry_after",
    "status_kind",
]

T = TypeVar("T")

MAX_RETRY_AFTER_S = 300.0
"""Cap on a server-requested delay, so a bogus Retry-After cannot stall a run for hours."""


def status_kind(status: int) -> FailureKind | None:
    """The failure kind of an HTTP status; None for a success (1xx-3xx)."""
    if status < 400:
        return None
    if status == 429:
        return "rate_limit"
    if status == 408:
        return "timeout"  # the server gave up waiting for our request: as a timeout of ours
    if status >= 500 or status in (409, 425):  # 409: a conflict a retry resolves; 425: too early
        return "server_error"
    return "bad_request"  # asking again cannot fix the request


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date); None if absent."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    import email.utils  # here: only an HTTP-date Retry-After needs it (7 ms of every run's start)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


class Retryable(Exception):
    """One failed attempt: its failure kind, whether another attempt may help, the server's requested
    delay, and whether the server answered (a reply of any status; not a connection failure or timeout)."""

    def __init__(
        self, kind: FailureKind, message: str, retry_after: float | None = None, *, answered: bool = True
    ):
        super().__init__(message)
        self.kind: FailureKind = kind
        self.message = message
        self.retry_after = retry_after
        self.retry = kind in TRANSIENT_KINDS
        self.answered = answered


def classify(exc: BaseException) -> Retryable:
    """A transport exception (or an unreadable body's `ValueError`) -> a failed attempt; re-raise others."""
    if isinstance(exc, HTTPTimeout):
        return Retryable("timeout", f"timeout: {exc}", answered=False)
    if isinstance(exc, HTTPConnectError):
        return Retryable("connection", f"connection error: {exc}", answered=False)
    if isinstance(exc, HTTPStatusError):
        kind = status_kind(exc.status_code) or "server_error"
        return Retryable(kind, f"HTTP {exc.status_code}: {exc.message}", parse_retry_after(exc.headers))
    if isinstance(exc, ValueError):
        # A 2xx whose body does not read (cut short by a proxy, not JSON): asking again usually helps.
        return Retryable("server_error", f"unreadable reply: {type(exc).__name__}: {exc}")
    raise exc


def backoff_delay(
    attempt: int, retry_after: float | None, base_s: float, max_s: float, rng: random.Random
) -> float:
    """The server's delay when it gave one (capped), else exponential backoff with full jitter."""
    if retry_after is not None:
        return min(retry_after, MAX_RETRY_AFTER_S)
    return rng.uniform(0.0, min(max_s, base_s * (2 ** min(attempt - 1, 32))))  # 32: no float overflow


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int
    backoff_base_s: float
    backoff_max_s: float


async def call_with_retries(
    send: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    watch: ReachabilityWatch,
    slots: AbstractAsyncContextManager[Any],
    give_up: Callable[[Retryable, int], BaseException],
    pace: Callable[[], Awaitable[float]] | None = None,
    on_retry: Callable[[], None] | None = None,
    rng: random.Random | None = None,
    scrub: Callable[[str], str] = str,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[T, int]:
    """Run `send` in a slot of `slots` (after `pace`, a rate limiter's wait, when given) until it succeeds;
    -> (its result, attempts). Raises `give_up(last failure, attempts)` when the budget is spent or the
    failure is not transient, and the watch's `ServerUnreachable` once the server is declared down.

    Waits (for a slot, the limiter, a backoff) are counted as wait time, the request as network time.
    `scrub` cleans an error's text (of the API key) before the watch may print it."""
    rng = rng or random.Random()
    perf = time.perf_counter
    attempt = 0
    outage_since: float | None = None  # when this call's current run of connection failures began
    while True:
        attempt += 1
        watch.check()  # the server is gone: stop here rather than queue more doomed attempts
        queued = perf()
        async with slots:
            watch.check()
            started = perf()
            timing.add_wait(started - queued)
            if pace is not None:
                timing.add_wait(await pace())
                started = perf()
            try:
                result = await send()
            except (HTTPFailure, ValueError) as exc:
                problem = classify(exc)
            else:
                watch.reply()
                return result, attempt
            finally:
                timing.add_network(perf() - started)
        if problem.answered:
            watch.reply()  # a 429, a 5xx, a 4xx: the server is there
            outage_since = None
        else:
            watch.failed(scrub(problem.message))
            watch.check()
            if outage_since is None:
                outage_since = clock()
        within_window = outage_since is not None and clock() - outage_since < watch.window_s
        if not problem.retry or (attempt > policy.max_retries and not within_window):
            raise give_up(problem, attempt)
        if on_retry is not None:
            on_retry()
        delay = backoff_delay(attempt, problem.retry_after, policy.backoff_base_s, policy.backoff_max_s, rng)
        if delay > 0:
            waited = perf()
            await watch.sleep(delay)
            timing.add_wait(perf() - waited)
