"""An OpenAI-compatible endpoint on 127.0.0.1 that serves a third-party library's calls through our client.

Every adapter points its library at this bridge instead of the real server, so the library's chat and
embedding requests go through the harness's one `LLMClient`: the same model, cache (a rerun pays for
nothing twice), retries, rate limits, usage ledger and failure records as our own systems' calls, and the
harness's embedder (MiniLM locally: nothing fetched from a hub).

Routes: `/r/<route>/v1/chat/completions`, `/r/<route>/v1/embeddings`, `/r/<route>/v1/models`. A route is
the adapter's own id for one library instance (usually a conversation). A call is attributed to a scope the
adapter opened (`scope(route, stage)`): served under that ledger stage and counted in the opener's timing
scope (a question's usage and its cached flag). Which scope, when several questions search one library
instance at once: the scope's token, which `scope` puts in a context variable and the library's HTTP
client (one from `http_client()` / `async_http_client()`) sends back as the `X-Mem0bench-Scope` header of
every request it makes in that context (the context follows the call into `run_blocking`'s threads,
`asyncio.to_thread` and tasks). Such `stamped` scopes overlap freely; a library whose client cannot stamp
its requests opens unstamped scopes, which take turns on the route (its calls go to the one open).
Sync libraries run through `run_blocking` (the bridge's own threads), never on the loop.

The HTTP side is a small HTTP/1.1 server (keep-alive, Content-Length or chunked bodies) on asyncio: the
libraries' own clients (httpx, requests) are the only peers, and a web framework would be a dependency
for four routes.

Only its own run may use it: any local user can reach a loopback port, and a request served here spends
the user's key or reads the user's response cache. Each bridge makes a random token (`api_key`), which
the adapters give their libraries as the OpenAI API key; a request whose `Authorization: Bearer` is not
that token gets 401 before its body is read, and nothing is forwarded or looked up. The token lives only
in this process's memory (and the libraries' clients in it), never on disk or in a command line.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import functools
import hmac
import itertools
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote

import httpx2
import numpy as np

from mem0bench.llm import timing
from mem0bench.llm.ledger import pipeline_stage
from mem0bench.llm.types import CallFailure, LLMCallError
from mem0bench.systems.external.http_framing import parse_head, read_chunked

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient

__all__ = ["SCOPE_HEADER", "BridgeScope", "LLMBridge", "scope_token"]

T = TypeVar("T")

SCOPE_HEADER = "x-mem0bench-scope"
"""The request header naming the scope a library's request belongs to (see the module docstring)."""

_open_scope: ContextVar[str | None] = ContextVar("mem0bench_bridge_scope", default=None)
"""The token of the innermost stamped scope open in this context."""
_tokens = itertools.count(1)  # unique in the process: a token never names another bridge's scope

BRIDGED_STAGES = ("ingest", "search")
"""The pipeline stages a library works in (answering and judging are the harness's own calls)."""

_STATUS_OF_KIND = {
    "rate_limit": 429,
    "timeout": 504,
    "connection": 502,
    "server_error": 502,
    "bad_request": 400,
    "malformed": 502,
    "empty": 502,
    "local_error": 500,
}
_MAX_BODY = 64 * 1024 * 1024


@dataclass
class BridgeScope:
    """One open scope on a route: the stage its calls are served under and what happened to them."""

    route: str
    stage: str
    failures: list[CallFailure] = field(default_factory=list)
    """Calls that failed for good (after the client's retries) while the scope was open."""
    calls: int = 0

    def error(self, exc: BaseException, library: str) -> LLMCallError:
        """The error to raise when the library gave up inside this scope: the first of its calls that
        failed for good, else the library's own exception as a `local_error`."""
        if self.failures:
            return LLMCallError(self.failures[0])
        message = f"{library} raised {type(exc).__name__}: {exc}"
        return LLMCallError(CallFailure(stage=self.stage, kind="local_error", message=message, attempts=1))


@dataclass
class _Open:
    """An open scope and the context its calls are served in (the opener's: its timing scope)."""

    scope: BridgeScope
    context: contextvars.Context


@dataclass
class _Route:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    exclusive: _Open | None = None
    """The unstamped scope open on the route (they take turns): it gets the calls that carry no token."""


