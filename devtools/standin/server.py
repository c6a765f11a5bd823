"""A local OpenAI-compatible stand-in server for tests: real HTTP on 127.0.0.1, no network, no model.

It exists to test plumbing (HTTP, retries, rate limits, caching, structured output, accounting), never to
produce good scores: it knows nothing about mem0bench's prompts.

* POST /v1/chat/completions
    - `tools` + `tool_choice`: a `tool_calls` reply whose arguments are generated from the function's JSON
      schema (objects with their required properties, strings of words from the last user message, enums
      picked deterministically, arrays of 0..3 items, numbers, integers, booleans);
    - `response_format: json_schema` (or llama.cpp's `json_object` with a `schema`): JSON content generated
      the same way;
    - otherwise: a short text of words from the prompt (its first token one of the `logit_bias` tokens with
      a positive bias, when there are any), cut at `max_tokens` (finish reason "length");
    - `logprobs: true` (+ `top_logprobs: 0..20`): `choices[0].logprobs.content`, one entry per token of the
      reply's content (o200k_base, the gpt-4o tokenizer): {token, logprob, bytes, top_logprobs: [{token,
      logprob, bytes}, ...]}, the chosen token the most likely, the others drawn from the biased tokens and
      the prompt's words. `top_logprobs` without `logprobs: true`, or outside 0..20: 400, as OpenAI.
  Everything is deterministic from a hash of the request body. Usage: cl100k tokens of the message
  contents (+ tool schema) and of the output.
* POST /v1/embeddings: hashed bag-of-words vectors (1536 dims, or `dimensions`), L2-normalized, so texts
  sharing words are similar; `encoding_format` "float" or "base64".
* GET /v1/models: the configured model ids.
* The Batch API: /v1/files and /v1/batches with delays, failed lines and expiry (`batches`); off with
  `batch_api=False` (`--no-batch-api`), as vLLM and llama.cpp.

Auth: with `api_key` set, a missing or wrong `Authorization: Bearer` -> 401.

Faults, deterministic (seeded, by request counter), settable at start and at run time (`configure()`):
`rate_429` (with `Retry-After: retry_after_s`, or none if `retry_after_header=False`), `rate_5xx`,
`rate_timeout` (hold the request `hold_s` seconds before answering), `rate_reset` (close the socket without
a reply), `rate_malformed` (invalid JSON / schema-violating arguments or non-JSON content), `rate_empty`
(`choices: []`), `latency_ms` (a reply leaves that long after its request arrived: the stand-in's own work on
it, done on the benchmark's shared cores, is part of the delay, not added to it, as a hosted API's server
time is part of its latency). Plus `script([...])` (exact replies in order) and `set_handler(fn)`.

Rate-limit headers: with `ratelimit=(requests, tokens)` (`--ratelimit REQUESTS,TOKENS`), every reply
carries OpenAI's `x-ratelimit-limit-*`, `x-ratelimit-remaining-*` and `x-ratelimit-reset-*` headers: the
remaining counts go down by one request, and by the reply's tokens, per answered call (never refilled),
the resets are the time one request, resp. the tokens used, take to come back at that per-minute rate, in
OpenAI's duration format ("6m0s", "1.5s", "20ms").

Enforced budget: with `ratelimit_window_s` set as well (`--ratelimit-window-s`), the stand-in enforces the
budget as OpenAI does. Each limit is a bucket holding the per-minute figure, refilled continuously so that an
empty bucket is full again after `ratelimit_window_s` seconds. A chat or embedding request is charged on
arrival (one request; its prompt's cl100k tokens, tool schema and response format included, plus
`max_tokens`), and answered 429 with `Retry-After` (whole seconds) and `retry-after-ms` (the exact wait)
when either bucket lacks it; a reply without `max_tokens` is charged its completion tokens when answered.
Every reply, 429s included, carries the headers: the limits as per-minute figures, the remaining bucket
contents, and the resets as the real time until each bucket is full again. `ratelimit_window_s=6` runs a
budget's minute in 6 s (the time scale is the only thing changed): a test of pacing takes seconds, and a
client that paces from the headers' remaining and reset figures, not from the word "minute", sees the same
arithmetic as at OpenAI. `budget_use()` reports the share of the budget used over the enforced period.

Cached prompts: with `cached_prefixes=True` (`--cached-prefixes`; off by default, so no other test's usage
figures change), a chat reply whose prompt (cl100k tokens of the message contents, then tool schema and
response format) shares 1,024 tokens or more with an earlier request's reports the shared length, in
128-token steps, as OpenAI does: `usage.prompt_tokens_details.cached_tokens` (see `prompt_cache`).

Run as a process: `python -m devtools.standin.server --port 0 --latency-ms 50` prints the port when ready.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import os
import random
import re
import socket
import struct
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from devtools.standin.batches import BatchStore, parse_multipart
from devtools.standin.prompt_cache import PromptCache

_SHARED_TIKTOKEN = Path(__file__).resolve().parents[3] / "shared" / "tiktoken"
if _SHARED_TIKTOKEN.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_SHARED_TIKTOKEN))

DEFAULT_MODELS = ("gpt-4o-mini", "text-embedding-3-small")
_WORD = re.compile(r"[A-Za-z0-9']+")


# ---- scripted replies ------------------------------------------------------------------------------
@dataclass(frozen=True)
class HTTPError:
    """Reply with an HTTP error. `retry_after` -> a `Retry-After` header (seconds, or a raw string)."""

    status: int
    retry_after: float | str | None = None
    message: str = "stand-in error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Reset:
    """Close the connection without replying."""


@dataclass(frozen=True)
class Hold:
    """Sleep `seconds`, then answer normally (`then`: a scripted reply, or None for the default)."""

    seconds: float
    then: Any = None


@dataclass(frozen=True)
class Empty:
    """A 200 reply with `choices: []`."""


@dataclass(frozen=True)
class Raw:
    """A 200 reply with exactly this JSON body."""

    body: dict[str, Any]


@dataclass(frozen=True)
class NotJson:
    """A 200 reply whose body is not JSON (as a proxy's error page, or a body cut short)."""

    body: bytes = b"<html>502 Bad Gateway</html>"


@dataclass(frozen=True)
class ToolCall:
    """A tool-call reply; `arguments` a dict (dumped as JSON) or a raw string (may be invalid JSON)."""

    arguments: dict[str, Any] | str
    name: str | None = None


@dataclass(frozen=True)
class Text:
    """A plain content reply."""

    content: str | None


Handler = Callable[[str, dict[str, Any]], Any]
"""set_handler(fn): fn(endpoint, request_body) -> a reply (as for `script`) or None for the default."""


# ---- schema-driven generation ----------------------------------------------------------------------
def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 20:
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return {}
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, dict) else {}
        schema = node
        seen += 1
    return schema if isinstance(schema, dict) else {}


