"""mem0bench.llm over real loopback HTTP to the stand-in OpenAI server (devtools/standin/server.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from devtools.standin.server import Empty, Hold, HTTPError, NotJson, Reset, StandinServer, ToolCall
from mem0bench.common.errors import ConfigurationError
from mem0bench.llm import timing
from mem0bench.llm.cache import ResponseCache, request_key
from mem0bench.llm.client import LLMClient, parse_retry_after
from mem0bench.llm.embedders import OpenAIEmbeddingBackend, build_embedding_backend
from mem0bench.llm.ledger import UsageLedger
from mem0bench.llm.reachability import ServerUnreachable
from mem0bench.llm.replies import InvalidSchemaError
from mem0bench.llm.settings import EmbedderSettings, LLMSettings
from mem0bench.llm.types import LLMCallError, StructuredSpec, Usage

ROOT = Path(__file__).resolve().parents[1]
SECRET = "test-fake-SECRET-a1b2c3d4e5"

FACTS = StructuredSpec(
    name="record_facts",
    description="Record the facts found in the message.",
    parameters={
        "type": "object",
        "properties": {
            "facts": {"type": "array", "items": {"type": "string"}},
            "action": {"type": "string", "enum": ["ADD", "UPDATE", "DELETE", "NOOP"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["facts", "action"],
        "additionalProperties": False,
    },
)
FACTS_JSON = StructuredSpec(FACTS.name, FACTS.description, FACTS.parameters, mode="json_schema")
USER = [{"role": "user", "content": "Caroline adopted a dog named Rex in May 2023."}]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def make_client(
    server: StandinServer,
    cache: ResponseCache | None = None,
    *,
    embedder: Any = None,
    ledger: UsageLedger | None = None,
    **overrides: Any,
) -> LLMClient:
    settings = dict(
        base_url=server.base_url,
        api_key=SECRET,
        timeout_s=5.0,
        max_retries=3,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        price_any_server=True,  # the stand-in bills like OpenAI here: these tests check the arithmetic
    )
    settings.update(overrides)
    if embedder is None:
        embedder = OpenAIEmbeddingBackend("text-embedding-3-small", batch_size=256)
    return LLMClient(LLMSettings(**settings), embedder, cache, ledger)


async def _call(client: LLMClient, coro_fn: Any) -> Any:
    try:
        return await coro_fn(client)
    finally:
        await client.aclose()


def call(client: LLMClient, coro_fn: Any) -> Any:
    return run(_call(client, coro_fn))


def stored_rows(path: Path) -> dict[str, int]:
    """Rows of each table of a (closed) response cache file."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("chat", "embeddings")}


def chat_bodies(server: StandinServer) -> list[dict[str, Any]]:
    return [body for ep, body in server.requests if ep == "chat"]


# ---- settings ------------------------------------------------------------------------------------------
def test_settings_from_the_shipped_configs() -> None:
    llm = LLMSettings.from_config(yaml.safe_load((ROOT / "configs/llm/openai.yaml").read_text()))
    assert (
        llm.model == "gpt-4o-mini"
        and llm.max_concurrency == 64
        and llm.prices["gpt-4o-mini"]["prompt"] == 0.15
    )
    for name in ("openai", "minilm"):
        emb = EmbedderSettings.from_config(
            yaml.safe_load((ROOT / f"configs/embedder/{name}.yaml").read_text())
        )
        assert emb.backend == name
    with pytest.raises(ConfigurationError, match="max_concurency"):
        LLMSettings.from_config({"model": "gpt-4o-mini", "max_concurency": 4})
    with pytest.raises(ConfigurationError, match="batchsize"):
        EmbedderSettings.from_config({"backend": "openai", "batchsize": 4})


def test_api_key_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    s = LLMSettings.from_config({"model": "gpt-4o-mini"}, api_key=SECRET)
    assert SECRET not in repr(s) and SECRET not in json.dumps(s.public_dict())
    assert "api_key" not in s.public_dict() and s.resolve_api_key() == SECRET
    monkeypatch.setenv("MY_KEY", "env-key")
    assert LLMSettings(api_key_env="MY_KEY").resolve_api_key() == "env-key"
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert LLMSettings().resolve_base_url() == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert LLMSettings().resolve_base_url() == "http://127.0.0.1:9/v1"
    assert LLMSettings(base_url="http://x/v1").resolve_base_url() == "http://x/v1"


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "150", "retry-after": "9"}) == pytest.approx(0.15)
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= parse_retry_after({"retry-after": future}) <= 31  # type: ignore[operator]
    assert parse_retry_after({}) is None and parse_retry_after({"retry-after": "soon"}) is None


