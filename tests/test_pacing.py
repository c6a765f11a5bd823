"""Pacing from the server's own figures (issue 35, item 1): the budget arithmetic of `llm/ratelimit.py`, the
stand-in's enforced budget, and a burst over real HTTP that stays under a budget while using it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
from devtools.standin.server import Budget, StandinServer, warm_tokenizers
from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.client import LLMClient
from mem0bench.llm.ratelimit import Pacer, ServerLimits, estimate_tokens, parse_server_limits
from mem0bench.llm.settings import LLMSettings
from mem0bench.pipeline.config_change import is_neutral
from mem0bench.tokens import count_tokens


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def limits(
    remaining_requests: int, remaining_tokens: int, reset_r: str, reset_t: str, at: float
) -> ServerLimits:
    headers = {
        "x-ratelimit-limit-requests": "600",
        "x-ratelimit-limit-tokens": "60000",
        "x-ratelimit-remaining-requests": str(remaining_requests),
        "x-ratelimit-remaining-tokens": str(remaining_tokens),
        "x-ratelimit-reset-requests": reset_r,
        "x-ratelimit-reset-tokens": reset_t,
    }
    parsed = parse_server_limits(headers, now=at)
    assert parsed is not None
    return parsed


# ---- the pacer's arithmetic ---------------------------------------------------------------------------------
def test_server_figures_set_level_and_rate() -> None:
    clock = Clock()
    pacer = Pacer(None, None, 8, clock=clock)
    assert not pacer.active and pacer.delay(10_000) == 0.0  # no budget known: nothing paced
    # 60 of 600 requests used, back in 6 s: 10 a second (a "minute" of 60 s would say 10 too);
    # 30,000 of 60,000 tokens used, back in 3 s: 10,000 a second (a 6 s window, not a minute).
    pacer.release(limits(540, 30_000, "6s", "3s", clock.now), throttled=False)
    assert pacer.active
    assert pacer.requests.level == 540 and pacer.requests.rate == pytest.approx(10.0)
    assert pacer.tokens.level == 30_000 and pacer.tokens.rate == pytest.approx(10_000.0)
    assert pacer.delay(30_000) == 0.0
    assert pacer.delay(40_000) == pytest.approx(1.0)  # 10,000 tokens short at 10,000 a second
    clock.now += 0.5
    assert pacer.delay(40_000) == pytest.approx(0.5)  # refilled meanwhile
    # A later reply saying less is left than we think (another process on the account) lowers the level;
    # an older reply (seen before the last one) is ignored.
    pacer.release(limits(500, 1_000, "10s", "5.9s", clock.now), throttled=False)
    assert pacer.tokens.level == 1_000
    pacer.release(limits(600, 60_000, "0ms", "0ms", clock.now - 1.0), throttled=False)
    assert pacer.tokens.level == 1_000


def test_requests_in_flight_are_taken_as_counted_by_the_server() -> None:
    clock = Clock()
    pacer = Pacer(None, None, 8, clock=clock)
    for _ in range(3):
        pacer._take(1_000)  # three requests in flight, sent before any budget was known
    pacer.release(limits(590, 50_000, "1s", "1s", clock.now), throttled=False)
    # The server charges on arrival: its figures already hold the two still in flight.
    assert pacer.requests.level == 590 and pacer.tokens.level == 50_000 and pacer.in_flight == 2


def test_a_reply_with_nothing_else_in_flight_may_raise_the_level() -> None:
    clock = Clock()
    pacer = Pacer(None, None, 8, clock=clock)
    pacer.release(limits(600, 60_000, "0ms", "0ms", clock.now), throttled=False)
    for _ in range(2):
        pacer._take(5_000)  # estimated 5,000 tokens each; the server counted 1,000
    pacer.release(limits(598, 58_000, "200ms", "2s", clock.now + 0.1), throttled=False)
    assert pacer.tokens.level == 50_000  # one still in flight: only ever lowered by the server's figure
    pacer.release(limits(598, 58_000, "200ms", "2s", clock.now + 0.2), throttled=False)
    assert pacer.tokens.level == 58_000  # alone: the server's figure stands


def test_figures_handed_back_by_a_request_without_a_reply_are_not_read_again() -> None:
    clock = Clock()
    pacer = Pacer(None, None, 8, clock=clock)
    seen = limits(600, 1_000, "0ms", "1s", clock.now)  # the transport's latest: 59,000 used, back in 1 s
    pacer.release(seen, throttled=False)
    clock.now += 0.5
    pacer._take(2_000)
    pacer.release(seen, throttled=False)  # that request timed out: the transport still holds `seen`
    assert pacer.tokens.level == pytest.approx(1_000 + 0.5 * 59_000 - 2_000)  # refilled, then charged


def test_configured_budget_and_tighter_of_two() -> None:
    clock = Clock()
    pacer = Pacer(60, 6_000, 4, clock=clock)  # one request and 100 tokens a second, one second's burst
    assert pacer.active and pacer.requests.level == 1.0 and pacer.tokens.level == 100.0
    pacer._take(100)
    assert pacer.delay(100) == pytest.approx(1.0)
    # The server's budget is larger: the user's (tighter) figure still paces.
    pacer.release(limits(599, 59_900, "100ms", "100ms", clock.now), throttled=False)
    assert pacer.tokens.rate == pytest.approx(100.0) and pacer.delay(100) == pytest.approx(1.0)


def test_concurrency_halves_on_429_and_grows_back() -> None:
    pacer = Pacer(None, None, 16, clock=Clock())
    for _ in range(3):
        pacer.release(None, throttled=True)
    assert pacer.cap == 2.0 and pacer.throttled == 3 and pacer.active
    for _ in range(200):
        pacer.release(None, throttled=False)
    assert pacer.cap == 16.0


def test_token_estimate_counts_prompt_schema_and_completion() -> None:
    payload: dict[str, Any] = {"messages": [{"role": "user", "content": "hello there, how are you"}]}
    base = count_tokens("hello there, how are you")
    assert estimate_tokens(payload) == base
    assert estimate_tokens(payload, completion=12.4) == base + 12  # the mean completion, without max_tokens
    assert estimate_tokens({**payload, "max_tokens": 50}, completion=12.0) == base + 50
    assert estimate_tokens({**payload, "tools": [{"type": "function"}]}) > base


def test_an_estimate_before_the_encoding_is_loaded_does_not_load_it() -> None:
    from mem0bench import tokens

    tokens.encoding.cache_clear()  # as in a fresh process: the load must not land inside a timed call
    text = "hello there, how are you"
    assert estimate_tokens({"messages": [{"role": "user", "content": text}]}) == len(text) // 4 + 1
    assert not tokens.is_loaded()


def test_pacing_summary_line() -> None:
    pacer = Pacer(None, None, 4, clock=Clock())
    assert pacer.summary() is None
    pacer.sent, pacer.throttled, pacer.waited_s = 200, 3, 12.34
    assert pacer.summary() == (
        "pacing: waited 12.3 s before sending (summed over requests) to stay under the rate budget; "
        "3 of 200 requests answered 429 (1.5%)"
    )


def test_settings_names_and_old_aliases() -> None:
    assert LLMSettings.from_config({"rpm": 500, "tpm": 200_000}).tpm == 200_000
    old = LLMSettings.from_config({"requests_per_minute": 500, "tokens_per_minute": 9})
    assert (old.rpm, old.tpm) == (500, 9) and "requests_per_minute" not in old.public_dict()
    with pytest.raises(ConfigurationError, match="llm.tpm"):
        LLMSettings(tpm=0)
    # Pacing changes when requests go, never what they ask: a rerun may change it (old names included).
    assert all(is_neutral(f"llm.{k}") for k in ("rpm", "tpm", "requests_per_minute", "tokens_per_minute"))


# ---- the stand-in's budget ------------------------------------------------------------------------------------
def test_standin_budget_refuses_and_refills() -> None:
    budget = Budget(10, 1_000, window_s=6.0)  # per "minute", refilled in 6 s
    assert budget.admit(600, now=0.0) is None
    assert budget.admit(500, now=0.0) == pytest.approx(0.6)  # 100 tokens short at 1,000 per 6 s
    assert budget.admit(500, now=0.6) is None
    headers = budget.headers(0.6)
    assert headers["x-ratelimit-limit-tokens"] == "1000" and headers["x-ratelimit-remaining-tokens"] == "0"
    assert (
        headers["x-ratelimit-reset-tokens"] == "6s" and headers["x-ratelimit-remaining-requests"] == "9"
    )  # 8, plus 0.6 s of refill
    assert budget.use(now=0.6) == {"requests": pytest.approx(2 / 11), "tokens": pytest.approx(1_100 / 1_100)}


# ---- over real HTTP -------------------------------------------------------------------------------------------
def burst(server: StandinServer, n: int, **settings: Any) -> tuple[float, LLMClient]:
    client = LLMClient(
        LLMSettings(
            base_url=server.base_url,
            api_key="sk-pacing-test",
            max_tokens=50,
            max_concurrency=16,
            max_retries=10,
            backoff_base_s=0.05,
            backoff_max_s=0.5,
            **settings,
        )  # fmt: skip
    )
    prompt = " ".join(f"word{i}" for i in range(120))

    async def go() -> None:
        try:
            await asyncio.gather(
                *(
                    client.chat([{"role": "user", "content": f"{i} {prompt}"}], stage="answer")
                    for i in range(n)
                )
            )
        finally:
            await client.aclose()

    started = time.monotonic()
    asyncio.run(go())
    return time.monotonic() - started, client


@pytest.mark.parametrize(
    ("n", "ratelimit"),
    [
        # 100 requests of ~290 tokens (prompt + max_tokens 50) against 8,000 tokens "a minute" refilled in 2 s:
        # 27 requests' worth at once, then 14 a second.
        (100, (600, 8_000)),
        # 200 requests against 60 requests "a minute" refilled in 2 s: 60 at once, then 30 a second.
        (200, (60, 10_000_000)),
    ],
    ids=["tokens", "requests"],
)
def test_burst_under_an_enforced_budget_stays_under_it_and_uses_it(
    n: int, ratelimit: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run has tiktoken's encoding loaded by then (its preflight's embedding probe counts tokens), so prompts
    # are counted exactly, as here. Both bounds follow from the budget, not from how fast this machine is: a
    # slow client (a loaded CI runner) finds the bucket fuller, so it is refused less and the pacer sleeps less.
    from mem0bench import tokens

    tokens.encoding()
    slept: list[float] = []
    delay = Pacer.delay

    def recorded(self: Pacer, tokens: float) -> float:
        wait = delay(self, tokens)
        if wait > 0:
            slept.append(wait)  # acquire() sleeps exactly this, then asks again
        return wait

    monkeypatch.setattr(Pacer, "delay", recorded)
    window_s = 2.0
    with StandinServer(ratelimit=ratelimit, ratelimit_window_s=window_s, latency_ms=20) as server:
        elapsed, client = burst(server, n)
        answered_429 = server.count("chat", 429)
        sent = server.count("chat")
        assert server.budget is not None
        charged = server.budget.charged
        use = server.budget_use()
    # The least time the budget allows for what was charged: the full bucket, then the rest at its refill rate.
    needed_s = max((used - limit) * window_s / limit for used, limit in zip(charged, ratelimit))
    share = answered_429 / sent
    print(
        f"429 share {share:.3f} ({answered_429}/{sent}), budget use {use}, {elapsed:.1f} s; "
        f"the pacer slept {sum(slept):.2f} s where the budget needs {needed_s:.2f} s"
    )
    assert server.count("chat", 200) == n
    assert share <= 0.05  # stays under it
    # The burst is over the bucket, and the pacer read the budget from the replies (whether it then had to
    # sleep depends on how fast this machine sends: not asserted).
    assert needed_s > 1.0 and client.pacer.active and client.pacer.throttled == answered_429
    # Uses it: the pacer's own sleeps (one waiter at a time) add up to no more than the budget needs.
    assert sum(slept) <= 1.1 * needed_s, (sum(slept), needed_s)


@pytest.mark.slow
def test_a_run_under_a_budget_finishes_with_few_429s(tmp_path: Path, locomo_mini: Path) -> None:
    # The mini fixture's rag run sends 69 requests of 17,144 tokens in all; 4,000 tokens "a minute", refilled
    # in 1 s, make it wait for the budget about 3 s. Unpaced, 280 of its 343 chat requests were answered 429.
    run_dir = tmp_path / "run"
    with StandinServer(
        api_key=TEST_KEY, ratelimit=(600, 4_000), ratelimit_window_s=1.0, latency_ms=20
    ) as server:
        args = ["run", "+exp=rag", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
                "judge.runs=3", f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"))
        refused, sent = server.count(status=429), server.count()
        use = server.budget_use()
    print(f"run: {refused}/{sent} answered 429, budget use {use}")
    assert result.returncode == 0, result.stderr[-2000:]
    # No bound on the budget's use here: a whole run's phases wait on each other, and how much of the budget
    # it leaves unused depends on this machine's speed (the burst test bounds the pacer's own sleeps).
    assert refused / sent <= 0.05
    line = next(line for line in result.stderr.splitlines() if line.startswith("pacing: waited"))
    assert f"{refused} of " in line


def test_standin_refuses_over_http_with_retry_after_and_headers() -> None:
    import json
    import urllib.error
    import urllib.request

    body = json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 60}
    )
    warm_tokenizers()  # else loading them (~0.3 s) refills the request spent before its headers are made
    with StandinServer(ratelimit=(60, 100), ratelimit_window_s=6.0) as server:

        def post() -> tuple[int, Any]:
            request = urllib.request.Request(
                f"{server.base_url}/chat/completions", body.encode(), {"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(request) as reply:
                    return reply.status, reply.headers
            except urllib.error.HTTPError as exc:
                return exc.code, exc.headers

        first, second = post(), post()  # ~61 tokens each against 100
    assert first[0] == 200 and first[1]["x-ratelimit-remaining-requests"] == "59"
    assert second[0] == 429
    assert (
        second[1]["x-ratelimit-limit-tokens"] == "100" and int(second[1]["x-ratelimit-remaining-tokens"]) < 61
    )
    assert second[1]["Retry-After"] == "2" and 1000 < int(second[1]["retry-after-ms"]) <= 1_500
