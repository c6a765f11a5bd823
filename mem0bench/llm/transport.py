"""JSON requests to an OpenAI-compatible server over httpx2: the headers its API expects, errors the retry
loop reads.

httpx2 (already a dependency: the bridge and the memory-service client use it) keeps the pool of
keep-alive connections, verifies TLS (`SSL_CERT_FILE` / `SSL_CERT_DIR`, else the system's store) and takes
its proxy from `HTTP(S)_PROXY` / `ALL_PROXY` / `NO_PROXY` (http://, https:// and, with `httpx2[socks]`,
socks5:// proxies). The request bodies are the ones the openai SDK would send (compact UTF-8 JSON, built
by the caller: a body never changes with the wire underneath), with the headers the API reads:
`Authorization`, and `OpenAI-Organization` / `OpenAI-Project` from the variables the SDK reads them from.

Every reply's `x-ratelimit-*` headers are kept (`rate_limits`, the latest seen). Never retries: one
request is one attempt; `llm.retry` decides what happens next.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

import httpx2

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.text import one_line
from mem0bench.llm.ratelimit import ServerLimits, parse_server_limits

__all__ = [
    "HTTPConnectError",
    "HTTPFailure",
    "HTTPStatusError",
    "HTTPTimeout",
    "JsonTransport",
    "ProxyConfigError",
    "error_message",
    "forget_reply_limits",
    "new_client",
    "reply_limits",
    "send",
]

_USER_AGENT = "mem0bench/0.1 (OpenAI-compatible JSON client)"

_REPLY_LIMITS: ContextVar[ServerLimits | None] = ContextVar("mem0bench_reply_limits", default=None)


def reply_limits() -> ServerLimits | None:
    """The `x-ratelimit-*` figures of the last reply this task received (None: none, or no reply yet since
    `forget_reply_limits`). Per task, unlike `JsonTransport.rate_limits`, so that a request's pacer reads
    its own reply's figures, not those of another model's request that finished in between."""
    return _REPLY_LIMITS.get()


def forget_reply_limits() -> None:
    """Before a request: a failure that brings no reply leaves no stale figures behind."""
    _REPLY_LIMITS.set(None)


_MAX_MESSAGE = 500


class HTTPFailure(Exception):
    """One request failed before a complete reply arrived."""


class HTTPTimeout(HTTPFailure):
    """No complete reply within the request's deadline."""


class HTTPConnectError(HTTPFailure):
    """The connection could not be made, or broke (refused, reset, closed early, TLS, a proxy's refusal)."""


class HTTPStatusError(HTTPFailure):
    """The server answered with a non-2xx status. `message` is the server's own error text when the body
    is OpenAI-shaped (`{"error": {"message": ...}}`), else the body's start."""

    def __init__(self, status_code: int, message: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.message = message
        self.headers = headers


class ProxyConfigError(ConfigurationError):
    """A proxy variable names a proxy httpx2 cannot use here (an unknown scheme, or socks without
    `httpx2[socks]`)."""


def error_message(content: bytes) -> str:
    """A one-line message for an error reply's body: the server's own text when it gave one
    (`{"error": {"message": ...}}` as OpenAI, `{"error": "..."}` as many services), else the body's start.
    The one error-body reader of the LLM client and the memory-service client."""
    text = content.decode("utf-8", "replace").strip()
    body: Any = text
    with contextlib.suppress(ValueError):
        body = json.loads(text)
    message = ""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            message = str(error.get("message") or "")
        elif isinstance(error, str):
            message = error
        if not message:
            message = json.dumps(body, ensure_ascii=False)
    else:
        message = text
    return one_line(message)[:_MAX_MESSAGE] or "(no error text)"


def _check_url(url: str, what: str) -> None:
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"{what} must be an http:// or https:// URL, got {url!r}")


def new_client(
    base_url: str,
    *,
    timeout_s: float,
    max_connections: int,
    headers: Mapping[str, str] | None = None,
    what: str = "the server's URL",
) -> httpx2.AsyncClient:
    """An httpx2 client for one origin: at most `max_connections` connections (the caller's concurrency),
    as many kept alive, the environment's proxy and CA settings. `ConfigurationError` (one line) for a
    URL that is not http(s) or a proxy variable that cannot be used."""
    _check_url(base_url, what)
    try:
        return httpx2.AsyncClient(
            base_url=base_url,
            headers=dict(headers or {}),
            timeout=httpx2.Timeout(timeout_s),
            limits=httpx2.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            trust_env=True,
        )
    except ImportError as exc:  # a socks5:// proxy without socksio
        raise ProxyConfigError(
            f"the proxy in the environment's *_PROXY variables needs an extra package ({one_line(str(exc))}); "
            "pip install 'httpx2[socks]', or unset the variable"
        ) from None
    except (ValueError, httpx2.InvalidURL) as exc:
        raise ProxyConfigError(
            f"the environment's *_PROXY variables name a proxy that cannot be used ({one_line(str(exc))}); "
            "use an http://, https:// or socks5:// proxy, or unset the variable"
        ) from None


