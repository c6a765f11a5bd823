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
3. Otherwise: a slot of the concurrency semaphore, then the RPM/TPM limiter (both counted as wait time in
   `timing`), then one HTTP request through `openai.AsyncOpenAI(max_retries=0)` (counted as network time).
   429 (honouring Retry-After / retry-after-ms), 5xx, 408/409, resets and timeouts are retried up to
   `max_retries` with exponential backoff and full jitter; other 4xx fail at once (`bad_request`).
4. The raw reply of every HTTP 200 is cached before it is validated.
5. Structured calls validate against the JSON schema; a bad reply (invalid JSON, schema violation, no tool
   call) gets up to `repair_attempts` extra calls that show the model its output and the exact error; an
   empty reply (no choices / no content) is re-asked, bypassing the cache, from the same budget.

One client per event loop (its semaphore, limiter and HTTP pool belong to the loop that first uses them).
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import jsonschema
import numpy as np
import openai
from jsonschema.exceptions import best_match

from mem0bench.llm import timing
from mem0bench.llm.cache import ResponseCache
from mem0bench.llm.embedders import EmbeddingBackend, OpenAIEmbeddingBackend, build_embedding_backend
from mem0bench.llm.ledger import UsageLedger
from mem0bench.llm.ratelimit import RateLimiter, estimate_tokens
from mem0bench.llm.settings import EmbedderSettings, LLMSettings
from mem0bench.llm.types import (
    CallFailure,
    ChatReply,
    ConfigurationError,
    LLMCallError,
    Message,
    StructuredReply,
    StructuredSpec,
    Usage,
)
from mem0bench.tokens import count_tokens

__all__ = ["LLMClient", "PLACEHOLDER_API_KEY", "parse_retry_after"]

T = TypeVar("T")

PLACEHOLDER_API_KEY = "not-needed"
"""Sent to non-OpenAI servers when no key is configured (local servers ignore it)."""

PREFLIGHT_TIMEOUT_S = 5.0
MAX_RETRY_AFTER_S = 300.0
_RETRYABLE_STATUS = {408, 409}


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date); None if absent."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


