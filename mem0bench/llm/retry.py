"""Retry policy for LLM calls: which failures are worth another attempt, and how long to wait first.

`LLMClient` runs the loop (semaphore, limiter, accounting); this module only decides.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

from mem0bench.llm.transport import HTTPConnectError, HTTPStatusError, HTTPTimeout

__all__ = ["MAX_RETRY_AFTER_S", "Retryable", "backoff_delay", "classify", "parse_retry_after"]

MAX_RETRY_AFTER_S = 300.0
"""Cap on a server-requested delay, so a bogus Retry-After cannot stall a run for hours."""

_RETRYABLE_STATUS = {408, 409}


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
    """One failed attempt, with its failure kind and an optional server-requested delay."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None, retry: bool = True):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        self.retry = retry


def classify(exc: BaseException, timeout_s: float) -> Retryable:
    """Map a transport exception (or an unreadable body's `ValueError`) onto a failure kind; re-raise others.

    429, 5xx, 408/409, timeouts, connection errors and unreadable bodies are retryable; any other
    4xx is `bad_request` and fails at once (asking again cannot fix the request).
    """
    if isinstance(exc, HTTPTimeout):
        return Retryable("timeout", f"request timed out after {timeout_s} s")
    if isinstance(exc, HTTPConnectError):
        return Retryable("connection", f"connection error: {exc}")
    if isinstance(exc, HTTPStatusError):
        status = exc.status_code
        msg = f"HTTP {status}: {exc.message}"
        if status == 429:
            return Retryable("rate_limit", msg, parse_retry_after(exc.headers))
        if status >= 500:
            return Retryable("server_error", msg, parse_retry_after(exc.headers))
        if status in _RETRYABLE_STATUS:
            return Retryable("timeout" if status == 408 else "server_error", msg)
        return Retryable("bad_request", msg, retry=False)
    if isinstance(exc, ValueError):
        return Retryable("server_error", f"unreadable reply: {type(exc).__name__}: {exc}")
    raise exc


def backoff_delay(
    attempt: int, retry_after: float | None, base_s: float, max_s: float, rng: random.Random
) -> float:
    """The server's delay when it gave one (capped), else exponential backoff with full jitter."""
    if retry_after is not None:
        return min(retry_after, MAX_RETRY_AFTER_S)
    return rng.uniform(0.0, min(max_s, base_s * (2 ** (attempt - 1))))