async def send(
    client: httpx2.AsyncClient,
    method: str,
    path: str,
    *,
    timeout_s: float,
    content: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> httpx2.Response:
    """One request, its whole reply read within `timeout_s` counted from here (connecting, waiting for a
    pooled connection and reading the body included); -> the reply, whatever its status.

    Raises `HTTPTimeout`, `HTTPConnectError`, or `ValueError` for a body that does not decode (a gzip
    body that is not gzip): the retry loop's unreadable reply."""
    try:
        async with asyncio.timeout(timeout_s):
            return await client.request(method, path, content=content, headers=headers)
    except (TimeoutError, httpx2.TimeoutException):
        raise HTTPTimeout(f"no complete reply within {timeout_s:g} s") from None
    except httpx2.DecodingError as exc:
        raise ValueError(f"the server's body does not decode: {one_line(str(exc))}") from None
    except httpx2.ConnectError as exc:
        raise HTTPConnectError(f"cannot connect to {client.base_url}: {_reason(exc)}") from None
    except httpx2.ProxyError as exc:
        raise HTTPConnectError(f"the proxy failed the request to {client.base_url}: {_reason(exc)}") from None
    except httpx2.TransportError as exc:  # reset, closed early, a reply that breaks HTTP
        raise HTTPConnectError(_reason(exc)) from None


def _reason(exc: BaseException) -> str:
    """The exception's text, with its cause's when httpx2 gives none of its own."""
    text = str(exc) or str(exc.__cause__ or exc.__context__ or "")
    return one_line(f"{type(exc).__name__}: {text}")


class JsonTransport:
    """POST / GET JSON under `base_url`; -> the decoded JSON reply.

    Raises `HTTPTimeout`, `HTTPConnectError`, `HTTPStatusError` (a non-2xx reply) and `ValueError` (a
    2xx body that is not JSON). Never retries (the client's retry loop decides). Its connections belong to
    the event loop that first uses them; `ConfigurationError` at construction for an unusable URL or proxy.
    """

    def __init__(self, base_url: str, api_key: str, *, timeout_s: float, max_connections: int = 16) -> None:
        self.base_url = base_url
        self.timeout_s = timeout_s
        headers = {
            "authorization": f"Bearer {api_key}",
            "accept": "application/json",
            "user-agent": _USER_AGENT,
        }
        for variable, header in (
            ("OPENAI_ORG_ID", "openai-organization"),
            ("OPENAI_PROJECT_ID", "openai-project"),
        ):
            value = os.environ.get(variable)
            if value:
                headers[header] = value
        self._client = new_client(
            base_url,
            timeout_s=timeout_s,
            max_connections=max_connections,
            headers=headers,
            what="the LLM server's URL (llm.base_url or OPENAI_BASE_URL)",
        )
        self.rate_limits: ServerLimits | None = None
        """The latest `x-ratelimit-*` headers the server sent (None until a reply carried them)."""

    async def post(self, path: str, content: bytes, *, timeout_s: float | None = None) -> Any:
        """POST `content` (UTF-8 JSON) to `path` (e.g. "/chat/completions"); -> the parsed JSON body."""
        return await self._request("POST", path, content, timeout_s)

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        """`post` with `body` serialized as the SDK serializes it (compact, UTF-8)."""
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        return await self.post(path, content)

    async def get(self, path: str, *, timeout_s: float | None = None) -> Any:
        """GET `path`; -> the parsed JSON body."""
        return await self._request("GET", path, None, timeout_s)

    async def post_form(self, path: str, content: bytes, content_type: str) -> Any:
        """POST a body that is not JSON (the Batch API's multipart file upload); -> the parsed JSON body."""
        return await self._request("POST", path, content, None, content_type=content_type)

    async def get_bytes(self, path: str) -> bytes:
        """GET `path`; -> the raw body (a Batch API file's JSONL content)."""
        return await self._request("GET", path, None, None, parse=False)

    async def _request(
        self, method: str, path: str, content: bytes | None, timeout_s: float | None,
        *, content_type: str = "application/json", parse: bool = True,
    ) -> Any:  # fmt: skip
        headers = {"content-type": content_type} if content is not None else None
        reply = await send(
            self._client, method, path.lstrip("/"), timeout_s=timeout_s or self.timeout_s, content=content,
            headers=headers,
        )  # fmt: skip
        limits = parse_server_limits(reply.headers)
        _REPLY_LIMITS.set(limits)
        if limits is not None:
            self.rate_limits = limits
        if not reply.is_success:
            raise HTTPStatusError(reply.status_code, error_message(reply.content), reply.headers)
        return json.loads(reply.content) if parse else reply.content

    async def aclose(self) -> None:
        await self._client.aclose()