# ---- happy paths ---------------------------------------------------------------------------------------
def test_chat_happy_path_records_usage(standin: StandinServer) -> None:
    client = make_client(standin)

    async def go(c: LLMClient) -> Any:
        with timing.measure() as t:
            reply = await c.chat(USER, stage="answer")
        return reply, t

    reply, t = call(client, go)
    assert reply.text.strip() and not reply.cached
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
    answer = client.ledger.stage("answer")
    assert answer.calls == 1 and answer.prompt_tokens == reply.usage.prompt_tokens
    assert answer.cost_usd == pytest.approx(
        (reply.usage.prompt_tokens * 0.15 + reply.usage.completion_tokens * 0.60) / 1e6
    )
    assert t.network_s > 0 and t.elapsed_s >= t.network_s
    body = chat_bodies(standin)[0]
    assert body["model"] == "gpt-4o-mini" and body["temperature"] == 0.0 and "tools" not in body
    snap = client.ledger.snapshot()
    json.dumps(snap)
    assert snap["total"]["calls"] == 1 and snap["unpriced_models"] == []


def test_structured_tool_call_happy_path(standin: StandinServer) -> None:
    client = make_client(standin)
    reply = call(client, lambda c: c.structured(USER, FACTS, stage="ingest"))
    assert (
        set(reply.data) >= {"facts", "action"}
        and reply.data["action"] in FACTS.parameters["properties"]["action"]["enum"]
    )
    assert reply.repairs == 0 and reply.usage.prompt_tokens > 0
    body = chat_bodies(standin)[0]
    assert body["tools"][0]["function"]["name"] == "record_facts"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "record_facts"}}
    assert client.ledger.stage("ingest").calls == 1


def test_structured_json_schema_happy_path(standin: StandinServer) -> None:
    client = make_client(standin)
    reply = call(client, lambda c: c.structured(USER, FACTS_JSON, stage="judge"))
    assert isinstance(reply.data["facts"], list)
    body = chat_bodies(standin)[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True and "tools" not in body


# ---- retries ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("headers", [{"Retry-After": "0.2"}, {"retry-after-ms": "200"}])
def test_429_with_retry_after_is_honoured(standin: StandinServer, headers: dict[str, str]) -> None:
    standin.script([HTTPError(429, headers=headers)])
    client = make_client(standin, backoff_max_s=0.0)
    started = time.perf_counter()

    async def go(c: LLMClient) -> Any:
        with timing.measure() as t:
            reply = await c.chat(USER, stage="answer")
        return reply, t

    reply, t = call(client, go)
    assert time.perf_counter() - started >= 0.2 and t.wait_s >= 0.2
    assert reply.text and standin.count("chat", 429) == 1 and standin.count("chat", 200) == 1
    assert client.ledger.stage("answer").retries == 1


def test_429_without_retry_after_backs_off(standin: StandinServer) -> None:
    standin.script([HTTPError(429), HTTPError(429)])
    client = make_client(standin)
    assert call(client, lambda c: c.chat(USER, stage="answer")).text
    assert standin.count("chat", 429) == 2 and standin.count("chat", 200) == 1


def test_5xx_is_retried(standin: StandinServer) -> None:
    standin.script([500, 503])
    assert call(make_client(standin), lambda c: c.chat(USER, stage="answer")).text
    assert standin.count("chat", 500) == 1 and standin.count("chat", 503) == 1


def test_connection_reset_is_retried(standin: StandinServer) -> None:
    standin.script([Reset()])
    assert call(make_client(standin), lambda c: c.chat(USER, stage="answer")).text
    assert standin.count("chat", 0) == 1 and standin.count("chat", 200) == 1


def test_timeout_is_retried(standin: StandinServer) -> None:
    # Bounds that hold on a loaded machine: the client waited at least its timeout, not the whole hold,
    # and retried at least once (a retry slowed past the timeout by load may add another).
    standin.script([Hold(10.0)])
    client = make_client(standin, timeout_s=2.0)
    started = time.perf_counter()
    assert call(client, lambda c: c.structured(USER, FACTS, stage="ingest")).data
    assert 2.0 <= time.perf_counter() - started < 10.0
    assert client.ledger.stage("ingest").retries >= 1


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ({"rate_5xx": 1.0}, "server_error"),
        ({"rate_429": 1.0, "retry_after_s": 0.01}, "rate_limit"),
    ],
)
def test_retries_exhausted(standin: StandinServer, fault: dict[str, float], kind: str) -> None:
    standin.configure(**fault)
    client = make_client(standin, max_retries=2)
    with pytest.raises(LLMCallError) as info:
        call(client, lambda c: c.chat(USER, stage="answer"))
    failure = info.value.failure
    assert failure.kind == kind and failure.attempts == 3 and failure.stage == "answer"
    assert standin.count("chat") == 3
    stage = client.ledger.stage("answer")
    assert stage.failures == 1 and stage.failure_kinds == {kind: 1} and stage.calls == 0