class _Retryable(Exception):
    """Internal: one failed attempt, with its failure kind and an optional server-requested delay."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None, retry: bool = True):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        self.retry = retry


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _strip_fences(text: str) -> str:
    s = text.strip()
    if s.startswith("```"):
        s = s[3:]
        if s[:4].lower() == "json":
            s = s[4:]
        if s.rstrip().endswith("```"):
            s = s.rstrip()[:-3]
    return s.strip()


def _raw_reply(body: Any) -> dict[str, Any]:
    """The parts of a chat completion we keep (and cache): content, tool calls, finish reason, usage."""
    if not isinstance(body, dict):
        raise ValueError("the reply body is not a JSON object")
    choices = body.get("choices") or []
    usage = body.get("usage") or {}
    raw: dict[str, Any] = {
        "choices": len(choices),
        "content": None,
        "tool_calls": [],
        "finish_reason": None,
        "usage": {
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
        },
    }
    if choices:
        choice = choices[0] or {}
        message = choice.get("message") or {}
        raw["content"] = message.get("content")
        raw["finish_reason"] = choice.get("finish_reason")
        for call in message.get("tool_calls") or []:
            fn = (call or {}).get("function") or {}
            raw["tool_calls"].append({"name": fn.get("name"), "arguments": fn.get("arguments")})
    return raw


def _usage(raw: dict[str, Any]) -> Usage:
    u = raw.get("usage") or {}
    return Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(a.prompt_tokens + b.prompt_tokens, a.completion_tokens + b.completion_tokens)


class LLMClient:
    """Chat, structured output and embeddings with retries, rate limits, caching and accounting.

    Args:
        settings: the LLM settings (model, server, retry / concurrency / rate-limit policy, prices).
        embedder: the embedding backend; an unbound `OpenAIEmbeddingBackend` is bound to this client's
            `AsyncOpenAI` instance. None: `embed()` raises `ConfigurationError`.
        cache: a `ResponseCache`, or None to disable caching.
        ledger: where usage is recorded; a new `UsageLedger(settings.prices)` when None.
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
        self._openai = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=key or PLACEHOLDER_API_KEY,
            max_retries=0,
            timeout=settings.timeout_s,
        )
        self.embedder = embedder
        if isinstance(embedder, OpenAIEmbeddingBackend) and not embedder.bound:
            embedder.bind(self._openai)
        self.cache = cache
        self._owns_cache = False
        self.ledger = ledger if ledger is not None else UsageLedger(settings.prices)
        if embedder is not None and not getattr(embedder, "remote", True):
            self.ledger.mark_free(embedder.model)
        self._semaphore = asyncio.Semaphore(settings.max_concurrency)
        self._limiter = RateLimiter(settings.requests_per_minute, settings.tokens_per_minute)
        self._validators: dict[int, tuple[dict[str, Any], Any]] = {}
        self.on_failure: Callable[[CallFailure], None] | None = None
        """Called with every call that failed for good, before `LLMCallError` is raised; may raise."""
        self._random = random.Random()

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

    @property
    def openai(self) -> openai.AsyncOpenAI:
        """The underlying SDK client (max_retries=0): for building an `OpenAIEmbeddingBackend`."""
        return self._openai

    def __repr__(self) -> str:
        return f"LLMClient(model={self.settings.model!r}, base_url={self.base_url!r})"

    # ---- plumbing ----------------------------------------------------------------------------------
    def _scrub(self, text: str) -> str:
        text = _one_line(text)
        if self._secret and self._secret in text:
            text = text.replace(self._secret, "***")
        return text

    def _failure(self, stage: str, kind: str, message: str, attempts: int) -> LLMCallError:
        self.ledger.record_failure(stage, kind)
        failure = CallFailure(stage=stage, kind=kind, message=self._scrub(message), attempts=attempts)  # type: ignore[arg-type]
        if self.on_failure is not None:
            self.on_failure(failure)  # may raise instead (run.strict=true stops at the first failure)
        return LLMCallError(failure)

    def _classify(self, exc: BaseException) -> _Retryable:
        if isinstance(exc, openai.APITimeoutError):
            return _Retryable("timeout", f"request timed out after {self.settings.timeout_s} s")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return _Retryable("connection", f"connection error: {type(cause).__name__}: {cause}")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            msg = f"HTTP {status}: {exc.message}"
            if status == 429:
                return _Retryable("rate_limit", msg, parse_retry_after(exc.response.headers))
            if status >= 500:
                return _Retryable("server_error", msg, parse_retry_after(exc.response.headers))
            if status in _RETRYABLE_STATUS:
                return _Retryable("timeout" if status == 408 else "server_error", msg)
            return _Retryable("bad_request", msg, retry=False)
        if isinstance(exc, ValueError):
            return _Retryable("server_error", f"unreadable reply: {type(exc).__name__}: {exc}")
        raise exc

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER_S)
        s = self.settings
        return self._random.uniform(0.0, min(s.backoff_max_s, s.backoff_base_s * (2 ** (attempt - 1))))

    async def _with_retries(
        self, stage: str, send: Callable[[], Awaitable[T]], est_tokens: int
    ) -> tuple[T, int]:
        """Run `send` under the semaphore and limiter, retrying transient failures; -> (result, attempts)."""
        attempt = 0
        max_retries = self.settings.max_retries
        perf = time.perf_counter
        while True:
            attempt += 1
            queued = perf()
            async with self._semaphore:
                started = perf()
                timing.add_wait(started - queued)
                if not self._limiter.unlimited:
                    timing.add_wait(await self._limiter.acquire(est_tokens))
                    started = perf()
                try:
                    return await send(), attempt
                except (openai.APIError, ValueError) as exc:
                    problem = self._classify(exc)
                finally:
                    timing.add_network(perf() - started)
            if not problem.retry or attempt > max_retries:
                raise self._failure(stage, problem.kind, problem.message, attempt)
            self.ledger.record_retry(stage)
            delay = self._backoff(attempt, problem.retry_after)
            if delay > 0:
                await asyncio.sleep(delay)
                timing.add_wait(delay)

    async def _post_json(self, path: str, content: bytes) -> Any:
        response = await self._openai.post(path, cast_to=httpx2.Response, content=content)
        return response.json()

    async def _complete(
        self, payload: dict[str, Any], stage: str, salt: str, *, bypass_cache: bool = False
    ) -> tuple[dict[str, Any], bool, int]:
        """One chat completion (cache first); -> (raw reply, cached?, HTTP attempts)."""
        body = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        cache = self.cache
        key = None
        if cache is not None:
            h = hashlib.sha256(body)
            h.update(b"\0")
            h.update(salt.encode("utf-8"))
            key = h.hexdigest()  # == cache.request_key(payload, salt)
            if not bypass_cache:
                raw = cache.get_chat(key)
                if raw is not None:
                    usage = _usage(raw)
                    self.ledger.record(stage, payload["model"], usage, cached=True)
                    timing.add_usage(stage, usage.prompt_tokens, usage.completion_tokens)
                    return raw, True, 0
        est = estimate_tokens(payload["messages"], payload.get("max_tokens"))
        reply, attempts = await self._with_retries(
            stage, lambda: self._post_json("/chat/completions", body), est
        )
        try:
            raw = _raw_reply(reply)
        except (ValueError, TypeError, AttributeError) as exc:
            raise self._failure(stage, "malformed", f"unreadable reply body: {exc}", attempts) from None
        if cache is not None and key is not None:
            cache.put_chat(key, raw)
        usage = _usage(raw)
        self.ledger.record(stage, payload["model"], usage, cached=False)
        timing.add_usage(stage, usage.prompt_tokens, usage.completion_tokens)
        return raw, False, attempts

    def _base_payload(
        self,
        messages: Sequence[Message],
        model: str | None,
        temperature: float | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        s = self.settings
        payload: dict[str, Any] = {
            "model": model or s.model,
            "messages": list(messages),
            "temperature": s.temperature if temperature is None else temperature,
        }
        if s.seed is not None:
            payload["seed"] = s.seed
        mt = s.max_tokens if max_tokens is None else max_tokens
        if mt is not None:
            payload["max_tokens"] = mt
        return payload

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
        payload = self._base_payload(messages, model, temperature, max_tokens)
        usage = Usage()
        attempts = 0
        all_cached = True
        for round_ in range(self.settings.repair_attempts + 1):
            raw, cached, n = await self._complete(payload, stage, salt, bypass_cache=round_ > 0)
            attempts += max(n, 1)
            usage = _add(usage, _usage(raw))
            all_cached = all_cached and cached
            text = raw.get("content")
            if raw.get("choices") and isinstance(text, str) and text.strip():
                return ChatReply(text=text, usage=usage, cached=all_cached)
            if round_ < self.settings.repair_attempts:
                self.ledger.record_repair(stage)
        problem = "the reply had no choices" if not raw.get("choices") else "the reply had no text content"
        raise self._failure(stage, "empty", problem, attempts)

    # ---- structured ------------------------------------------------------------------------------------
    def _validator(self, schema: dict[str, Any]) -> Any:
        entry = self._validators.get(id(schema))
        if entry is None or entry[0] is not schema:
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            entry = (schema, cls(schema))
            self._validators[id(schema)] = entry
        return entry[1]

    def _check(self, data: Any, spec: StructuredSpec) -> str | None:
        if not isinstance(data, dict):
            return f"the output must be a JSON object, got {type(data).__name__}"
        error = best_match(self._validator(spec.parameters).iter_errors(data))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{error.message} (at {where or 'the top level'})"

    def _parse(
        self, raw: dict[str, Any], spec: StructuredSpec
    ) -> tuple[dict[str, Any] | None, str, str, str]:
        """-> (data or None, failure kind, error text, the bad output to show the model)."""
        if not raw.get("choices"):
            return None, "empty", "the reply had no choices", ""
        content = raw.get("content")
        if spec.mode == "tool":
            calls = raw.get("tool_calls") or []
            call = next((c for c in calls if c.get("name") == spec.name), calls[0] if calls else None)
            if call is None:
                if isinstance(content, str) and content.strip():
                    try:  # some OpenAI-compatible servers answer a forced tool call in the content
                        data = json.loads(_strip_fences(content))
                    except ValueError:
                        data = None
                    if data is not None and self._check(data, spec) is None:
                        return data, "", "", ""
                    return None, "malformed", f"the reply did not call the function `{spec.name}`", content
                return None, "empty", f"the reply had neither a call to `{spec.name}` nor content", ""
            text = call.get("arguments")
            if not isinstance(text, str) or not text.strip():
                return None, "malformed", f"the call to `{spec.name}` had no arguments", str(text or "")
        else:
            if not isinstance(content, str) or not content.strip():
                return None, "empty", "the reply had no content", ""
            text = content
        try:
            data = json.loads(text if spec.mode == "tool" else _strip_fences(text))
        except ValueError as exc:
            return None, "malformed", f"the output is not valid JSON: {exc}", text
        error = self._check(data, spec)
        if error is not None:
            return None, "malformed", f"the output does not match the schema: {error}", text
        return data, "", "", ""

    async def structured(
        self,
        messages: Sequence[Message],
        spec: StructuredSpec,
        *,
        stage: str,
        salt: str = "",
        model: str | None = None,
    ) -> StructuredReply:
        """A reply that validates against `spec.parameters` (a function call, or a JSON-schema response)."""
        payload = self._base_payload(messages, model, None, None)
        if spec.mode == "tool":
            payload["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": spec.parameters,
                    },
                }
            ]
            payload["tool_choice"] = {"type": "function", "function": {"name": spec.name}}
            ask = f"Call the function `{spec.name}` again with corrected arguments that satisfy its JSON schema."
        elif spec.mode == "json_schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": spec.name, "schema": spec.parameters, "strict": True},
            }
            ask = "Reply again with only a corrected JSON object that satisfies the required JSON schema."
        else:
            raise ConfigurationError(f"unknown structured output mode {spec.mode!r}")
        history = payload["messages"]
        usage = Usage()
        attempts = 0
        all_cached = True
        bypass = False
        kind, error = "malformed", ""
        for round_ in range(self.settings.repair_attempts + 1):
            raw, cached, n = await self._complete(payload, stage, salt, bypass_cache=bypass)
            attempts += max(n, 1)
            usage = _add(usage, _usage(raw))
            all_cached = all_cached and cached
            data, kind, error, bad = self._parse(raw, spec)
            if data is not None:
                return StructuredReply(data=data, usage=usage, cached=all_cached, repairs=round_)
            if round_ == self.settings.repair_attempts:
                break
            self.ledger.record_repair(stage)
            if kind == "empty":
                bypass = True  # the same request again; the cached reply is the empty one
                continue
            bypass = False
            history = [
                *history,
                {"role": "assistant", "content": bad},
                {"role": "user", "content": f"Your previous output was invalid: {error}. {ask}"},
            ]
            payload = {**payload, "messages": history}
        raise self._failure(stage, kind or "malformed", error, attempts)

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

            (vectors, tokens), _ = await self._with_retries(stage, send, est)
        else:
            try:
                vectors, tokens = await backend.embed_batch(texts)
            except ConfigurationError:
                raise
            except Exception as exc:  # a local model failure: report, do not crash the run
                raise self._failure(stage, "server_error", f"local embedding failed: {exc}", 1) from None
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
        unique = list(dict.fromkeys(texts))
        found: dict[str, np.ndarray] = {}
        if self.cache is not None:
            for text, vec in zip(unique, self.cache.get_many(cache_id, unique), strict=True):
                if vec is not None:
                    found[text] = vec
        misses = [t for t in unique if t not in found]
        if not misses:
            self.ledger.record(stage, backend.model, Usage(), cached=True)
        else:
            size = max(1, int(getattr(backend, "batch_size", 64)))
            batches = [misses[i : i + size] for i in range(0, len(misses), size)]

            async def run(batch: list[str]) -> None:
                vectors = await self._embed_misses(batch, stage)
                if self.cache is not None:
                    self.cache.put_many(cache_id, batch, vectors)  # each batch is saved as soon as paid
                found.update(zip(batch, vectors, strict=True))

            if len(batches) == 1:
                # The usual case: no extra task, so no two extra trips through a busy event loop
                # (which the caller's timing would count as its own local time).
                await run(batches[0])
            else:
                await asyncio.gather(*(run(b) for b in batches))
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)

    # ---- preflight -----------------------------------------------------------------------------------
    async def preflight(self, extra_models: Sequence[str] = ()) -> None:
        """Check key, server and models (the chat model, the embedding model and `extra_models`, e.g. the
        judge's) before any work; raise `ConfigurationError` with one clear line."""
        url = self.base_url
        if not self._has_key and self.settings.is_openai_url():
            raise ConfigurationError(
                f"{self.settings.api_key_env} is not set: export it, or point llm.base_url "
                "(or OPENAI_BASE_URL) at an OpenAI-compatible server"
            )
        check = getattr(self.embedder, "check_available", None)
        if check is not None:
            check()
        try:
            response = await self._openai.get(
                "/models", cast_to=httpx2.Response, options={"timeout": PREFLIGHT_TIMEOUT_S}
            )
        except openai.APITimeoutError:
            raise ConfigurationError(
                f"cannot reach the LLM server at {url}: no answer within {PREFLIGHT_TIMEOUT_S:g} s; "
                "is it running? set llm.base_url or OPENAI_BASE_URL"
            ) from None
        except openai.APIConnectionError as exc:
            reason = self._scrub(str(exc.__cause__ or exc.message))
            raise ConfigurationError(
                f"cannot reach the LLM server at {url}: {reason}; is it running? set llm.base_url or OPENAI_BASE_URL"
            ) from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status == 404:
                return  # no /models endpoint: nothing to check
            if status in (401, 403):
                raise ConfigurationError(
                    f"the LLM server at {url} rejected the API key (HTTP {status}): "
                    f"check {self.settings.api_key_env}"
                ) from None
            raise ConfigurationError(
                f"the LLM server at {url} answered GET /models with HTTP {status}: {self._scrub(exc.message)}"
            ) from None
        if not self.settings.check_models:
            return
        try:
            listed = {str(m.get("id")) for m in response.json().get("data") or [] if isinstance(m, dict)}
        except (ValueError, AttributeError):
            return  # not a model list: nothing to check
        if not listed:
            return
        wanted = [self.settings.model]
        if isinstance(self.embedder, OpenAIEmbeddingBackend):
            wanted.append(self.embedder.model)
        wanted += [m for m in extra_models if m and m not in wanted]
        for model in wanted:
            if model not in listed:
                shown = ", ".join(sorted(listed)[:20]) + (" ..." if len(listed) > 20 else "")
                raise ConfigurationError(f"model '{model}' is not served by {url}; available: {shown}")

    async def aclose(self) -> None:
        """Close the HTTP pool (and the cache, when this client created it)."""
        await self._openai.close()
        if self._owns_cache and self.cache is not None:
            self.cache.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