def _phrase(rng: random.Random, words: list[str], lo: int = 1, hi: int = 4) -> str:
    if not words:
        words = ["ok"]
    return " ".join(rng.choice(words) for _ in range(rng.randint(lo, hi)))


def generate(
    schema: Any, rng: random.Random, words: list[str], root: dict[str, Any] | None = None, depth: int = 0
) -> Any:
    """A value that satisfies common JSON-schema constraints, drawn deterministically from `rng`."""
    if not isinstance(schema, dict):
        return _phrase(rng, words)
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][rng.randrange(len(schema["enum"]))]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            options = [s for s in schema[key] if not (isinstance(s, dict) and s.get("type") == "null")]
            return generate((options or schema[key])[0], rng, words, root, depth + 1)
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            part = _resolve(part, root)
            for k, v in part.items():
                if k == "properties":
                    merged.setdefault("properties", {}).update(v)
                elif k == "required":
                    merged.setdefault("required", []).extend(v)
                else:
                    merged[k] = v
        return generate(merged, rng, words, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or (depth < 3 and rng.random() < 0.5):
                out[name] = generate(sub, rng, words, root, depth + 1)
        return out
    if kind == "array":
        lo = int(schema.get("minItems", 0))
        hi = int(schema.get("maxItems", max(lo, 3)))
        n = rng.randint(lo, max(lo, min(hi, 3 if depth < 3 else lo)))
        items = schema.get("items", {})
        return [generate(items, rng, words, root, depth + 1) for _ in range(n)]
    if kind == "integer":
        lo = int(schema.get("minimum", 0))
        hi = int(schema.get("maximum", lo + 100))
        return rng.randint(lo, max(lo, hi))
    if kind == "number":
        low = float(schema.get("minimum", 0.0))
        high = float(schema.get("maximum", low + 1.0))
        return round(rng.uniform(low, high), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    text = _phrase(rng, words)
    min_len = int(schema.get("minLength", 0))
    while len(text) < min_len:
        text += " " + _phrase(rng, words)
    if "maxLength" in schema:
        text = text[: int(schema["maxLength"])]
    return text


def _violate(schema: dict[str, Any], value: Any, rng: random.Random) -> Any:
    """A value that breaks the schema: a required property dropped, or the wrong type."""
    if isinstance(value, dict):
        required = [r for r in schema.get("required") or [] if r in value]
        if required and rng.random() < 0.5:
            broken = dict(value)
            broken.pop(required[rng.randrange(len(required))])
            return broken
        return ["not", "an", "object"]
    return {"unexpected": value}


# ---- the server ------------------------------------------------------------------------------------
class _Encoder:
    _enc: Any = None

    @classmethod
    def count(cls, text: str) -> int:
        return len(cls.encode(text))

    @classmethod
    def encode(cls, text: str) -> list[int]:
        if cls._enc is None:
            try:
                import tiktoken

                cls._enc = tiktoken.get_encoding("cl100k_base")
            except Exception:  # pragma: no cover - no tiktoken data: approximate
                cls._enc = False
        if cls._enc is False:  # one id per 4 characters (of their code points): a stable stand-in
            return [sum(map(ord, text[i : i + 4])) for i in range(0, len(text), 4)]
        return list(cls._enc.encode(text, disallowed_special=()))


def warm_tokenizers() -> None:
    """Load the stand-in's tiktoken encodings now (~0.3 s each) instead of on its first request: a
    benchmark timing a harness's requests should not count the stand-in's own start-up."""
    _Encoder.count("warm")
    _ModelTokens._encoding()


class _ModelTokens:
    """Token strings of the gpt-4o family's tokenizer (o200k_base): `logit_bias` keys are its token ids and
    logprobs list its tokens. Without tiktoken's data: words with their leading space, ids unknown."""

    _enc: Any = None

    @classmethod
    def _encoding(cls) -> Any:
        if cls._enc is None:
            try:
                import tiktoken

                cls._enc = tiktoken.get_encoding("o200k_base")
            except Exception:  # pragma: no cover - no tiktoken data
                cls._enc = False
        return cls._enc

    @classmethod
    def split(cls, text: str) -> list[bytes]:
        enc = cls._encoding()
        if enc is False:
            return [m.encode() for m in re.findall(r"\s*\S+", text)]
        return [enc.decode_single_token_bytes(t) for t in enc.encode(text, disallowed_special=())]

    @classmethod
    def of_id(cls, token_id: int) -> bytes | None:
        enc = cls._encoding()
        if enc is False:
            return None
        try:
            return bytes(enc.decode_single_token_bytes(token_id))
        except (KeyError, ValueError):
            return None


def _favoured_tokens(logit_bias: Any) -> list[bytes]:
    """The tokens a request's `logit_bias` raises (positive bias), most raised first."""
    if not isinstance(logit_bias, dict):
        return []
    ranked = []
    for key, bias in logit_bias.items():
        token = _ModelTokens.of_id(int(key)) if str(key).isdigit() else None
        if token is not None and isinstance(bias, int | float) and bias > 0:
            ranked.append((-float(bias), token))
    return [token for _, token in sorted(ranked)]


def _token_entry(token: bytes, logprob: float) -> dict[str, Any]:
    return {"token": token.decode("utf-8", errors="replace"), "logprob": logprob, "bytes": list(token)}


def token_logprobs(
    content: str, top_n: int, rng: random.Random, favoured: list[bytes], pool: list[bytes]
) -> list[dict[str, Any]]:
    """OpenAI's `logprobs.content` for `content`: per token its logprob and the `top_n` most likely tokens
    at that position (the chosen one first: the stand-in decodes greedily); the alternatives are the
    `favoured` (logit_bias) tokens, then others from `pool` in a random order."""
    out = []
    for token in _ModelTokens.split(content):
        chosen = rng.uniform(0.5, 0.999)
        top = [(token, chosen)]
        rest = 1.0 - chosen
        others = [t for t in dict.fromkeys(pool) if t != token and t not in favoured]
        rng.shuffle(others)
        others = [t for t in favoured if t != token] + others
        for other in others[: max(0, top_n - 1)]:
            share = rest * rng.uniform(0.3, 0.8)
            top.append((other, share))
            rest -= share
        top[1:] = sorted(top[1:], key=lambda pair: -pair[1])  # most likely first, as OpenAI lists them
        entry = _token_entry(token, round(math.log(chosen), 6))
        entry["top_logprobs"] = [_token_entry(t, round(math.log(p), 6)) for t, p in top[:top_n]]
        out.append(entry)
    return out


def _truncate(text: str, limit: Any) -> tuple[str, bool]:
    """`text` cut to `limit` tokens; -> (text, whether it was cut)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        return text, False
    tokens = _ModelTokens.split(text)
    if len(tokens) <= limit:
        return text, False
    return b"".join(tokens[:limit]).decode("utf-8", errors="replace"), True


def _message_text(messages: Iterable[Any]) -> str:
    parts = []
    for m in messages or []:
        if not isinstance(m, dict):
            continue
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts.extend(p.get("text", "") for p in c if isinstance(p, dict))
    return "\n".join(parts)


def _last_user_words(messages: list[Any]) -> list[str]:
    for m in reversed(messages or []):
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
            words = _WORD.findall(m["content"])
            if words:
                return words
    return _WORD.findall(_message_text(messages)) or ["ok"]


def bag_of_words_vector(text: str, dim: int) -> np.ndarray:
    """Hashed bag-of-words, signed, L2-normalized; deterministic across processes."""
    vec = np.zeros(dim, dtype=np.float32)
    words = [w.lower() for w in _WORD.findall(text)] or ["<empty>"]
    for w in words:
        h = hashlib.blake2b(w.encode(), digest_size=8).digest()
        idx, sign = struct.unpack("<IB", h[:5])
        vec[idx % dim] += 1.0 if sign & 1 else -1.0
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else vec


class StandinServer:
    """The stand-in server; start with `start()` or as a context manager. Thread-safe setters."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        models: Iterable[str] = DEFAULT_MODELS,
        extra_models: Iterable[str] = (),
        api_key: str | None = None,
        seed: int = 0,
        latency_ms: float = 0.0,
        rate_429: float = 0.0,
        retry_after_s: float | None = 1.0,
        retry_after_header: bool = True,
        rate_5xx: float = 0.0,
        rate_timeout: float = 0.0,
        hold_s: float = 2.0,
        rate_reset: float = 0.0,
        rate_malformed: float = 0.0,
        rate_empty: float = 0.0,
        embedding_dim: int = 1536,
        models_endpoint: bool = True,
        reasoning_models: Iterable[str] = (),
        ratelimit: tuple[int, int] | None = None,
        ratelimit_window_s: float | None = None,
        cached_prefixes: bool = False,
        batch_api: bool = True,
    ) -> None:
        self.host = host
        self._requested_port = port
        self.models = [*models, *extra_models]
        self.api_key = api_key
        self.seed = seed
        self.latency_ms = latency_ms
        self.rate_429 = rate_429
        self.retry_after_s = retry_after_s
        self.retry_after_header = retry_after_header
        self.rate_5xx = rate_5xx
        self.rate_timeout = rate_timeout
        self.hold_s = hold_s
        self.rate_reset = rate_reset
        self.rate_malformed = rate_malformed
        self.rate_empty = rate_empty
        self.embedding_dim = embedding_dim
        self.models_endpoint = models_endpoint
        # Models that, like OpenAI's reasoning models, reject `max_tokens` and a non-default temperature.
        self.reasoning_models = set(reasoning_models)
        self.ratelimit = ratelimit
        self.budget = (
            Budget(ratelimit[0], ratelimit[1], ratelimit_window_s)
            if ratelimit is not None and ratelimit_window_s is not None
            else None
        )
        self.cached_prefixes = cached_prefixes
        self.prompt_cache = PromptCache()
        self.batch_api = batch_api
        """False: /v1/files and /v1/batches answer 404, as on vLLM and llama.cpp."""
        self.batches = BatchStore(self._answer_line)
        """The Batch API's files and batches (`devtools.standin.batches`); its `delays`, `fail_lines` and
        `expire_after` are set on it directly."""
        self._used_requests = 0
        self._used_tokens = 0
        self._lock = threading.Lock()
        self._script: deque[Any] = deque()
        self._handler: Handler | None = None
        self._counter = 0
        self.counts: Counter[tuple[str, int]] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests: deque[tuple[str, dict[str, Any]]] = deque(maxlen=2000)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the stand-in server is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (ends in /v1)."""
        return f"{self.url}/v1"

    def start(self) -> StandinServer:
        server = self

        class _Handler(_RequestHandler):
            standin = server

        httpd = _Server((self.host, self._requested_port), _Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> StandinServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- run-time control (thread-safe)
    def configure(self, **settings: Any) -> None:
        """Change fault rates, latency, models, key, ... while running (names as in the constructor)."""
        with self._lock:
            for name, value in settings.items():
                if name.startswith("_") or not hasattr(self, name) or callable(getattr(self, name)):
                    raise AttributeError(f"unknown stand-in setting {name!r}")
                setattr(self, name, value)

    def script(self, replies: Iterable[Any]) -> None:
        """Queue exact chat replies, consumed in order before any default behaviour.

        Items: `dict` (tool-call arguments / JSON content / text, as the request asks), `str` (tool-call
        arguments string, or content), `ToolCall`, `Text`, `Empty`, `Raw`, `HTTPError`, `Reset`, `Hold`,
        or an `int` HTTP status.
        """
        with self._lock:
            self._script.extend(replies)

    def set_handler(self, fn: Handler | None) -> None:
        """`fn(endpoint, body)` decides replies (as `script` items); None from it means the default."""
        with self._lock:
            self._handler = fn

    def reset_counters(self) -> None:
        with self._lock:
            self.counts.clear()
            self.requests.clear()
            self.max_in_flight = 0

    def count(self, endpoint: str | None = None, status: int | None = None) -> int:
        """Requests seen, filtered by endpoint ("chat", "embeddings", "models") and/or status."""
        with self._lock:
            return sum(
                n
                for (ep, st), n in self.counts.items()
                if (endpoint is None or ep == endpoint) and (status is None or st == status)
            )

    def budget_use(self) -> dict[str, float]:
        """Enforced budget: the share of each budget used over the enforced period (`Budget.use`)."""
        if self.budget is None:
            raise RuntimeError("no enforced budget (set ratelimit and ratelimit_window_s)")
        with self._lock:
            return self.budget.use(time.monotonic())

    def admit(self, endpoint: str, body: dict[str, Any]) -> tuple[int | None, dict[str, str]]:
        """Enforced budget: charge a request on arrival; -> (tokens charged, None when refused; the headers
        of a refusal). Without an enforced budget every request passes uncharged."""
        if self.budget is None or endpoint not in ("chat", "embeddings"):
            return 0, {}
        tokens = _admission_tokens(endpoint, body)
        with self._lock:
            wait = self.budget.admit(tokens, time.monotonic())
        if wait is None:
            return tokens, {}
        return None, {
            "Retry-After": str(max(1, math.ceil(wait))),
            "retry-after-ms": str(math.ceil(wait * 1000)),
        }

    def ratelimit_headers(self, tokens: int, charged: int | None = None) -> dict[str, str]:
        """OpenAI's `x-ratelimit-*` headers after a reply of `tokens` tokens (none without `ratelimit`).
        Enforced budget: a reply charged `charged` tokens on arrival is charged the rest of `tokens` now
        when its request gave no `max_tokens` (`charged` None: a refused or uncharged request)."""
        if self.budget is not None:
            with self._lock:
                return self.budget.headers(time.monotonic(), extra=max(tokens - charged, 0) if charged else 0)
        with self._lock:
            if self.ratelimit is None:
                return {}
            requests_limit, tokens_limit = self.ratelimit
            self._used_requests += 1
            self._used_tokens += tokens
            used_requests, used_tokens = self._used_requests, self._used_tokens
        return {
            "x-ratelimit-limit-requests": str(requests_limit),
            "x-ratelimit-limit-tokens": str(tokens_limit),
            "x-ratelimit-remaining-requests": str(max(requests_limit - used_requests, 0)),
            "x-ratelimit-remaining-tokens": str(max(tokens_limit - used_tokens, 0)),
            "x-ratelimit-reset-requests": openai_duration(60.0 / requests_limit),
            "x-ratelimit-reset-tokens": openai_duration(60.0 * min(used_tokens, tokens_limit) / tokens_limit),
        }

    def _answer_line(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """One Batch API line answered as POST /v1/chat/completions answers the same body."""
        capture = _Capture.__new__(_Capture)  # no socket: the reply is kept, not sent
        capture.standin = self
        capture.reply = (500, {})
        capture._charged = None
        capture._chat(body, None)
        return capture.reply

    # -- decisions (called from handler threads)
    def _next_action(self, endpoint: str, body: dict[str, Any]) -> Any:
        with self._lock:
            self._counter += 1
            n = self._counter
            handler = self._handler
            scripted = self._script.popleft() if endpoint == "chat" and self._script else None
            rates = (self.rate_429, self.rate_5xx, self.rate_timeout, self.rate_reset)
            rate_malformed, rate_empty = self.rate_malformed, self.rate_empty
            seed = self.seed
        if scripted is not None:
            return scripted
        if handler is not None:
            decided = handler(endpoint, body)
            if decided is not None:
                return decided
        draw = random.Random(f"{seed}:{n}").random()
        edge = 0.0
        for rate, action in zip(rates, ("429", "5xx", "timeout", "reset"), strict=True):
            edge += rate
            if draw < edge:
                return action
        if endpoint == "chat":
            for rate, action in ((rate_malformed, "malformed"), (rate_empty, "empty")):
                edge += rate
                if draw < edge:
                    return action
        return None


class Budget:
    """OpenAI's request and token budgets as two continuously refilled buckets (not thread-safe: the server
    holds its lock). `window_s`: the seconds an empty bucket takes to fill; the headers still give the
    limits as per-minute figures."""

    def __init__(self, requests: int, tokens: int, window_s: float) -> None:
        if requests <= 0 or tokens <= 0 or window_s <= 0:
            raise ValueError("ratelimit figures and ratelimit_window_s must be > 0")
        self.limits = (float(requests), float(tokens))
        self.window_s = window_s
        self.levels = [float(requests), float(tokens)]
        self.stamp: float | None = None
        self.started: float | None = None
        self.last: float | None = None
        self.charged = [0.0, 0.0]

    def _refill(self, now: float) -> None:
        if self.stamp is not None:
            for i, limit in enumerate(self.limits):
                self.levels[i] = min(limit, self.levels[i] + (now - self.stamp) * limit / self.window_s)
        self.stamp = now

    def admit(self, tokens: int, now: float) -> float | None:
        """Charge one request of `tokens` tokens -> None; or the seconds until it would fit (not charged).
        A request larger than the whole token budget is let through once the bucket is full (OpenAI would
        refuse it outright; the harness never sends one)."""
        self._refill(now)
        need = (1.0, min(float(tokens), self.limits[1]))
        wait = max(
            (n - level) * self.window_s / limit for n, level, limit in zip(need, self.levels, self.limits)
        )
        if wait > 0:
            return wait
        if self.started is None:
            self.started = now
        self.levels[0] -= 1.0
        self.levels[1] -= tokens
        self.charged[0] += 1.0
        self.charged[1] += tokens
        return None

    def headers(self, now: float, *, extra: int = 0) -> dict[str, str]:
        self._refill(now)
        if extra:
            self.levels[1] -= extra
            self.charged[1] += extra
        if self.started is not None:
            self.last = now
        out: dict[str, str] = {}
        for name, limit, level in zip(("requests", "tokens"), self.limits, self.levels):
            out[f"x-ratelimit-limit-{name}"] = str(int(limit))
            out[f"x-ratelimit-remaining-{name}"] = str(max(int(level), 0))
            out[f"x-ratelimit-reset-{name}"] = openai_duration((limit - level) * self.window_s / limit)
        return out

    def use(self, now: float) -> dict[str, float]:
        """Per budget ("requests", "tokens"): what was charged over what the budget allowed from the first
        admitted request to the last reply (the full bucket at the start plus the refill since)."""
        end = self.last if self.last is not None else now
        span = 0.0 if self.started is None else max(end - self.started, 0.0)
        return {
            name: charged / (limit + limit * span / self.window_s)
            for name, charged, limit in zip(("requests", "tokens"), self.charged, self.limits)
        }


def _admission_tokens(endpoint: str, body: dict[str, Any]) -> int:
    """What a request is charged on arrival: its prompt's cl100k tokens (as its usage will count them), plus
    `max_tokens` / `max_completion_tokens` when given."""
    if endpoint == "embeddings":
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else inputs if isinstance(inputs, list) else []
        return sum(_Encoder.count(t) for t in texts if isinstance(t, str))
    text = _message_text(body.get("messages") or [])
    for extra in (body.get("tools"), body.get("response_format")):
        if extra:
            text += json.dumps(extra)
    limit = body.get("max_tokens") or body.get("max_completion_tokens") or 0
    return _Encoder.count(text) + (limit if isinstance(limit, int) else 0)


def _tokens_of(payload: Any) -> int:
    """The tokens a reply's `usage` counts (0 for an error or a model list)."""
    usage = payload.get("usage") if isinstance(payload, dict) else None
    total = usage.get("total_tokens", 0) if isinstance(usage, dict) else 0
    return total if isinstance(total, int) else 0


