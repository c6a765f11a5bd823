"""The one LLM client: every chat and embedding call of mem0bench goes through here.

CONTRACT (implemented by the llm package; other packages rely only on this surface):

    client = LLMClient(settings: LLMSettings, embedder: EmbeddingBackend, cache: ResponseCache | None,
                       ledger: UsageLedger)
    await client.chat(messages, *, stage, salt="", model=None, temperature=None, max_tokens=None) -> ChatReply
    await client.structured(messages, spec: StructuredSpec, *, stage, salt="", model=None) -> StructuredReply
    await client.embed(texts: Sequence[str], *, stage) -> np.ndarray  # float32, shape (n, dim), L2-normalized
    client.ledger -> UsageLedger  (per-stage calls, cached calls, tokens, failures, cost)
    await client.preflight() -> None  # raises ConfigurationError with one clear line
    await client.aclose()

Failures after bounded retries raise `LLMCallError(CallFailure)`; nothing else escapes a call.

How a call runs
---------------
1. The request body is built once and serialized once (canonical JSON); the cache key is
   sha256(body + "\\0" + salt). The API key is not part of it.
2. Cache lookup: a hit returns the stored raw reply (recorded as a cached call: tokens, no cost).
3. Otherwise: a slot of the concurrency pool (`slots.PrioritySlots`: ingest calls of the conversations with
   the most ingest left first, then answers, judgements and the latency pass), then the pacer (`llm.rpm` / `llm.tpm` and the server's
   `x-ratelimit-*` figures; both counted as wait time in `timing`), then one HTTP POST sent by
   `transport.JsonTransport` over httpx2's keep-alive connections (counted as network time). `retry`
   decides: 429 (honouring Retry-After / retry-after-ms), 5xx, 408/409/425 and unreadable replies are
   retried up to `max_retries` with exponential backoff and full jitter; resets and timeouts as long as the outage is shorter than `unreachable_after_s`; other 4xx
   fail at once (`bad_request`). The server's `x-ratelimit-*` headers are kept (`rate_limits`) and pace
   the next requests (`pacer`: its waits and 429s make the closing summary's pacing line).
4. The raw reply of every HTTP 200 is cached before it is validated.
5. Structured calls validate against the JSON schema; a bad reply (invalid JSON, schema violation, no tool
   call) gets up to `repair_attempts` extra calls that show the model its output and the exact error; an
   empty reply (no choices / no content) is re-asked, bypassing the cache, from the same budget.

One client per event loop (its slot pool, limiter and HTTP pool belong to the loop that first uses them).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.text import one_line
from mem0bench.llm import timing
from mem0bench.llm.batch import BatchLineError, BatchQueue
from mem0bench.llm.cache import ResponseCache
from mem0bench.llm.embedders import EmbeddingBackend, OpenAIEmbeddingBackend, build_embedding_backend
from mem0bench.llm.ledger import UsageLedger
from mem0bench.llm.payloads import (
    chat_payload,
    encode_body,
    json_object_instruction,
    request_key,
    structured_request,
)
from mem0bench.llm.preflight import PREFLIGHT_TIMEOUT_S, run_preflight
from mem0bench.llm.ratelimit import Pacer, ServerLimits, estimate_tokens, pacing_summary
from mem0bench.llm.reachability import ReachabilityWatch
from mem0bench.llm.replies import (
    SchemaChecker,
    add_usage,
    parse_structured,
    raw_reply,
    reply_usage,
)
from mem0bench.llm.retry import (
    MAX_RETRY_AFTER_S,
    Retryable,
    RetryPolicy,
    call_with_retries,
    parse_retry_after,
)
from mem0bench.llm.sampling import Sampling
from mem0bench.llm.settings import EmbedderSettings, LLMSettings
from mem0bench.llm.slots import PrioritySlots
from mem0bench.llm.transport import HTTPStatusError, JsonTransport, forget_reply_limits, reply_limits
from mem0bench.llm.types import (
    CallFailure,
    ChatReply,
    LLMCallError,
    Message,
    StructuredReply,
    StructuredSpec,
    Usage,
)
from mem0bench.tokens import count_tokens

# parse_retry_after, MAX_RETRY_AFTER_S and PREFLIGHT_TIMEOUT_S are re-exported: they used to live here.
__all__ = [
    "LLMClient",
    "MAX_RETRY_AFTER_S",
    "PLACEHOLDER_API_KEY",
    "PREFLIGHT_TIMEOUT_S",
    "live_calls",
    "parse_retry_after",
]

T = TypeVar("T")

PLACEHOLDER_API_KEY = "not-needed"
"""Sent to non-OpenAI servers when no key is configured (local servers ignore it)."""


_live: ContextVar[bool] = ContextVar("mem0bench_live_calls", default=False)


@contextmanager
def live_calls() -> Iterator[None]:
    """Calls made inside this block (in this task and the tasks it starts, the bridge's included) go to
    the server: the cache neither answers them nor keeps their replies.

    For timing a system as a user would see it (the isolated latency pass): a cached reply takes
    microseconds, and a re-measured reply must not replace the one the run's answers were made from.
    Scoped to the calls made inside, not to the client: the other calls of the process keep the cache."""
    token = _live.set(True)
    try:
        yield
    finally:
        _live.reset(token)


class LLMClient:
    """Chat, structured output and embeddings with retries, rate limits, caching and accounting.

    Args:
        settings: the LLM settings (model, server, retry / concurrency / rate-limit policy, prices).
        embedder: the embedding backend; an unbound `OpenAIEmbeddingBackend` is bound to this client's
            `AsyncOpenAI` instance. None: `embed()` raises `ConfigurationError`.
        cache: a `ResponseCache`, or None to disable caching.
        ledger: where usage is recorded; a new `UsageLedger(settings.prices)` when None (free of charge
            when the server is not OpenAI's and `settings.price_any_server` is false).
    """

    def __init__(
        self,
        settings: LLMSettings,
        embedder: EmbeddingBackend | None = None,
        cache: ResponseCache | None = None,
        ledger: UsageLedger | None = None,
    ) -> None:
        self.settings = settings
        self.base_url = settings.resolve_base_url()
        key = settings.resolve_api_key()
        self._has_key = key is not None
        self._secret = key  # only for scrubbing error text; never logged or stored
        self._transport = JsonTransport(
            self.base_url,
            key or PLACEHOLDER_API_KEY,
            timeout_s=settings.timeout_s,
            max_connections=settings.max_concurrency,
        )
        self.embedder = embedder
        if isinstance(embedder, OpenAIEmbeddingBackend) and not embedder.bound:
            embedder.bind(self._transport)
        self.cache = cache
        self._owns_cache = False
        if ledger is None:
            ledger = UsageLedger(settings.prices, free=not settings.priced())
        self.ledger = ledger
        if embedder is not None and not getattr(embedder, "remote", True):
            self.ledger.mark_free(embedder.model)
        self.slots = PrioritySlots(settings.max_concurrency)
        """`llm.max_concurrency` requests at once; queued calls served by priority (`llm.slots`)."""
        self.pacer = Pacer(settings.rpm, settings.tpm, settings.max_concurrency)
        """Keeps the chat model's request and token rate under its budget (`llm.rpm` / `llm.tpm`, the server's
        headers); every other model has its own (`pacer_for`)."""
        self._pacers: dict[str, Pacer] = {settings.model: self.pacer}
        self._checker = SchemaChecker()
        self.on_failure: Callable[[CallFailure], None] | None = None
        """Called with every call that failed for good, before `LLMCallError` is raised; may raise."""
        self.reachability = ReachabilityWatch(self.base_url, settings.unreachable_after_s)
        self.retry_cached_failures = False
        """run.retry_failed=true: a reply from the cache that fails again (malformed, empty) is asked for
        once more, bypassing the cache; the new reply replaces the cached one."""
        self._random = random.Random()
        self._policy = RetryPolicy(settings.max_retries, settings.backoff_base_s, settings.backoff_max_s)
        self.batch: BatchQueue | None = None
        """`llm.batch=true`: where the answer and judge stages' requests go (`use_batches`); None: online."""

    def use_batches(
        self, append: Callable[[dict[str, Any]], None] | None = None, rows: Sequence[dict[str, Any]] = (),
        *, progress: bool = True,
    ) -> BatchQueue:  # fmt: skip
        """Send the batched stages' requests through the Batch API (`llm.batch`); `append` / `rows`: the run
        folder's `batches.jsonl` writer and earlier rows (see `llm.batch`)."""
        self.batch = BatchQueue(self, append=append, rows=rows, progress=progress)
        return self.batch

    def pacer_for(self, model: str | None) -> Pacer:
        """The pacer of `model`'s requests. OpenAI's rate limits are per model, so each model has its own:
        `llm.rpm` / `llm.tpm` are the chat model's (`llm.model`) budget; the embedding model and any other
        (another judge model) are paced by their own replies' `x-ratelimit-*` headers only."""
        if model is None or model == self.settings.model:
            return self.pacer
        pacer = self._pacers.get(model)
        if pacer is None:
            pacer = self._pacers[model] = Pacer(None, None, self.settings.max_concurrency)
        return pacer

    def pacing_summary(self) -> str | None:
        """The closing summary's pacing line, over every model's pacer."""
        return pacing_summary(self._pacers.values())

    @property
    def rate_limits(self) -> ServerLimits | None:
        """The server's latest `x-ratelimit-*` account of its limits (None until a reply carried one)."""
        return self._transport.rate_limits

    @classmethod
    def from_settings(
        cls,
        settings: LLMSettings,
        embedder_settings: EmbedderSettings | None = None,
        *,
        cache_path: str | Path | None = None,
        ledger: UsageLedger | None = None,
    ) -> LLMClient:
        """Build the embedder and the cache too; the client then owns (and closes) the cache."""
        embedder = build_embedding_backend(embedder_settings) if embedder_settings is not None else None
        cache = ResponseCache(cache_path) if cache_path is not None else None
        client = cls(settings, embedder, cache, ledger)
        client._owns_cache = cache is not None
        return client

    def __repr__(self) -> str:
        return f"LLMClient(model={self.settings.model!r}, base_url={self.base_url!r})"

    # ---- plumbing ----------------------------------------------------------------------------------
    def _scrub(self, text: str) -> str:
        text = one_line(text)
        if self._secret and self._secret in text:
            text = text.replace(self._secret, "***")
        return text

    def _failure(self, stage: str, kind: str, message: str, attempts: int) -> LLMCallError:
        self.ledger.record_failure(stage, kind)
        failure = CallFailure(stage=stage, kind=kind, message=self._scrub(message), attempts=attempts)  # type: ignore[arg-type]
        if self.on_failure is not None:
            self.on_failure(failure)  # may raise instead (run.strict=true stops at the first failure)
        return LLMCallError(failure)

    async def _with_retries(
        self, stage: str, send: Callable[[], Awaitable[T]], est_tokens: int, model: str | None = None
    ) -> tuple[T, int]:
        """Run `send` under the semaphore and `model`'s pacer, retrying transient failures; -> (result,
        attempts)."""
        pacer = self.pacer_for(model)

        async def paced() -> T:
            throttled = False
            forget_reply_limits()
            try:
                return await send()
            except HTTPStatusError as exc:
                throttled = exc.status_code == 429
                raise
            finally:  # this request's reply's (or 429's) x-ratelimit-* figures: its model's budget
                pacer.release(reply_limits(), throttled=throttled)

        def give_up(problem: Retryable, attempts: int) -> LLMCallError:
            return self._failure(stage, problem.kind, problem.message, attempts)

        return await call_with_retries(
            paced,
            policy=self._policy,
            watch=self.reachability,
            slots=self.slots,
            give_up=give_up,
            pace=lambda: pacer.acquire(est_tokens),
            on_retry=lambda: self.ledger.record_retry(stage),
            rng=self._random,
            scrub=self._scrub,
        )

    async def _complete(
        self, payload: dict[str, Any], stage: str, salt: str, *, bypass_cache: bool = False
    ) -> tuple[dict[str, Any], bool, int]:
        """One chat completion (cache first); -> (raw reply, cached?, HTTP attempts)."""
        self.ledger.record_sampling(stage, Sampling.of_request(payload))
        body = encode_body(payload)
        cache = None if _live.get() else self.cache
        key = None
        if cache is not None:
            key = request_key(body, salt)
            if not bypass_cache:
                raw = cache.get_chat(key)
                if raw is not None:
                    usage = reply_usage(raw)
                    self.ledger.record(stage, payload["model"], usage, cached=True)
                    timing.add_usage(stage, usage.prompt_tokens, usage.completion_tokens)
                    timing.add_cached()
                    return raw, True, 0
        if self.batch is not None and self.batch.takes(stage) and not _live.get():
            key = key or request_key(body, salt)
            return await self._complete_batched(payload, stage, key, body, fresh=bypass_cache)
        pacer = self.pacer_for(payload["model"])
        # Counting a prompt costs ~1 ms per 2,000 tokens: only while a budget is known, or may be soon.
        est = estimate_tokens(payload, pacer.completion_mean) if pacer.active or not pacer.answered else 0
        reply, attempts = await self._with_retries(
            stage, lambda: self._transport.post("/chat/completions", body), est, payload["model"]
        )
        try:
            raw = raw_reply(reply)
        except (ValueError, TypeError, AttributeError) as exc:
            raise self._failure(stage, "malformed", f"unreadable reply body: {exc}", attempts) from None
        if cache is not None and key is not None:
            cache.put_chat(key, raw)
        usage = reply_usage(raw)
        pacer.learn_completion(usage.completion_tokens)
        self.ledger.record(stage, payload["model"], usage, cached=False)
        timing.add_usage(stage, usage.prompt_tokens, usage.completion_tokens)
        return raw, False, attempts

    async def _complete_batched(
        self, payload: dict[str, Any], stage: str, key: str, body: bytes, *, fresh: bool
    ) -> tuple[dict[str, Any], bool, int]:
        """`_complete` through the Batch API: the queue caches and prices the reply (`llm.batch`)."""
        assert self.batch is not None
        started = time.perf_counter()
        try:
            raw, attempts = await self.batch.send(stage, payload["model"], key, body, fresh=fresh)
        except BatchLineError as exc:
            raise self._failure(stage, exc.kind, exc.message, exc.attempts) from None
        finally:
            # Minutes to hours in a queue, not the model's time: counted as waiting, so that latency
            # figures leave it out (a batched reply has no latency of its own to measure).
            timing.add_wait(time.perf_counter() - started)
        usage = reply_usage(raw)
        timing.add_usage(stage, usage.prompt_tokens, usage.completion_tokens)
        return raw, False, attempts

    # ---- chat ----------------------------------------------------------------------------------------
    async def chat(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        salt: str = "",
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatReply:
        """A plain text completion. An empty reply is re-asked (within `repair_attempts`), then kind "empty"."""
        payload = chat_payload(self.settings, messages, model, temperature, max_tokens)
        usage = Usage()
        attempts = 0
        for fresh in self._passes():
            if fresh:
                self.ledger.record_fresh_retry(stage)
            all_cached = True
            for round_ in range(self.settings.repair_attempts + 1):
                raw, cached, n = await self._complete(payload, stage, salt, bypass_cache=fresh or round_ > 0)
                attempts += max(n, 1)
                usage = add_usage(usage, reply_usage(raw))
                all_cached = all_cached and cached
                text = raw.get("content")
                if raw.get("choices") and isinstance(text, str) and text.strip():
                    return ChatReply(text=text, usage=usage, cached=all_cached)
                if round_ < self.settings.repair_attempts:
                    self.ledger.record_repair(stage)
            if not all_cached:
                break
        problem = "the reply had no choices" if not raw.get("choices") else "the reply had no text content"
        raise self._failure(stage, "empty", problem, attempts)

    async def forward_chat(self, body: dict[str, Any], *, stage: str) -> tuple[dict[str, Any], bool]:
        """A third-party library's chat request, sent as the library built it (its messages, tools,
        response format, sampling settings, `logprobs` / `top_logprobs` / `logit_bias`: all part of the
        body, so of the cache key) but with this client's model, through the same cache, retries, rate
        limits and ledger as every other call; -> (raw reply, served from the cache?). The raw reply keeps
        the server's logprobs when it gave them (`replies.raw_reply`), so a cached replay returns them.

        Nothing is re-asked here: an empty or unparsable reply goes back to the library, whose own
        handling of it is what is being benchmarked (the adapters count what it swallowed)."""
        payload = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        payload["model"] = self.settings.model
        raw, cached, _ = await self._complete(payload, stage, "")
        return raw, cached

    # ---- structured ------------------------------------------------------------------------------------
    async def structured(
        self,
        messages: Sequence[Message],
        spec: StructuredSpec,
        *,
        stage: str,
        salt: str = "",
        model: str | None = None,
    ) -> StructuredReply:
        """A reply that validates against `spec.parameters` (a function call, or a JSON-schema response).

        The spec's own mode wins (the judge sets `judge.mode`); a spec without one uses `llm.structured`.
        """
        self._checker.compiled(spec)  # a schema we cannot check fails here, before a request is paid for
        if spec.mode is None:
            spec = dataclasses.replace(spec, mode=self.settings.structured)
        if spec.mode == "json_object":
            messages = [*messages, json_object_instruction(spec)]
        payload = chat_payload(self.settings, messages, model, None, None)
        fields, ask = structured_request(spec)
        payload.update(fields)
        first = payload
        usage = Usage()
        attempts = 0
        kind, error = "malformed", ""
        for fresh in self._passes():
            if fresh:
                self.ledger.record_fresh_retry(stage)
            payload = first
            history = payload["messages"]
            all_cached = True
            bypass = fresh  # a fresh pass asks past the cache, repairs included
            for round_ in range(self.settings.repair_attempts + 1):
                raw, cached, n = await self._complete(payload, stage, salt, bypass_cache=bypass)
                attempts += max(n, 1)
                usage = add_usage(usage, reply_usage(raw))
                all_cached = all_cached and cached
                data, kind, error, bad = parse_structured(raw, spec, self._checker)
                if data is not None:
                    return StructuredReply(data=data, usage=usage, cached=all_cached, repairs=round_)
                if round_ == self.settings.repair_attempts:
                    break
                self.ledger.record_repair(stage)
                if kind == "empty":
                    bypass = True  # the same request again; the cached reply is the empty one
                    continue
                bypass = fresh
                history = [
                    *history,
                    {"role": "assistant", "content": bad},
                    {"role": "user", "content": f"Your previous output was invalid: {error}. {ask}"},
                ]
                payload = {**payload, "messages": history}
            if not all_cached:
                break  # this failure was paid for just now: asking again is the next run's business
        raise self._failure(stage, kind or "malformed", error, attempts)

    def _passes(self) -> tuple[bool, ...]:
        """Whether each pass at a call asks past the cache: one pass; with `retry_cached_failures`, a
        second, fresh one when the first failed on cached replies only."""
        return (False, True) if self.retry_cached_failures else (False,)

    # ---- embeddings ----------------------------------------------------------------------------------
    def _require_embedder(self) -> EmbeddingBackend:
        if self.embedder is None:
            raise ConfigurationError("this LLMClient has no embedding backend (pass embedder=...)")
        return self.embedder

    async def _embed_misses(self, texts: list[str], stage: str) -> np.ndarray:
        backend = self._require_embedder()
        model = backend.model
        if getattr(backend, "remote", True):
            est = sum(len(t) for t in texts) // 4 + 1

            async def send() -> tuple[np.ndarray, int]:
                return await backend.embed_batch(texts)

            (vectors, tokens), _ = await self._with_retries(stage, send, est, model)
        else:
            try:
                vectors, tokens = await backend.embed_batch(texts)
            except ConfigurationError:
                raise
            except Exception as exc:  # a local model failure: report, do not crash the run
                raise self._failure(stage, "local_error", f"local embedding failed: {exc}", 1) from None
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise self._failure(stage, "malformed", f"embedding backend returned shape {vectors.shape}", 1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms > 0, norms, 1.0)
        self.ledger.record(stage, model, Usage(prompt_tokens=int(tokens)), cached=False)
        if backend.dim is None:
            backend.dim = int(vectors.shape[1])
        return vectors

    async def embed(self, texts: Sequence[str], *, stage: str) -> np.ndarray:
        """L2-normalized float32 vectors, shape (len(texts), dim), in input order; cached per text."""
        backend = self._require_embedder()
        texts = list(texts)
        # What the work needed, cached or not: cl100k_base counts (text-embedding-3's own encoding).
        timing.add_usage(f"{stage}_embedding", sum(count_tokens(t) for t in texts), 0)
        if not texts:
            if backend.dim is None:
                await self._embed_misses(["dimension probe"], stage)
            return np.zeros((0, int(backend.dim or 0)), dtype=np.float32)
        cache_id = getattr(backend, "cache_id", backend.model)
        rows: dict[str, list[int]] = {}  # each distinct text's rows in the result
        for row, text in enumerate(texts):
            rows.setdefault(text, []).append(row)
        unique = list(rows)
        # Each vector goes to its rows as it arrives: keeping every batch's vectors and stacking them at
        # the end held the result twice (RAG over a 10M-token conversation: 48,000 chunks, ~0.3 GB each).
        result: list[np.ndarray] = []
        found: set[str] = set()

        def place(text: str, vector: np.ndarray) -> None:
            if not result:
                result.append(np.empty((len(texts), int(vector.shape[0])), dtype=np.float32))
            result[0][rows[text]] = vector
            found.add(text)

        cache = None if _live.get() else self.cache
        if cache is not None:
            for text, vec in zip(unique, cache.get_many(cache_id, unique), strict=True):
                if vec is not None:
                    place(text, vec)
        misses = [t for t in unique if t not in found]
        if not misses:
            self.ledger.record(stage, backend.model, Usage(), cached=True)
            timing.add_cached()  # a partial hit still makes the request: its latency is real
        else:
            size = max(1, int(getattr(backend, "batch_size", 64)))
            batches = [misses[i : i + size] for i in range(0, len(misses), size)]

            async def run(batch: list[str]) -> None:
                vectors = await self._embed_misses(batch, stage)
                if cache is not None:
                    cache.put_many(cache_id, batch, vectors)  # each batch is saved as soon as paid
                for text, vector in zip(batch, vectors, strict=True):
                    place(text, vector)

            if len(batches) == 1:
                # The usual case: no extra task, so no two extra trips through a busy event loop
                # (which the caller's timing would count as its own local time).
                await run(batches[0])
            else:
                await asyncio.gather(*(run(b) for b in batches))
        return result[0]

    # ---- preflight -----------------------------------------------------------------------------------
    async def preflight(self, extra_models: Sequence[str] = ()) -> None:
        """Check key, server and models (the chat model, the embedding model and `extra_models`, e.g. the
        judge's) before any work; raise `ConfigurationError` with one clear line."""
        await run_preflight(
            self._transport,
            self.settings,
            base_url=self.base_url,
            has_key=self._has_key,
            embedder=self.embedder,
            scrub=self._scrub,
            extra_models=extra_models,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections (and the cache, when this client created it)."""
        if self.batch is not None:
            self.batch.close()
        await self._transport.aclose()
        if self._owns_cache and self.cache is not None:
            self.cache.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
