"""A text longer than the embedding model reads is embedded in windows, never silently truncated (issue 8).

OpenAI's embedding models refuse inputs over 8,191 tokens; MiniLM ignores everything after 256 word pieces.
The paper's RAG grid goes up to 8,192-token chunks, so it must run with the OpenAI embedder.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import numpy as np
import pytest

from devtools.standin.server import HTTPError, StandinServer
from mem0bench.data.model import Conversation, Question, Session, Turn
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OPENAI_MAX_INPUT_TOKENS, OpenAIEmbeddingBackend
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.windows import Tokenizer, merge_windows, plan_windows, split_text
from mem0bench.memory.base import SystemContext
from mem0bench.suites.locomo import SINGLE_HOP
from mem0bench.systems.baselines import RAG
from mem0bench.tokens import count_tokens

KEY = "test-fake-windows-key-0001"


def _words(text: str) -> list[int]:
    """Start of each whitespace-separated word: a toy tokenizer for the unit tests."""
    starts, inside = [], False
    for i, ch in enumerate(text):
        if not ch.isspace() and not inside:
            starts.append(i)
        inside = not ch.isspace()
    return starts


def test_split_text_covers_the_text_in_windows_within_the_limit():
    text = " ".join(f"w{i}" for i in range(25))
    tokenizer = Tokenizer(starts=_words, limit=10)
    pieces = split_text(text, tokenizer)
    assert "".join(pieces) == text
    assert [tokenizer.count(p) for p in pieces] == [10, 10, 5]
    assert split_text("a b c", tokenizer) == ["a b c"]


def test_merge_weights_windows_by_their_tokens():
    tokenizer = Tokenizer(starts=_words, limit=3)
    plan = plan_windows(["a b c d", "e"], tokenizer)  # windows "a b c " (3) and "d" (1); "e" whole
    assert plan.pieces == ["a b c ", "d", "e"] and plan.owners == [0, 0, 1]
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], dtype=np.float32)
    merged = merge_windows(vectors, plan)
    assert merged.tolist() == [[0.75, 0.25], [0.5, 0.5]]


def _refuse_long_inputs(endpoint: str, body: dict):
    """What OpenAI does: an input over 8,191 tokens is a 400, not a truncation."""
    if endpoint == "embeddings" and any(count_tokens(t) > OPENAI_MAX_INPUT_TOKENS for t in body["input"]):
        return HTTPError(400, message="maximum input length is 8191 tokens")
    return None


def _client(server: StandinServer) -> LLMClient:
    settings = LLMSettings(base_url=server.base_url, api_key=KEY, timeout_s=10.0, max_retries=0)
    return LLMClient(settings, OpenAIEmbeddingBackend("text-embedding-3-small"), None)


def test_openai_backend_sends_long_texts_in_windows():
    long_text = " ".join(f"topic{i % 97} detail{i}" for i in range(6000))  # ~30k cl100k tokens
    assert count_tokens(long_text) > 2 * OPENAI_MAX_INPUT_TOKENS

    async def go(server: StandinServer) -> np.ndarray:
        client = _client(server)
        try:
            return await client.embed([long_text, "a short memory"], stage="ingest")
        finally:
            await client.aclose()

    with StandinServer(api_key=KEY) as server:
        server.set_handler(_refuse_long_inputs)
        vectors = asyncio.run(go(server))
        inputs = [t for endpoint, body in server.requests if endpoint == "embeddings" for t in body["input"]]
    assert vectors.shape == (2, 1536)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert "a short memory" in inputs
    windows = [t for t in inputs if t != "a short memory"]
    needed = -(-count_tokens(long_text) // OPENAI_MAX_INPUT_TOKENS)
    assert needed <= len(windows) <= needed + 1 and "".join(windows) == long_text
    assert all(count_tokens(w) <= OPENAI_MAX_INPUT_TOKENS for w in windows)


def test_rag_with_8192_token_chunks_runs_with_the_openai_embedder(tmp_path):
    # One turn of ~20k tokens: RAG cuts it into pieces of up to 8,192 tokens, one more than OpenAI reads.
    words = " ".join(f"story{i % 89} part{i}" for i in range(6000))
    turns = (Turn("Alice", "D1:1", words), Turn("Bob", "D1:2", "I adopted a telescope named Orion."))
    session = Session(1, datetime(2023, 5, 1, 13, 56), "1:56 pm on 1 May, 2023", turns)
    question = Question("q0", "conv-w", 0, "What is the telescope called?", "Orion", SINGLE_HOP)
    conversation = Conversation("conv-w", "Alice", "Bob", (session,), (question,))

    async def go(server: StandinServer):
        client = _client(server)
        try:
            rag = RAG(context=SystemContext(client=client, state_dir=tmp_path), chunk_size=8192, k=1)
            await rag.ingest(conversation)
            return rag._indexes["conv-w"].chunks, await rag.retrieve(conversation, question)
        finally:
            await client.aclose()

    with StandinServer(api_key=KEY) as server:
        server.set_handler(_refuse_long_inputs)
        chunks, context = asyncio.run(go(server))
        assert server.count("embeddings", status=400) == 0
    assert max(c.tokens for c in chunks) > OPENAI_MAX_INPUT_TOKENS  # the case that used to be refused
    assert context.text


@pytest.mark.minilm
def test_minilm_reads_past_its_256_word_pieces():
    from mem0bench.llm.embedders import MiniLMEmbeddingBackend

    backend = MiniLMEmbeddingBackend()
    try:
        backend.check_available()
    except Exception as exc:  # noqa: BLE001 - the [local] extra is not installed: a failure, never a skip
        pytest.fail(str(exc), pytrace=False)
    head = "We talked about the weather and the traffic on the way to work today. " * 25  # > 256 pieces
    tail = "Caroline adopted a golden retriever puppy named Rex from the animal shelter."
    assert backend.max_input_tokens == 254

    async def go() -> np.ndarray:
        vectors, _ = await backend.embed_batch([head, head + tail, tail])
        return vectors

    vectors = asyncio.run(go())
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    head_v, long_v, tail_v = vectors
    # Truncated, head + tail would embed exactly as head: the tail would be invisible to retrieval.
    assert float(head_v @ long_v) < 0.999
    assert float(long_v @ tail_v) > float(head_v @ tail_v) + 0.05