def openai_duration(seconds: float) -> str:
    """Seconds in OpenAI's reset format: "6m0s", "1.5s", "20ms"."""
    if seconds < 1.0:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60.0)
    hours, minutes = divmod(int(minutes), 60)
    text = f"{rest:.3g}s"
    if minutes or hours:
        text = f"{minutes}m{text}"
    return f"{hours}h{text}" if hours else text


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) drops connections when many clients connect at once, and a dropped
    # SYN costs the client a 1 s retransmit: a real API server does not behave like that.
    request_queue_size = 1024
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that drops its connection (a run stopping mid-request) is not the server's error: a real
        # server logs nothing the client could see, so neither does this one (the default prints a
        # traceback to stderr, which tests of a run's own output would read as the run's).
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes: without this, Nagle and delayed ACKs add ~40 ms a call.
    disable_nagle_algorithm = True
    standin: StandinServer
    server_version = "standin/1.0"
    _charged: int | None = None  # tokens the enforced budget charged the current request on arrival

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the default logging
        pass

    # -- helpers
    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), headers, tokens=_tokens_of(payload))

    def _send_bytes(
        self, status: int, data: bytes, headers: dict[str, str] | None = None, *, tokens: int = 0
    ) -> None:
        headers = {**(headers or {}), **self.standin.ratelimit_headers(tokens, self._charged)}
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _error(
        self, status: int, message: str, headers: dict[str, str] | None = None, endpoint: str = ""
    ) -> None:
        self._count(endpoint, status)
        kind = (
            "rate_limit_exceeded"
            if status == 429
            else "invalid_request_error"
            if status < 500
            else "server_error"
        )
        self._send_json(status, {"error": {"message": message, "type": kind, "code": None}}, headers)

    def _count(self, endpoint: str, status: int) -> None:
        with self.standin._lock:
            self.standin.counts[(endpoint, status)] += 1

    def _reset(self, endpoint: str) -> None:
        self._count(endpoint, 0)
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
        self.close_connection = True

    def _authorized(self) -> bool:
        expected = self.standin.api_key
        if not expected:
            return True
        return self.headers.get("Authorization", "") == f"Bearer {expected}"

    def _read_body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    # -- routes
    def do_GET(self) -> None:  # noqa: N802
        self._charged = None
        path = self.path.split("?")[0].rstrip("/")
        if path.startswith(("/v1/files", "/v1/batches")):
            return self._batch_get(path)
        if path in ("/v1/models", "/models"):
            if not self._authorized():
                return self._error(401, "Incorrect API key provided.", endpoint="models")
            if not self.standin.models_endpoint:
                return self._error(404, "not found", endpoint="models")
            self._count("models", 200)
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "standin"} for m in self.standin.models
            ]
            return self._send_json(200, {"object": "list", "data": data})
        return self._error(404, f"no route {path}", endpoint="other")

    def do_POST(self) -> None:  # noqa: N802
        arrived = time.monotonic()
        path = self.path.split("?")[0].rstrip("/")
        if path.startswith(("/v1/files", "/v1/batches")):
            self._charged = None
            return self._batch_post(path)
        endpoint = {
            "/v1/chat/completions": "chat",
            "/chat/completions": "chat",
            "/v1/embeddings": "embeddings",
            "/embeddings": "embeddings",
        }.get(path)
        body = self._read_body()
        if endpoint is None:
            return self._error(404, f"no route {path}", endpoint="other")
        if not self._authorized():
            return self._error(401, "Incorrect API key provided.", endpoint=endpoint)
        self._charged = None
        if body is None:
            return self._error(400, "the body is not a JSON object", endpoint=endpoint)
        st = self.standin
        charged, refusal = st.admit(endpoint, body)
        if charged is None:
            return self._error(
                429, "Rate limit reached for requests or tokens per min (stand-in).", refusal, endpoint
            )
        self._charged = charged
        with st._lock:
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
            st.requests.append((endpoint, body))
            latency = st.latency_ms
        try:
            # The reply is decided (and a handler sees the request) on arrival; the latency delays its
            # delivery only, so a handler that stamps arrivals stamps when the request came. The time
            # already spent on the request counts towards the latency (under a benchmark's load the
            # stand-in's CPU would otherwise lengthen every call the harness is timed on).
            action = st._next_action(endpoint, body)
            if latency:
                time.sleep(max(0.0, latency / 1000.0 - (time.monotonic() - arrived)))
            self._act(endpoint, body, action)
        finally:
            with st._lock:
                st.in_flight -= 1

    # -- the Batch API (devtools.standin.batches)
    def _batch_refusal(self, endpoint: str) -> bool:
        """Answer 401 / 404 (no Batch API) and say so; False when the request may go on."""
        if not self.standin.batch_api:
            self._error(404, f"no route {self.path}", endpoint=endpoint)
            return True
        if not self._authorized():
            self._error(401, "Incorrect API key provided.", endpoint=endpoint)
            return True
        return False

    def _batch_get(self, path: str) -> None:
        store = self.standin.batches
        parts = path.strip("/").split("/")  # v1, files|batches, [id, [content]]
        if parts[1] == "files" and len(parts) == 4 and parts[3] == "content":
            if self._batch_refusal("file_content"):
                return None
            data = store.content(parts[2])
            if data is None:
                return self._error(404, f"no file {parts[2]}", endpoint="file_content")
            self._count("file_content", 200)
            return self._send_bytes(200, data)
        if parts[1] == "batches" and len(parts) == 3:
            if self._batch_refusal("batch"):
                return None
            found = store.retrieve(parts[2])
            if found is None:
                return self._error(404, f"no batch {parts[2]}", endpoint="batch")
            self._count("batch", 200)
            return self._send_json(200, found)
        if parts[1] == "batches" and len(parts) == 2:
            if self._batch_refusal("batch_list"):
                return None
            self._count("batch_list", 200)
            query = parse_qs(urlsplit(self.path).query)
            limit = int((query.get("limit") or ["20"])[0])
            after = query["after"][0] if query.get("after") else None
            return self._send_json(200, store.listing(limit, after))
        return self._error(404, f"no route {path}", endpoint="other")

    def _batch_post(self, path: str) -> None:
        store = self.standin.batches
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        parts = path.strip("/").split("/")
        if parts[1] == "files" and len(parts) == 2:
            if self._batch_refusal("files"):
                return None
            fields = parse_multipart(self.headers.get("Content-Type", ""), raw)
            purpose = fields.get("purpose", (None, b""))[1].decode()
            name, data = fields.get("file", (None, b""))
            if purpose != "batch" or not data:
                return self._error(400, "a batch file needs purpose=batch and a file", endpoint="files")
            self._count("files", 200)
            return self._send_json(200, store.upload(purpose, name or "batch.jsonl", data))
        if parts[1] == "batches" and len(parts) == 2:
            if self._batch_refusal("batches"):
                return None
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            if not isinstance(body, dict):
                return self._error(400, "the body is not a JSON object", endpoint="batches")
            status, reply = store.create(body)
            self._count("batches", status)
            return self._send_json(status, reply)
        if parts[1] == "batches" and len(parts) == 4 and parts[3] == "cancel":
            if self._batch_refusal("batch_cancel"):
                return None
            found = store.cancel(parts[2])
            if found is None:
                return self._error(404, f"no batch {parts[2]}", endpoint="batch_cancel")
            self._count("batch_cancel", 200)
            return self._send_json(200, found)
        return self._error(404, f"no route {path}", endpoint="other")

    def _act(self, endpoint: str, body: dict[str, Any], action: Any) -> None:
        st = self.standin
        if isinstance(action, Hold):
            time.sleep(action.seconds)
            action = action.then
        if isinstance(action, int) and not isinstance(action, bool):
            action = HTTPError(action)
        if action == "429":
            headers = {}
            if st.retry_after_header and st.retry_after_s is not None:
                headers["Retry-After"] = f"{st.retry_after_s:g}"
            return self._error(429, "Rate limit reached (stand-in).", headers, endpoint)
        if action == "5xx":
            return self._error(500, "The server had an error (stand-in).", endpoint=endpoint)
        if action == "timeout":
            time.sleep(st.hold_s)
            action = None
        if action == "reset" or isinstance(action, Reset):
            return self._reset(endpoint)
        if isinstance(action, HTTPError):
            headers = dict(action.headers)
            if action.retry_after is not None:
                ra = action.retry_after
                headers["Retry-After"] = ra if isinstance(ra, str) else f"{ra:g}"
            return self._error(action.status, action.message, headers, endpoint)
        if isinstance(action, Raw):
            self._count(endpoint, 200)
            return self._send_json(200, action.body)
        if isinstance(action, NotJson):
            self._count(endpoint, 200)
            return self._send_bytes(200, action.body)
        if endpoint == "embeddings":
            return self._embeddings(body)
        return self._chat(body, action)

    def _embeddings(self, body: dict[str, Any]) -> None:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return self._error(400, "input must be a string or a list of strings", endpoint="embeddings")
        dim = int(body.get("dimensions") or self.standin.embedding_dim)
        as_b64 = body.get("encoding_format") == "base64"
        data = []
        tokens = 0
        for i, text in enumerate(inputs):
            vec = bag_of_words_vector(text, dim)
            tokens += _Encoder.count(text)
            emb: Any = base64.b64encode(vec.astype("<f4").tobytes()).decode() if as_b64 else vec.tolist()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        self._count("embeddings", 200)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", ""),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _chat(self, body: dict[str, Any], action: Any) -> None:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return self._error(400, "messages must be a non-empty list", endpoint="chat")
        if body.get("model") in self.standin.reasoning_models:
            if "max_tokens" in body:
                return self._error(
                    400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                    "Use 'max_completion_tokens' instead.", endpoint="chat",
                )  # fmt: skip
            if body.get("temperature", 1) != 1:
                return self._error(
                    400, f"Unsupported value: 'temperature' does not support {body['temperature']} with this "
                    "model. Only the default (1) value is supported.", endpoint="chat",
                )  # fmt: skip
        want_logprobs = body.get("logprobs") is True
        top_n = body.get("top_logprobs")
        if top_n is not None:
            if not want_logprobs:
                return self._error(400, "top_logprobs needs logprobs: true", endpoint="chat")
            if isinstance(top_n, bool) or not isinstance(top_n, int) or not 0 <= top_n <= 20:
                return self._error(
                    400, f"top_logprobs must be an integer from 0 to 20, not {top_n!r}", endpoint="chat"
                )
        # Asking for logprobs does not change the reply (as at OpenAI): they are left out of the seed.
        seeded = {k: v for k, v in body.items() if k not in ("logprobs", "top_logprobs")}
        digest = hashlib.sha256(json.dumps(seeded, sort_keys=True).encode()).hexdigest()
        rng = random.Random(digest)
        favoured = _favoured_tokens(body.get("logit_bias"))
        words = _last_user_words(messages)
        tools = body.get("tools") or []
        fmt = body.get("response_format") or {}
        prompt_text = _message_text(messages)
        if tools:
            prompt_text += json.dumps(tools)
        if fmt:
            prompt_text += json.dumps(fmt)
        prompt_ids = _Encoder.encode(prompt_text)
        prompt_tokens = len(prompt_ids)
        cached = 0
        if self.standin.cached_prefixes:
            with self.standin._lock:
                cached = self.standin.prompt_cache.lookup_and_add(prompt_ids)

        tool_fn: dict[str, Any] | None = None
        if tools:
            wanted = (
                (body.get("tool_choice") or {}).get("function", {}).get("name")
                if isinstance(body.get("tool_choice"), dict)
                else None
            )
            fns = [t.get("function", {}) for t in tools if isinstance(t, dict)]
            tool_fn = next((f for f in fns if f.get("name") == wanted), fns[0] if fns else None)
        json_schema = None
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            json_schema = (fmt.get("json_schema") or {}).get("schema") or {}
        elif isinstance(fmt, dict) and fmt.get("type") == "json_object":  # llama.cpp's form: schema inside
            json_schema = fmt.get("schema") or {"type": "object"}

        content: str | None = None
        tool_call: tuple[str, str] | None = None
        finish_length = False
        if action == "empty" or isinstance(action, Empty):
            self._count("chat", 200)
            return self._send_json(200, self._envelope(body, [], prompt_tokens, 0, cached))
        if isinstance(action, ToolCall):
            args = action.arguments if isinstance(action.arguments, str) else json.dumps(action.arguments)
            tool_call = (action.name or (tool_fn or {}).get("name") or "function", args)
        elif isinstance(action, Text):
            content = action.content
        elif isinstance(action, dict):
            if tool_fn is not None:
                tool_call = (tool_fn.get("name", "function"), json.dumps(action))
            else:
                content = json.dumps(action)
        elif isinstance(action, str) and action not in ("malformed",):
            if tool_fn is not None:
                tool_call = (tool_fn.get("name", "function"), action)
            else:
                content = action
        elif tool_fn is not None:
            schema = tool_fn.get("parameters") or {"type": "object"}
            value = generate(schema, rng, words)
            if action == "malformed":
                text = (
                    json.dumps(_violate(schema, value, rng)) if rng.random() < 0.5 else json.dumps(value)[:-1]
                )
            else:
                text = json.dumps(value)
            tool_call = (tool_fn.get("name", "function"), text)
        elif json_schema is not None:
            value = generate(json_schema, rng, words)
            content = "Sure! here it is" if action == "malformed" else json.dumps(value)
        else:
            content = " ".join(rng.choice(words) for _ in range(rng.randint(3, 8)))
            if favoured:  # the raised tokens win the first position
                content = (
                    favoured[rng.randrange(len(favoured))].decode("utf-8", errors="replace") + " " + content
                )
            content, cut = _truncate(content, body.get("max_completion_tokens", body.get("max_tokens")))
            finish_length = cut

        message: dict[str, Any] = {"role": "assistant", "content": content}
        finish = "stop"
        out_text = content or ""
        if tool_call is not None:
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call_{digest[:24]}",
                    "type": "function",
                    "function": {"name": tool_call[0], "arguments": tool_call[1]},
                }
            ]
            finish = "tool_calls"
            out_text = tool_call[0] + tool_call[1]
        if finish == "stop" and finish_length:
            finish = "length"
        logprobs: dict[str, Any] | None = None
        if want_logprobs:
            pool = [_ModelTokens.split(" " + w)[0] for w in words]
            entries = token_logprobs(
                message["content"], top_n or 0, random.Random(digest + ":logprobs"), favoured, pool
            )
            logprobs = {"content": entries if message["content"] is not None else None, "refusal": None}
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": logprobs}
        self._count("chat", 200)
        self._send_json(200, self._envelope(body, [choice], prompt_tokens, _Encoder.count(out_text), cached))

    @staticmethod
    def _envelope(
        body: dict[str, Any], choices: list[Any], prompt: int, completion: int, cached: int = 0
    ) -> dict[str, Any]:
        return {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                **({"prompt_tokens_details": {"cached_tokens": cached}} if cached else {}),
            },
        }


