"""Client-side rate limiting: requests per minute and tokens per minute, as asyncio token buckets.

Each bucket refills continuously at `limit / 60` per second and holds at most `burst_s` seconds' worth
(at least one request, resp. the largest single request): providers enforce per-minute limits on short
windows, so a full minute's burst at start-up would itself draw 429s. A request larger than a bucket's
capacity waits for a full bucket and then drives it into debt, so huge prompts are not starved.

Token estimate: `len(all message text) / 4` (+ `max_tokens` when set), cheap enough for the hot path.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
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