@pytest.mark.parametrize("status", [408, 409, 425])
def test_statuses_the_memory_service_client_retries_are_retried_here_too(
    standin: StandinServer, status: int
) -> None:
    standin.script([HTTPError(status)])
    client = make_client(standin)
    assert call(client, lambda c: c.chat(USER, stage="answer")).text
    assert standin.count("chat", status) == 1 and client.ledger.stage("answer").retries == 1


def test_an_unreadable_reply_is_retried_within_the_count(standin: StandinServer) -> None:
    standin.script([NotJson()] * 5)
    client = make_client(standin, max_retries=2)
    with pytest.raises(LLMCallError) as info:
        call(client, lambda c: c.chat(USER, stage="answer"))
    failure = info.value.failure
    assert (failure.kind, failure.attempts) == ("server_error", 3) and "unreadable reply" in failure.message


@pytest.mark.parametrize("fault", [{"rate_reset": 1.0}, {"rate_timeout": 1.0, "hold_s": 0.5}])
def test_connection_failures_are_retried_until_the_window_not_the_count(
    standin: StandinServer, fault: dict[str, float]
) -> None:
    # Issue 32: a server that keeps failing to answer is retried past `max_retries` for as long as the
    # failures last less than `llm.unreachable_after_s`; then the run stops (ServerUnreachable), and a
    # rerun picks the call up: no call is lost for good to an outage.
    standin.configure(**fault)
    client = make_client(standin, max_retries=1, timeout_s=0.15, unreachable_after_s=1.0)
    started = time.monotonic()
    with pytest.raises(ServerUnreachable, match="unreachable"):
        call(client, lambda c: c.chat(USER, stage="search"))
    assert time.monotonic() - started >= 1.0
    assert standin.count("chat") > 2  # more than max_retries + 1 attempts
    assert client.ledger.stage("search").failures == 0


def test_bad_request_fails_at_once(standin: StandinServer) -> None:
    standin.script([HTTPError(400, message="bad field")])
    client = make_client(standin)
    with pytest.raises(LLMCallError) as info:
        call(client, lambda c: c.chat(USER, stage="answer"))
    assert info.value.failure.kind == "bad_request" and info.value.failure.attempts == 1
    assert "bad field" in info.value.failure.message and standin.count("chat") == 1


def test_wrong_key_during_a_call_is_a_bad_request_without_the_key(standin: StandinServer) -> None:
    standin.configure(api_key="the-right-key")
    with pytest.raises(LLMCallError) as info:
        call(make_client(standin), lambda c: c.chat(USER, stage="answer"))
    assert info.value.failure.kind == "bad_request" and SECRET not in str(info.value)