class _Capture(_RequestHandler):
    """The chat code of the handler with its reply kept instead of sent: a Batch API line's answer."""

    reply: tuple[int, dict[str, Any]]

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self.reply = (status, payload)

    def _count(self, endpoint: str, status: int) -> None:
        super()._count("batch_line", status)


def main(argv: list[str] | None = None) -> int:
    """Run the stand-in as a process; prints the port on stdout when ready; stops on SIGINT/SIGTERM."""
    import signal

    p = argparse.ArgumentParser(prog="python -m devtools.standin.server", description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--api-key-env", default=None, help="require the key held by this environment variable")
    p.add_argument("--model", action="append", default=[], help="an extra model id to list (repeatable)")
    p.add_argument("--embedding-dim", type=int, default=1536)
    for name in ("429", "5xx", "timeout", "reset", "malformed", "empty"):
        p.add_argument(f"--rate-{name}", type=float, default=0.0)
    p.add_argument("--retry-after-s", type=float, default=1.0)
    p.add_argument("--no-retry-after-header", action="store_true")
    p.add_argument("--hold-s", type=float, default=2.0)
    p.add_argument("--cached-prefixes", action="store_true", help="report cached prompt tokens as OpenAI")
    p.add_argument("--no-batch-api", action="store_true", help="answer /v1/files and /v1/batches 404")
    p.add_argument(
        "--ratelimit",
        default=None,
        metavar="REQUESTS,TOKENS",
        help="send x-ratelimit-* headers for these limits",
    )
    p.add_argument(
        "--ratelimit-window-s",
        type=float,
        default=None,
        help="enforce --ratelimit: a spent per-minute budget refills in this many seconds (60: real time)",
    )
    a = p.parse_args(argv)
    ratelimit = None
    if a.ratelimit:
        requests_limit, tokens_limit = (int(v) for v in a.ratelimit.split(","))
        ratelimit = (requests_limit, tokens_limit)
    server = StandinServer(
        a.host,
        a.port,
        extra_models=a.model,
        api_key=os.environ.get(a.api_key_env) if a.api_key_env else None,
        seed=a.seed,
        latency_ms=a.latency_ms,
        rate_429=a.rate_429,
        retry_after_s=a.retry_after_s,
        retry_after_header=not a.no_retry_after_header,
        rate_5xx=a.rate_5xx,
        rate_timeout=a.rate_timeout,
        hold_s=a.hold_s,
        rate_reset=a.rate_reset,
        rate_malformed=a.rate_malformed,
        rate_empty=a.rate_empty,
        embedding_dim=a.embedding_dim,
        ratelimit=ratelimit,
        ratelimit_window_s=a.ratelimit_window_s,
        cached_prefixes=a.cached_prefixes,
        batch_api=not a.no_batch_api,
    ).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(server.port, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
