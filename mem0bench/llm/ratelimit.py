"""Client-side rate limiting: requests per minute and tokens per minute, as asyncio token buckets.

Each bucket refills continuously at `limit / 60` per second and holds at most `burst_s` seconds' worth
(at least one request, resp. the largest single request): providers enforce per-minute limits on short
windows, so a full minute's burst at start-up would itself draw 429s. A request larger than a bucket's
capacity waits for a full bucket and then drives it into debt, so huge prompts are not starved.

Token estimate: `len(all message text) / 4` (+ `max_tokens` when set), cheap enough for the hot path.

Also here: the server's own account of its limits, OpenAI's `x-ratelimit-*` reply headers, read into a
`ServerLimits` (the client keeps the latest one seen; pacing by it is built on top).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


def estimate_tokens(messages: Iterable[dict[str, Any]], max_tokens: int | None = None) -> int:
    """A cheap token estimate for rate limiting: characters / 4 over all message text."""
    chars = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    chars += len(part["text"])
    return chars // 4 + 1 + (max_tokens or 0)


class _Bucket:
    __slots__ = ("capacity", "rate", "level", "stamp")

    def __init__(self, per_minute: float, burst_s: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity
        self.stamp = time.monotonic()

    def _refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_time(self, amount: float, now: float) -> float:
        """Seconds until `amount` (capped at capacity) is available."""
        self._refill(now)
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= amount


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits; `None` means unlimited.

    `await limiter.acquire(tokens)` returns the seconds it waited. Waiters are served in FIFO order.
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        burst_s: float = 1.0,
    ) -> None:
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self._rpm = _Bucket(requests_per_minute, burst_s) if requests_per_minute else None
        self._tpm = _Bucket(tokens_per_minute, burst_s) if tokens_per_minute else None
        self._lock: asyncio.Lock | None = None

    @property
    def unlimited(self) -> bool:
        return self._rpm is None and self._tpm is None

    async def acquire(self, tokens: int = 0) -> float:
        """Wait until one request of about `tokens` tokens may be sent; returns the seconds waited."""
        if self._rpm is None and self._tpm is None:
            return 0.0
        if self._lock is None:
            self._lock = asyncio.Lock()
        started = time.monotonic()
        async with self._lock:
            while True:
                now = time.monotonic()
                wait = 0.0
                if self._rpm is not None:
                    wait = max(wait, self._rpm.wait_time(1.0, now))
                if self._tpm is not None:
                    wait = max(wait, self._tpm.wait_time(float(tokens), now))
                if wait <= 0.0:
                    break
                await asyncio.sleep(wait)
            if self._rpm is not None:
                self._rpm.take(1.0)
            if self._tpm is not None:
                self._tpm.take(float(tokens))
        return time.monotonic() - started


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text: str) -> float | None:
    """Seconds in one of OpenAI's reset durations ("6m0s", "1.5s", "20ms", "1h2m3s"), or a bare number of
    seconds (as other providers send); None when it is neither."""
    text = text.strip()
    if not text:
        return None
    try:
        return max(float(text), 0.0)
    except ValueError:
        pass
    total, at = 0.0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != at:
            return None  # something between the parts: not a duration
        total += float(match.group(1)) * _UNIT_S[match.group(2)]
        at = match.end()
    return total if at == len(text) else None


@dataclass(frozen=True)
class ServerLimits:
    """What the server said of its rate limits in one reply (`x-ratelimit-*`); None: not given.

    `reset_*_s`: seconds, counted from `seen_at` (time.monotonic() when the reply arrived), until the
    bucket is full again."""

    limit_requests: int | None
    limit_tokens: int | None
    remaining_requests: int | None
    remaining_tokens: int | None
    reset_requests_s: float | None
    reset_tokens_s: float | None
    seen_at: float


def _count(headers: Mapping[str, str], name: str) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        return max(int(float(value.strip())), 0)
    except ValueError:
        return None


def _reset(headers: Mapping[str, str], name: str) -> float | None:
    value = headers.get(name)
    return None if value is None else parse_duration(value)


def parse_server_limits(headers: Mapping[str, str], now: float | None = None) -> ServerLimits | None:
    """The `x-ratelimit-*` headers of a reply (names lower-case, or a case-insensitive mapping) -> a
    `ServerLimits`; None when the reply carries none of them (a local server). A value that does not parse
    is left None rather than failing the call: the headers inform, they never decide a reply."""
    limits = ServerLimits(
        limit_requests=_count(headers, "x-ratelimit-limit-requests"),
        limit_tokens=_count(headers, "x-ratelimit-limit-tokens"),
        remaining_requests=_count(headers, "x-ratelimit-remaining-requests"),
        remaining_tokens=_count(headers, "x-ratelimit-remaining-tokens"),
        reset_requests_s=_reset(headers, "x-ratelimit-reset-requests"),
        reset_tokens_s=_reset(headers, "x-ratelimit-reset-tokens"),
        seen_at=time.monotonic() if now is None else now,
    )
    if all(getattr(limits, f) is None for f in _FIELDS):
        return None
    return limits


_FIELDS = (
    "limit_requests", "limit_tokens", "remaining_requests", "remaining_tokens", "reset_requests_s",
    "reset_tokens_s",
)  # fmt: skip