def scope_token() -> str | None:
    """The token of the stamped scope open here, for a library in another process (mem0_v2's service),
    which gets it in a request header and sends it back with its own calls."""
    return _open_scope.get()


def _stamp(request: httpx2.Request) -> None:
    token = _open_scope.get()
    if token is not None:
        request.headers[SCOPE_HEADER] = token


async def _astamp(request: httpx2.Request) -> None:
    _stamp(request)


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


class LLMBridge:
    """See the module docstring. Build it in the adapter's constructor, `await start()` before the first
    library call, `await aclose()` in the adapter's `aclose`."""

    def __init__(self, client: LLMClient, *, workers: int = 16) -> None:
        self.client = client
        self.api_key = secrets.token_urlsafe(32)
        """What the libraries send as their API key: this bridge's own token (the real key never leaves
        the harness's client), the only credential the bridge admits."""
        self._bearer = f"Bearer {self.api_key}".encode("ascii")
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._server: asyncio.Server | None = None
        self._port: int | None = None
        self._routes: dict[str, _Route] = {}
        self._stamped: dict[str, _Open] = {}  # token -> open stamped scope
        self._dims: int | None = None
        self._connections: set[asyncio.Task[None]] = set()

    # ---- life cycle ------------------------------------------------------------------------------
    async def start(self) -> LLMBridge:
        """Listen on an ephemeral 127.0.0.1 port (once; later calls return at once)."""
        if self._server is None:
            server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
            if self._server is None:
                self._server = server
                self._port = server.sockets[0].getsockname()[1]
            else:
                server.close()
        return self

    async def run_blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a sync library call in the bridge's own worker threads, in the caller's context (its timing
        scope and log capture). Not `asyncio.to_thread`: a library call blocks until this bridge, on the
        event loop, answers it, and the loop's default executor (a handful of threads on a small machine)
        also serves the harness's own off-loop work; with every default worker waiting on the bridge,
        nothing would be left to serve them. Time spent waiting for a free thread counts as queueing."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="mem0bench-library")
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        submitted = time.perf_counter()
        started: list[float] = []

        def run() -> T:
            started.append(time.perf_counter())
            return call()

        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, run)
        finally:
            timing.add_wait((started[0] if started else time.perf_counter()) - submitted)

    async def aclose(self) -> None:
        """Stop serving (a library call still waiting gets a closed connection), then wait for the
        library threads to finish (queued calls are cancelled)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await server.wait_closed()
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)

    async def __aenter__(self) -> LLMBridge:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ---- what a library is given -----------------------------------------------------------------
    def base_url(self, route: str) -> str:
        """The OpenAI base URL (ending in /v1) for a library instance serving `route`."""
        if self._port is None:
            raise RuntimeError("LLMBridge.base_url before start()")
        return f"http://127.0.0.1:{self._port}/r/{quote(route, safe='')}/v1"

    def http_client(self, timeout_s: float) -> httpx2.Client:
        """A sync HTTP client for a library's OpenAI client (`http_client=`): it stamps every request with
        the stamped scope open where the request is made. The caller owns (and closes) it. No TLS
        verification: the bridge is plain HTTP on loopback, and loading the CA bundle costs ~0.1 s of CPU
        per client."""
        return httpx2.Client(timeout=timeout_s, verify=False, event_hooks={"request": [_stamp]})

    def async_http_client(self, timeout_s: float) -> httpx2.AsyncClient:
        """`http_client` for an async library client (`AsyncOpenAI(http_client=...)`)."""
        return httpx2.AsyncClient(timeout=timeout_s, verify=False, event_hooks={"request": [_astamp]})

    @property
    def model(self) -> str:
        """The chat model every library is given: the harness's `llm.model`."""
        return self.client.settings.model

    @property
    def embedding_model(self) -> str:
        embedder = self.client.embedder
        return embedder.model if embedder is not None else "none"

    async def embedding_dims(self) -> int:
        """The embedder's vector size (one embedding call, cached like any other)."""
        if self._dims is None:
            vectors = await self.client.embed(["dimension probe"], stage="bridge")
            self._dims = int(vectors.shape[1])
        return self._dims

    @asynccontextmanager
    async def scope(self, route: str, stage: str, *, stamped: bool = False) -> AsyncIterator[BridgeScope]:
        """Attribute the library's calls made in this block to `stage` and to the caller's timing scope.

        `stamped`: the library's client comes from `http_client()` / `async_http_client()` and the block's
        calls are made in its context, so each request names its scope and scopes on one route overlap
        (a conversation's questions search at once). Unstamped scopes on one route wait for each other.

        `stage` is `<system>_ingest` or `<system>_search`: usage.json keeps the library's calls apart, and
        the progress bars count them with the pipeline stage named after the last underscore."""
        if pipeline_stage(stage) not in BRIDGED_STAGES:
            raise ValueError(f"a bridge scope's stage ends in _ingest or _search, not {stage!r}")
        scope = BridgeScope(route=route, stage=stage)
        if stamped:
            token = str(next(_tokens))
            reset = _open_scope.set(token)
            self._stamped[token] = _Open(scope, contextvars.copy_context())
            try:
                yield scope
            finally:
                del self._stamped[token]
                _open_scope.reset(reset)
            return
        state = self._routes.setdefault(route, _Route())
        async with state.lock:
            state.exclusive = _Open(scope, contextvars.copy_context())
            try:
                yield scope
            finally:
                state.exclusive = None

    # ---- HTTP ------------------------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            while True:
                try:
                    request = await _read_request(reader, self._admits)
                except _HTTPError as exc:  # a request we cannot read: say why, then end the connection
                    await _reply(writer, exc.status, _error_body(exc))
                    break
                if request is None:
                    break
                method, target, headers, body = request
                status, payload = await self._dispatch(method, target, headers.get(SCOPE_HEADER), body)
                await _reply(writer, status, payload)
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()

    def _admits(self, headers: dict[str, str]) -> bool:
        """Whether a request carries this bridge's token (compared in constant time: a timing
        difference must not spell the token out to a local peer)."""
        given = headers.get("authorization", "").encode("latin-1")  # the head was decoded as latin-1
        return hmac.compare_digest(given, self._bearer)

    def _open(self, route: str, token: str | None) -> _Open | None:
        """The scope a request belongs to: the one its token names, else the route's unstamped one (a
        token of a scope closed already is no token: such a late call is served as an unscoped one)."""
        found = self._stamped.get(token) if token is not None else None
        if found is not None:
            return found
        state = self._routes.get(route)
        return state.exclusive if state is not None else None

    async def _dispatch(self, method: str, target: str, token: str | None, body: bytes) -> tuple[int, Any]:
        try:
            route, endpoint = _parse_target(target)
            if endpoint == "models":
                return 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}
            if method != "POST":
                raise _HTTPError(405, f"{method} {endpoint} is not served by the mem0bench bridge")
            try:
                request = json.loads(body or b"{}")
            except json.JSONDecodeError as exc:
                raise _HTTPError(400, f"the request body is not JSON: {exc}") from None
            if not isinstance(request, dict):
                raise _HTTPError(400, "the request body is not a JSON object")
            found = self._open(route, token)
            scope = found.scope if found is not None else None
            stage = scope.stage if scope is not None else route
            serve = self._chat if endpoint == "chat/completions" else self._embeddings
            work = serve(request, stage, scope)
            if found is not None:
                # Run in the opener's context: its timing scope counts the call (usage, cached flag).
                return await asyncio.create_task(work, context=found.context)
            return await work
        except _HTTPError as exc:
            return exc.status, _error_body(exc)

    async def _chat(self, request: dict[str, Any], stage: str, scope: BridgeScope | None) -> tuple[int, Any]:
        if request.get("stream"):
            raise _HTTPError(400, "streaming is not supported by the mem0bench bridge")
        if int(request.get("n") or 1) != 1:
            raise _HTTPError(400, "n > 1 is not supported by the mem0bench bridge")
        if not isinstance(request.get("messages"), list):
            raise _HTTPError(400, "messages must be a list")
        if scope is not None:
            scope.calls += 1
        try:
            raw, _cached = await self.client.forward_chat(request, stage=stage)
        except LLMCallError as exc:
            return self._failed(exc, scope)
        return 200, _completion(raw, self.model)

    async def _embeddings(
        self, request: dict[str, Any], stage: str, scope: BridgeScope | None
    ) -> tuple[int, Any]:
        texts = request.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise _HTTPError(400, "input must be a string or a list of strings (token arrays are not served)")
        fmt = request.get("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            raise _HTTPError(400, f"encoding_format must be float or base64, not {fmt!r}")
        if scope is not None:
            scope.calls += 1
        try:
            vectors = await self.client.embed(texts, stage=stage)
        except LLMCallError as exc:
            return self._failed(exc, scope)
        data = []
        for i, vec in enumerate(np.asarray(vectors, dtype=np.float32)):
            value: Any = (
                base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
                if fmt == "base64"
                else vec.tolist()  # the same floats as float(x) each, at C speed
            )
            data.append({"object": "embedding", "index": i, "embedding": value})
        return 200, {
            "object": "list",
            "data": data,
            "model": self.embedding_model,
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }

    @staticmethod
    def _failed(exc: LLMCallError, scope: BridgeScope | None) -> tuple[int, Any]:
        failure = exc.failure
        if scope is not None:
            scope.failures.append(failure)
        status = _STATUS_OF_KIND.get(failure.kind, 500)
        message = f"mem0bench: the call failed for good ({failure.kind}): {failure.message}"
        return status, {"error": {"message": message, "type": failure.kind, "code": failure.kind}}


def _error_body(exc: _HTTPError) -> dict[str, Any]:
    return {"error": {"message": str(exc), "type": exc.kind, "code": None}}


async def _reply(writer: asyncio.StreamWriter, status: int, payload: Any) -> None:
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    writer.write(head.encode("latin-1") + data)
    await writer.drain()


def _parse_target(target: str) -> tuple[str, str]:
    path = target.split("?", 1)[0]
    parts = path.strip("/").split("/")
    if len(parts) >= 4 and parts[0] == "r" and parts[2] == "v1":
        endpoint = "/".join(parts[3:])
        if endpoint in ("chat/completions", "embeddings", "models"):
            return unquote(parts[1]), endpoint
    raise _HTTPError(404, f"no such route on the mem0bench bridge: {path}", "not_found")


def _completion(raw: dict[str, Any], model: str) -> dict[str, Any]:
    """A chat.completion body rebuilt from the raw reply the client keeps (and caches)."""
    message: dict[str, Any] = {"role": "assistant", "content": raw.get("content")}
    calls = raw.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": c.get("name"), "arguments": c.get("arguments") or "{}"},
            }
            for i, c in enumerate(calls)
        ]
    usage = raw.get("usage") or {}
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    choices = []
    if raw.get("choices", 1):
        finish = raw.get("finish_reason") or ("tool_calls" if calls else "stop")
        # The server's logprobs as it sent them (kept in the cached reply): a request that asked for them
        # gets them back, from the cache too.
        choices.append(
            {"index": 0, "message": message, "finish_reason": finish, "logprobs": raw.get("logprobs")}
        )
    return {
        "id": "chatcmpl-mem0bench-bridge",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


async def _read_request(
    reader: asyncio.StreamReader, admits: Callable[[dict[str, str]], bool]
) -> tuple[str, str, dict[str, str], bytes] | None:
    """One HTTP/1.1 request; None at a clean end of the connection. The head is read in one buffer
    search (a line-by-line read was a visible share of the event loop's CPU in a bridged run). A head
    `admits` refuses is a 401 before its body is read (the connection then ends)."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise _HTTPError(400, "the connection closed in the middle of a request head") from None
    except asyncio.LimitOverrunError:
        raise _HTTPError(400, "request head too large") from None
    try:
        line, headers = parse_head(head)
        method, target, _version = line.split(" ", 2)
        length = int(headers.get("content-length", "0"))
    except ValueError:
        start = head.split(b"\r\n", 1)[0][:80]
        raise _HTTPError(400, f"bad request head: {start!r}") from None
    if not admits(headers):
        raise _HTTPError(
            401,
            "the mem0bench bridge serves only its own run (wrong or missing API key)",
            "authentication_error",
        )
    if length > _MAX_BODY:
        raise _HTTPError(400, "request body too large")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        try:
            return method, target, headers, await read_chunked(reader)
        except ValueError as exc:
            raise _HTTPError(400, f"bad chunked body: {exc}") from None
    return method, target, headers, await reader.readexactly(length) if length > 0 else b""
