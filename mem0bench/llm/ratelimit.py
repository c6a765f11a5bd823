"""Pacing: the client's request and token rate kept under the account's budget (`Pacer`).

The budget is what the user set (`llm.rpm`, `llm.tpm`) and what the server says of it in OpenAI's
`x-ratelimit-*` reply headers (read here into a `ServerLimits`), the tighter of the two. Each budget is a
bucket refilled continuously; a request waits before it is sent until it fits, and the requests in flight
are capped by a figure that halves on a 429 and grows back while requests are answered. A request larger
than a bucket's capacity waits for a full bucket and then drives it into debt, so huge prompts are not
starved. Token estimate: the prompt's cl100k tokens plus `max_tokens` (or the mean completion seen).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mem0bench.tokens import CHARS_PER_TOKEN, count_tokens, is_loaded


def estimate_tokens(payload: Mapping[str, Any], completion: float = 0.0) -> int:
    """A request's tokens as a budget counts them, before it is sent: the prompt's cl100k tokens (message
    text, tool schema, response format; `mem0bench.tokens`, the count the usage figures use) plus
    `max_tokens`, or, without one, `completion` (the caller's running mean of replies' completions)."""
    parts: list[str] = []
    for m in payload.get("messages") or ():
        content = m.get("content") if isinstance(m, Mapping) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    for extra in ("tools", "response_format"):
        if payload.get(extra):
            parts.append(json.dumps(payload[extra]))
    limit = payload.get("max_tokens") or payload.get("max_completion_tokens")
    text = "\n".join(parts)
    # Before tiktoken's encoding is loaded (the run loads it before its first timed search, and never for a
    # system that counts nothing), a count would load it here, inside a timed call (~0.27 s): ~4 characters
    # a token is close enough to pace the first requests, until the server's figures take over.
    prompt = count_tokens(text) if is_loaded() else len(text) // CHARS_PER_TOKEN + 1
    return prompt + (int(limit) if isinstance(limit, int) else round(completion))


class _Budget:
    """One budget (requests or tokens) as a continuously refilled bucket.

    Two sources, the tighter wins: the user's figure (`llm.rpm` / `llm.tpm`: a rate, with one second's
    worth as the burst, since a provider may enforce a per-minute figure on short windows), and the server's
    (`x-ratelimit-*`): its limit is the bucket's size, `remaining` caps the level, and the refill rate is
    read from the reset figure, `(limit - remaining) / reset` (the time the used part takes to come back),
    so a server whose "minute" is not 60 s (a stand-in's, a provider's short window) is paced right."""

    __slots__ = ("configured", "server_limit", "server_rate", "level", "stamp", "seen_at")

    def __init__(self, per_minute: float | None, now: float) -> None:
        self.configured = per_minute
        self.server_limit: float | None = None
        self.server_rate: float | None = None
        self.level = self.capacity if per_minute else 0.0
        self.stamp = now
        self.seen_at = float("-inf")

    @property
    def rate(self) -> float | None:
        """Units a second; None: no budget known."""
        rates = [r for r in (self.configured and self.configured / 60.0, self.server_rate) if r]
        return min(rates) if rates else None

    @property
    def capacity(self) -> float:
        own = max(1.0, self.configured / 60.0) if self.configured else None
        if self.server_limit is None:
            return own or 0.0
        return self.server_limit if own is None or (self.configured or 0) >= self.server_limit else own

    def refill(self, now: float) -> None:
        rate = self.rate
        if rate is not None:
            self.level = min(self.capacity, self.level + (now - self.stamp) * rate)
        self.stamp = now

    def wait_time(self, amount: float) -> float:
        """Seconds until `amount` (capped at capacity) is there, as of the last refill."""
        rate = self.rate
        if rate is None:
            return 0.0
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / rate

    def observe(
        self, limit: int | None, remaining: int | None, reset_s: float | None, seen_at: float, *, alone: bool
    ) -> None:
        """The server's figures of one reply. Requests still in flight are taken as counted in them: a
        server charges a request when it arrives, and a request's way there is short next to the time a
        reply takes (subtracting them again would leave part of the budget unused). `alone`: nothing else
        is in flight, so the server's figure is the whole truth, and it may also raise the level (an
        estimate that counted too much), unless the user's own tighter figure governs. Figures seen
        already are skipped: the transport keeps the latest reply's, and a request that got none of its
        own (a timeout, a reply without the headers) hands those back, older than the level by now."""
        if limit is None or remaining is None or limit <= 0 or seen_at <= self.seen_at:
            return
        first = self.server_limit is None
        self.seen_at = seen_at
        self.server_limit = float(limit)
        used = limit - remaining
        # A reset of a few units' worth is rounded (to the millisecond): read the rate from larger ones.
        if reset_s and used >= max(1.0, 0.05 * limit):
            self.server_rate = used / reset_s
        elif self.server_rate is None:
            self.server_rate = limit / 60.0
        if (alone or first) and self.capacity == self.server_limit:  # the server's budget governs
            self.level = float(remaining)
        else:
            self.level = min(self.level, remaining)


class Pacer:
    """Keeps requests under the account's budget: waits before a send until the request and its estimated
    tokens fit both budgets (`_Budget`), and caps the requests in flight, a cap that halves on a 429 and
    grows by one per cap's worth of answered requests (up to `max_concurrency`).

    `await acquire(tokens)` before a send (-> seconds waited), `release(limits, throttled)` when it is
    answered or failed. Without a budget (no `llm.rpm` / `llm.tpm`, no `x-ratelimit-*` headers seen, as
    on a local server) it costs nothing. `waited_s`: the pacing waits summed; `sent`, `throttled`: requests
    sent and answered 429."""

    def __init__(
        self,
        rpm: float | None,
        tpm: float | None,
        max_concurrency: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        now = clock()
        self.requests = _Budget(rpm, now)
        self.tokens = _Budget(tpm, now)
        self.max_concurrency = max_concurrency
        self.cap = float(max_concurrency)
        self.in_flight = 0
        self.waited_s = 0.0
        self.sent = 0
        self.answered = 0
        self.throttled = 0
        self.completion_mean = 0.0
        self._completions = 0
        self._lock: asyncio.Lock | None = None
        self._released: asyncio.Event | None = None

    @property
    def active(self) -> bool:
        """Whether any budget is known (else `acquire` only counts)."""
        return (
            self.requests.rate is not None or self.tokens.rate is not None or self.cap < self.max_concurrency
        )

    def delay(self, tokens: float) -> float:
        """Seconds until a request of `tokens` tokens fits both budgets (0: now)."""
        now = self._clock()
        self.requests.refill(now)
        self.tokens.refill(now)
        return max(self.requests.wait_time(1.0), self.tokens.wait_time(tokens))

    async def acquire(self, tokens: float) -> float:
        """Wait until a request of about `tokens` tokens may be sent, and count it; -> seconds waited."""
        self.sent += 1
        if not self.active:
            self._take(tokens)
            return 0.0
        if self._lock is None:
            self._lock, self._released = asyncio.Lock(), asyncio.Event()
        assert self._released is not None
        started = self._clock()
        async with self._lock:  # FIFO: one waiter at a time decides, the others queue behind it
            while True:
                if self.in_flight >= int(self.cap):
                    self._released.clear()
                    await self._released.wait()
                    continue
                wait = self.delay(tokens)
                if wait <= 0.0:
                    break
                await asyncio.sleep(wait)
            self._take(tokens)
        waited = self._clock() - started
        self.waited_s += waited
        return waited

    def _take(self, tokens: float) -> None:
        self.requests.level -= 1.0
        self.tokens.level -= tokens
        self.in_flight += 1

    def release(self, limits: ServerLimits | None, *, throttled: bool) -> None:
        """A request sent after `acquire` was answered (or failed): read the server's figures (the latest
        reply's), adapt the cap."""
        self.in_flight = max(self.in_flight - 1, 0)
        self.answered += 1
        if limits is not None:
            now = self._clock()
            self.requests.refill(now)
            self.tokens.refill(now)
            alone = self.in_flight == 0
            self.requests.observe(
                limits.limit_requests, limits.remaining_requests, limits.reset_requests_s, limits.seen_at,
                alone=alone,
            )  # fmt: skip
            self.tokens.observe(
                limits.limit_tokens,
                limits.remaining_tokens,
                limits.reset_tokens_s,
                limits.seen_at,
                alone=alone,
            )
        if throttled:
            self.throttled += 1
            self.cap = max(1.0, self.cap / 2.0)
        elif self.cap < self.max_concurrency:
            self.cap = min(float(self.max_concurrency), self.cap + 1.0 / self.cap)
        if self._released is not None:
            self._released.set()

    def learn_completion(self, completion_tokens: int) -> None:
        """A reply's completion tokens: their running mean estimates requests without `max_tokens`."""
        self._completions += 1
        self.completion_mean += (completion_tokens - self.completion_mean) / self._completions

    def summary(self) -> str | None:
        """The closing summary's line on pacing (None when nothing was paced or throttled)."""
        return pacing_summary([self])


def pacing_summary(pacers: Iterable[Pacer]) -> str | None:
    """The closing summary's line on pacing over every model's pacer (None when nothing was paced or
    throttled)."""
    pacers = list(pacers)
    sent = sum(p.sent for p in pacers)
    waited = sum(p.waited_s for p in pacers)
    throttled = sum(p.throttled for p in pacers)
    if not sent or (waited < 0.05 and not throttled):
        return None
    share = 100.0 * throttled / sent
    return (
        f"pacing: waited {waited:.1f} s before sending (summed over requests) to stay under the "
        f"rate budget; {throttled} of {sent} requests answered 429 ({share:.1f}%)"
    )


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