# ---- structured output repair ------------------------------------------------------------------------------
def test_malformed_tool_arguments_are_repaired(standin: StandinServer) -> None:
    standin.script(['{"facts": ["a dog"', ToolCall({"facts": ["Rex"], "action": "ADD"})])
    client = make_client(standin)
    reply = call(client, lambda c: c.structured(USER, FACTS, stage="ingest"))
    assert reply.data == {"facts": ["Rex"], "action": "ADD"} and reply.repairs == 1
    repair = chat_bodies(standin)[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"facts": ["a dog"'}
    assert "not valid JSON" in repair[-1]["content"] and "record_facts" in repair[-1]["content"]
    stage = client.ledger.stage("ingest")
    assert stage.calls == 2 and stage.repairs == 1 and reply.usage.prompt_tokens == stage.prompt_tokens


def test_schema_violation_error_is_shown_to_the_model(standin: StandinServer) -> None:
    standin.script([{"facts": ["Rex"], "action": "ADOPT"}, {"facts": ["Rex"], "action": "ADD"}])
    reply = call(make_client(standin), lambda c: c.structured(USER, FACTS, stage="ingest"))
    assert reply.data["action"] == "ADD"
    error = chat_bodies(standin)[1]["messages"][-1]["content"]
    assert (
        "does not match the schema: 'ADOPT' is not one of ['ADD', 'UPDATE', 'DELETE', 'NOOP'] (at action)"
        in error
    )


def test_an_invalid_schema_fails_before_any_request(standin: StandinServer) -> None:
    dated = {**FACTS.parameters, "properties": {"when": {"type": "date"}}}
    spec = StructuredSpec("record_dates", "", dated, mode="tool")
    with pytest.raises(
        InvalidSchemaError, match="`record_dates` is not valid JSON Schema: .*properties/when/type"
    ):
        call(make_client(standin), lambda c: c.structured(USER, spec, stage="ingest"))
    assert chat_bodies(standin) == []


def test_persistent_malformed_output_fails_cleanly(standin: StandinServer) -> None:
    standin.configure(rate_malformed=1.0)
    for spec in (FACTS, FACTS_JSON):
        with pytest.raises(LLMCallError) as info:
            call(
                make_client(standin, repair_attempts=2),
                lambda c, s=spec: c.structured(USER, s, stage="ingest"),
            )
        assert info.value.failure.kind == "malformed" and info.value.failure.attempts == 3


def test_json_schema_content_is_repaired(standin: StandinServer) -> None:
    standin.script(["Sure, here you go!", {"facts": [], "action": "NOOP"}])
    reply = call(make_client(standin), lambda c: c.structured(USER, FACTS_JSON, stage="judge"))
    assert reply.data == {"facts": [], "action": "NOOP"} and reply.repairs == 1


def test_empty_choices(standin: StandinServer) -> None:
    standin.script([Empty()])
    assert call(make_client(standin), lambda c: c.chat(USER, stage="answer")).text
    standin.script([Empty()])
    assert call(make_client(standin), lambda c: c.structured(USER, FACTS, stage="ingest")).data
    standin.configure(rate_empty=1.0)
    for fn in (lambda c: c.chat(USER, stage="answer"), lambda c: c.structured(USER, FACTS, stage="ingest")):
        client = make_client(standin)
        with pytest.raises(LLMCallError) as info:
            call(client, fn)
        assert info.value.failure.kind == "empty" and info.value.failure.attempts == 2


# ---- cache ------------------------------------------------------------------------------------------------
def test_cache_hit_and_salt_miss(standin: StandinServer, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    client = make_client(standin, cache)

    async def go(c: LLMClient) -> Any:
        first = await c.chat(USER, stage="judge", salt="run-0")
        second = await c.chat(USER, stage="judge", salt="run-0")
        assert standin.count("chat") == 1
        third = await c.chat(USER, stage="judge", salt="run-1")
        return first, second, third

    first, second, third = call(client, go)
    assert not first.cached and second.cached and second.text == first.text and not third.cached
    assert standin.count("chat") == 2
    judge = client.ledger.stage("judge")
    assert judge.calls == 3 and judge.cached_calls == 1
    assert judge.paid_prompt_tokens == first.usage.prompt_tokens + third.usage.prompt_tokens
    assert judge.prompt_tokens == judge.paid_prompt_tokens + second.usage.prompt_tokens
    paid_only = UsageLedger(LLMSettings().prices).cost_of(
        "gpt-4o-mini", Usage(judge.paid_prompt_tokens, judge.paid_completion_tokens)
    )
    assert judge.cost_usd == pytest.approx(paid_only)
    cache.close()


def test_cache_key_is_the_whole_request_plus_salt() -> None:
    base = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0}
    assert request_key(base, "") == request_key(dict(reversed(list(base.items()))), "")
    assert request_key(base, "a") != request_key(base, "b")
    assert request_key(base, "") != request_key({**base, "temperature": 0.5}, "")


def test_cache_survives_a_new_client_and_replays_repairs(standin: StandinServer, tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    standin.script(['{"facts": oops', ToolCall({"facts": ["Rex"], "action": "ADD"})])
    cache = ResponseCache(path)
    first = call(make_client(standin, cache), lambda c: c.structured(USER, FACTS, stage="ingest"))
    del cache  # no close(): as if the process had died (every put is committed)
    assert standin.count("chat") == 2
    again = ResponseCache(path)
    client = make_client(standin, again)
    second = call(client, lambda c: c.structured(USER, FACTS, stage="ingest"))
    assert second.data == first.data and second.cached and second.repairs == 1
    assert standin.count("chat") == 2  # the malformed reply and its repair both came from the cache
    assert client.ledger.stage("ingest").cached_calls == 2 and client.ledger.total_cost() == 0.0
    again.close()


def test_cache_puts_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    code = (
        "import os, signal, numpy as np\n"
        "from mem0bench.llm.cache import ResponseCache\n"
        f"c = ResponseCache({str(path)!r})\n"
        "c.put_chat('k1', {'content': 'paid for', 'usage': {'prompt_tokens': 3}})\n"
        "c.put_many('m', ['t'], np.ones((1, 4), dtype=np.float32))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=60)
    assert result.returncode == -signal.SIGKILL
    with ResponseCache(path) as cache:
        assert cache.get_chat("k1") == {"content": "paid for", "usage": {"prompt_tokens": 3}}
        assert np.array_equal(cache.get_many("m", ["t", "u"])[0], np.ones(4, dtype=np.float32))


# ---- concurrency and rate limits -----------------------------------------------------------------------------
def test_max_concurrency_is_respected(standin: StandinServer) -> None:
    standin.configure(latency_ms=60)
    client = make_client(standin, max_concurrency=3)

    async def go(c: LLMClient) -> Any:
        with timing.measure() as t:
            await asyncio.gather(
                *(c.chat([{"role": "user", "content": f"q{i}"}], stage="answer") for i in range(12))
            )
        return t

    t = call(client, go)
    # The limit is an upper bound; how many calls overlap below it depends on the machine's load.
    assert 1 <= standin.max_in_flight <= 3 and standin.count("chat", 200) == 12
    assert t.wait_s > 0


def test_requests_per_minute_limit(standin: StandinServer) -> None:
    client = make_client(standin, rpm=1200)  # 20/s, bursts of 20

    async def go(c: LLMClient) -> Any:
        with timing.measure() as t:
            await asyncio.gather(
                *(c.chat([{"role": "user", "content": f"q{i}"}], stage="answer") for i in range(30))
            )
        return t

    started = time.perf_counter()
    call(client, go)
    # The 30th request cannot leave before 0.5 s (20 at once, then 20 a second): a bound, not a timing. How
    # much of it the scope records as waiting depends on what else was in flight (tests/test_call_timing.py
    # pins that arithmetic), so it is not asserted here.
    assert time.perf_counter() - started >= 0.45
    # The pacer's own sum of waits: the 30th request alone, asked for at the start, waits about 0.5 s.
    assert client.pacer.waited_s >= 0.45
    assert standin.count("chat", 200) == 30


# ---- embeddings -----------------------------------------------------------------------------------------------
def test_embeddings_normalized_cached_and_batched(standin: StandinServer, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    backend = OpenAIEmbeddingBackend("text-embedding-3-small", batch_size=4)
    client = make_client(standin, cache, embedder=backend)
    texts = [f"fact number {i} about dogs" for i in range(10)]

    async def go(c: LLMClient) -> Any:
        a = await c.embed([*texts, texts[0]], stage="ingest")
        n_first = standin.count("embeddings")
        b = await c.embed(
            ["Caroline adopted a dog", texts[3], "Caroline adopted a puppy", "quantum tax law"],
            stage="search",
        )
        empty = await c.embed([], stage="search")
        return a, n_first, b, empty

    a, n_first, b, empty = call(client, go)
    assert a.dtype == np.float32 and a.shape == (11, 1536)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(a[0], a[10])
    assert n_first == 3  # 10 distinct texts in batches of 4
    inputs = [body["input"] for ep, body in standin.requests if ep == "embeddings"]
    assert sorted(len(i) for i in inputs[:3]) == [2, 4, 4]
    assert inputs[3] == ["Caroline adopted a dog", "Caroline adopted a puppy", "quantum tax law"]
    assert np.allclose(b[1], a[3], atol=1e-6)
    assert float(b[0] @ b[2]) > float(b[0] @ b[3])
    assert empty.shape == (0, 1536)
    assert client.ledger.stage("ingest").prompt_tokens > 0 and client.ledger.stage("ingest").calls == 3
    cache.close()
    assert stored_rows(tmp_path / "cache.sqlite")["embeddings"] == 13


def test_embedding_dimensions_and_retries(standin: StandinServer) -> None:
    standin.configure(rate_5xx=0.5, seed=3)
    backend = build_embedding_backend(EmbedderSettings(dimensions=64, batch_size=2))
    client = make_client(standin, embedder=backend, max_retries=6)
    out = call(client, lambda c: c.embed(["a b", "c d", "e f", "g h"], stage="ingest"))
    assert out.shape == (4, 64)
    bodies = [body for ep, body in standin.requests if ep == "embeddings"]
    assert all(body["dimensions"] == 64 for body in bodies) and standin.count("embeddings", 200) == 2


# ---- preflight ------------------------------------------------------------------------------------------------
def _one_line_error(client: LLMClient) -> str:
    with pytest.raises(ConfigurationError) as info:
        call(client, lambda c: c.preflight())
    text = str(info.value)
    assert "\n" not in text and SECRET not in text
    return text


def test_preflight_ok(standin: StandinServer) -> None:
    call(make_client(standin), lambda c: c.preflight())
    standin.configure(models_endpoint=False)  # a server without /models: the check is skipped
    call(make_client(standin, model="anything"), lambda c: c.preflight())


def test_preflight_without_a_key_for_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    text = _one_line_error(LLMClient(LLMSettings(), None, None, None))
    assert text.startswith("OPENAI_API_KEY is not set") and "OPENAI_BASE_URL" in text


def test_preflight_local_server_needs_no_key(standin: StandinServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", standin.base_url)
    call(LLMClient(LLMSettings(), None, None, None), lambda c: c.preflight())


def test_preflight_unreachable_server() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = LLMClient(LLMSettings(base_url=f"http://127.0.0.1:{port}/v1", api_key=SECRET))
    text = _one_line_error(client)
    assert (
        text.startswith(f"cannot reach the LLM server at http://127.0.0.1:{port}/v1")
        and "is it running" in text
    )


def test_preflight_unknown_models(standin: StandinServer) -> None:
    text = _one_line_error(make_client(standin, model="gpt-9-turbo"))
    assert text.startswith(f"model 'gpt-9-turbo' is not served by {standin.base_url}; available:")
    assert "gpt-4o-mini" in text
    client = make_client(standin, embedder=OpenAIEmbeddingBackend("text-embedding-9"))
    assert "model 'text-embedding-9'" in _one_line_error(client)


def test_preflight_rejected_key(standin: StandinServer) -> None:
    standin.configure(api_key="the-right-key")
    text = _one_line_error(make_client(standin))
    assert "rejected the API key (HTTP 401)" in text and "OPENAI_API_KEY" in text


def test_the_key_never_reaches_the_cache_file(standin: StandinServer, tmp_path: Path) -> None:
    standin.configure(api_key=SECRET)
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)

    async def go(c: LLMClient) -> None:
        await c.preflight()
        await c.chat(USER, stage="answer")
        await c.structured(USER, FACTS, stage="ingest")
        await c.embed(["one", "two"], stage="ingest")

    call(make_client(standin, cache), go)
    files = list(tmp_path.iterdir())
    data = b"".join(f.read_bytes() for f in files)
    assert SECRET.encode() not in data
    cache.close()
    assert stored_rows(path) == {"chat": 2, "embeddings": 2}
    assert SECRET.encode() not in path.read_bytes()
