"""One pacer per model (issue 35, item 1's follow-up): OpenAI's rate limits are per model, so the chat
model's budget (`llm.rpm` / `llm.tpm`, its replies' headers) does not hold back the embedding model's
requests, and each model's pacer reads only its own replies' `x-ratelimit-*` figures. Over real HTTP."""

from __future__ import annotations

import asyncio
import time

from devtools.e2e import TEST_KEY
from devtools.standin.server import StandinServer
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.settings import LLMSettings

EMBED = "text-embedding-3-small"


def _client(server: StandinServer, **extra: float) -> LLMClient:
    settings = LLMSettings(base_url=server.base_url, api_key=TEST_KEY, timeout_s=5.0, **extra)  # type: ignore[arg-type]
    return LLMClient(settings, OpenAIEmbeddingBackend(EMBED))


async def _chat_then_embed(client: LLMClient) -> float:
    """One chat call (the whole budget of llm.rpm=2), then three embedding requests; -> their seconds."""
    try:
        await client.chat([{"role": "user", "content": "hello there"}], stage="answer")
        started = time.perf_counter()
        for n in range(3):
            await client.embed([f"text number {n}"], stage="search")
        return time.perf_counter() - started
    finally:
        await client.aclose()


def test_the_chat_budget_does_not_hold_back_embeddings():
    with StandinServer(api_key=TEST_KEY) as server:
        client = _client(server, rpm=2.0)  # one request now, the next in 30 s: for the chat model only
        took = asyncio.run(_chat_then_embed(client))
        assert server.count("embeddings", 200) == 3
    assert took < 5.0  # one shared pacer would hold each embedding request ~30 s
    assert client.pacer.sent == 1 and client.pacer_for(EMBED).sent == 3
    assert client.pacer_for(EMBED) is not client.pacer and client.pacer_for(None) is client.pacer
    assert client.pacer_for("gpt-4o-mini") is client.pacer  # llm.model's pacer has llm.rpm / llm.tpm
    assert client.pacer_for(EMBED).requests.rate is None  # llm.rpm is not the embedding model's budget


def test_each_pacer_reads_its_own_models_headers():
    # The stand-in allows 2 requests a 1 s window and says so in its headers: the embedding pacer learns
    # that from its own replies and waits before its third request; the chat pacer (one request) never waits.
    with StandinServer(api_key=TEST_KEY, ratelimit=(2, 200_000), ratelimit_window_s=1.0) as server:
        client = _client(server)
        asyncio.run(_chat_then_embed(client))
        assert server.count("embeddings", 429) == 0
    # Both learnt the server's figures, each from its own replies (the stand-in's headers are per server).
    assert client.pacer.requests.server_limit == 2 and client.pacer_for(EMBED).requests.server_limit == 2
    assert client.pacer.answered == 1 and client.pacer_for(EMBED).answered == 3
    assert client.pacer.waited_s == 0.0 and client.pacer_for(EMBED).waited_s > 0.3
    # The closing line sums every model's pacer: the embedding waits, and all four requests.
    summary = client.pacing_summary()
    assert summary is not None and "of 4 requests answered 429" in summary, summary
