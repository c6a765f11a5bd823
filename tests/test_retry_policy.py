"""The one retry policy (mem0bench/llm/retry.py) and the server's rate-limit headers (llm/ratelimit.py):
which status is which failure kind, which are retried, and how the headers read."""

from __future__ import annotations

import asyncio
import random

import pytest

from mem0bench.llm.ratelimit import parse_duration, parse_server_limits
from mem0bench.llm.reachability import ReachabilityWatch
from mem0bench.llm.retry import (
    Retryable,
    RetryPolicy,
    backoff_delay,
    call_with_retries,
    classify,
    parse_retry_after,
    status_kind,
)
from mem0bench.llm.transport import HTTPConnectError, HTTPStatusError, HTTPTimeout


def test_status_kinds() -> None:
    assert status_kind(200) is None
    assert status_kind(304) is None
    assert status_kind(400) == "bad_request"
    assert status_kind(401) == "bad_request"
    assert status_kind(404) == "bad_request"
    assert status_kind(408) == "timeout"
    assert status_kind(409) == "server_error"
    assert status_kind(422) == "bad_request"
    assert status_kind(425) == "server_error"
    assert status_kind(429) == "rate_limit"
    assert status_kind(500) == "server_error"
    assert status_kind(503) == "server_error"


def test_which_failures_are_retried() -> None:
    assert classify(HTTPStatusError(429, "slow down", {"retry-after": "2"})).retry_after == 2.0
    assert classify(HTTPStatusError(429, "slow down", {})).retry
    assert classify(HTTPStatusError(409, "conflict", {})).retry
    assert classify(HTTPStatusError(425, "too early", {})).retry
    assert classify(HTTPStatusError(502, "bad gateway", {})).retry
    assert not classify(HTTPStatusError(400, "bad field", {})).retry
    assert not classify(HTTPStatusError(403, "no", {})).retry
    assert classify(ValueError("Expecting value")).kind == "server_error"  # an unreadable reply
    assert classify(ValueError("Expecting value")).retry
    assert classify(HTTPTimeout("no complete reply within 5 s")).kind == "timeout"
    assert classify(HTTPConnectError("refused")).kind == "connection"
    assert not classify(HTTPConnectError("refused")).answered  # counts towards the unreachability window
    assert classify(HTTPStatusError(503, "busy", {})).answered  # something answered
    with pytest.raises(KeyError):
        classify(KeyError("a bug of ours is not a failed attempt"))


def test_backoff() -> None:
    rng = random.Random(0)
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({}) is None
    assert backoff_delay(1, 2.0, 0.5, 30.0, rng) == 2.0
    assert backoff_delay(1, 10_000.0, 0.5, 30.0, rng) == 300.0  # capped
    assert 0.0 <= backoff_delay(3, None, 0.5, 30.0, rng) <= 2.0
    assert 0.0 <= backoff_delay(5000, None, 0.5, 30.0, rng) <= 30.0  # no overflow however long it goes on


def test_the_loop_gives_up_on_answers_after_the_count() -> None:
    sent: list[int] = []

    async def send() -> str:
        sent.append(1)
        raise HTTPStatusError(500, "down", {"retry-after": "0"})

    def give_up(problem: Retryable, attempts: int) -> Exception:
        return RuntimeError(f"{problem.kind} after {attempts}")

    async def go() -> None:
        await call_with_retries(
            send, policy=RetryPolicy(2, 0.0, 0.0), watch=ReachabilityWatch("http://x", 60.0),
            slots=asyncio.Semaphore(1), give_up=give_up,
        )  # fmt: skip

    with pytest.raises(RuntimeError, match="server_error after 3"):
        asyncio.run(go())
    assert len(sent) == 3


def test_durations() -> None:
    assert parse_duration("6m0s") == 360.0
    assert parse_duration("1.5s") == 1.5
    assert parse_duration("20ms") == pytest.approx(0.02)
    assert parse_duration("1h2m3s") == 3723.0
    assert parse_duration("0s") == 0.0
    assert parse_duration("12") == 12.0
    assert parse_duration("2m30.5s") == 150.5
    assert parse_duration("") is None
    assert parse_duration("soon") is None
    assert parse_duration("5s later") is None


def test_server_limits() -> None:
    headers = {
        "x-ratelimit-limit-requests": "10000",
        "x-ratelimit-limit-tokens": "2000000",
        "x-ratelimit-remaining-requests": "9999",
        "x-ratelimit-remaining-tokens": "1999950",
        "x-ratelimit-reset-requests": "6ms",
        "x-ratelimit-reset-tokens": "1.5s",
    }
    limits = parse_server_limits(headers, now=7.0)
    assert limits is not None and limits.seen_at == 7.0
    assert (limits.limit_requests, limits.limit_tokens) == (10000, 2000000)
    assert (limits.remaining_requests, limits.remaining_tokens) == (9999, 1999950)
    assert limits.reset_requests_s == pytest.approx(0.006) and limits.reset_tokens_s == 1.5
    assert parse_server_limits({"content-type": "application/json"}) is None  # a local server: none
    partial = parse_server_limits({"x-ratelimit-remaining-tokens": "12", "x-ratelimit-reset-tokens": "later"})
    assert partial is not None and partial.remaining_tokens == 12 and partial.reset_tokens_s is None
