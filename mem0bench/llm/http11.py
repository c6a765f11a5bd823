"""A small HTTP/1.1 client on asyncio streams: the harness's own requests to the LLM server.

Why not the openai SDK or httpx: importing the SDK took ~1.2 s of a run's start (its thousands of
pydantic types), and its pool (httpx2 -> httpcore2, which imports trio when installed) another ~0.35 s
(`python -X importtime`), all for JSON POSTs to one origin. This client keeps what those requests
need: keep-alive connections to one origin, TLS (certifi's bundle, or `SSL_CERT_FILE` / `SSL_CERT_DIR`),
the `HTTP(S)_PROXY` / `ALL_PROXY` / `NO_PROXY` variables (an http:// proxy: absolute-form requests for
http, a CONNECT tunnel for https), one deadline per request, gzip / deflate bodies, and the framing
rules of RFC 9112 (Content-Length, chunked, or to the close; 1xx skipped; keep-alive per version and
`Connection`). The wire format is read with the stream's own C-level buffer searches: h11, tried first,
was 13% of the event loop's CPU in a bridged run. `parse_head` and `read_chunked` serve the LLM bridge's
server side too.

One pool per origin and per event loop. It never sends a request twice: an idle connection the server
has closed is dropped before use, and a connection that breaks once a request is on it is an
`HTTPConnectError` for the client's retry loop, which counts the retry (the server may have seen, and
billed, the request).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import ssl
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urlsplit

from mem0bench.common.errors import ConfigurationError

__all__ = [
    "ConnectionPool",
    "HTTPConnectError",
    "HTTPFailure",
    "HTTPResponse",
    "HTTPTimeout",
    "ProxyConfigError",
    "parse_head",
    "read_chunked",
]

_MAX_IDLE = 64  # idle keep-alive connections kept per pool; the client's semaphore bounds busy ones


class HTTPFailure(Exception):
    """One request failed before a complete reply arrived."""


class HTTPTimeout(HTTPFailure):
    """No complete reply within the request's deadline."""


class HTTPConnectError(HTTPFailure):
    """The connection could not be made, or broke (refused, reset, closed early, TLS, bad framing)."""


class ProxyConfigError(ConfigurationError):
    """A proxy variable names a proxy this client cannot use (only http:// proxies are supported)."""


@dataclass(frozen=True, slots=True)
class HTTPResponse:
    """A complete reply: status, headers (names lower-cased; a repeated name keeps its last value), body."""

    status: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def is_success(self) -> bool:
        return 200 <= self.status < 300


@dataclass(frozen=True, slots=True)
class _Origin:
    scheme: str
    host: str
    port: int

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


def _origin(url: SplitResult, what: str) -> _Origin:
    scheme = url.scheme.lower()
    if scheme not in ("http", "https") or not url.hostname:
        raise ConfigurationError(f"{what} must be an http:// or https:// URL, got {url.geturl()!r}")
    return _Origin(scheme, url.hostname, url.port or (443 if scheme == "https" else 80))


@dataclass(frozen=True, slots=True)
class _Proxy:
    origin: _Origin
    authorization: str | None  # a Proxy-Authorization value, from the proxy URL's user:password


def proxy_for(origin_url: str, environ: Mapping[str, str] | None = None) -> _Proxy | None:
    """The proxy the environment asks for to reach `origin_url` (curl's and httpx's variables), if any."""
    env = os.environ if environ is None else environ
    lower = {k.lower(): v for k, v in env.items() if k.lower().endswith("_proxy") and v}
    if not lower:
        return None
    target = urlsplit(origin_url)
    host = (target.hostname or "").lower()
    for entry in (e.strip().lower() for e in lower.get("no_proxy", "").split(",")):
        if not entry:
            continue
        if entry == "*":
            return None
        name = entry.split(":")[0].lstrip(".")
        if host == name or host.endswith("." + name):
            return None
    raw = lower.get(f"{target.scheme.lower()}_proxy") or lower.get("all_proxy")
    if not raw:
        return None
    url = urlsplit(raw if "://" in raw else f"http://{raw}")
    if url.scheme.lower() != "http":
        raise ProxyConfigError(
            f"proxy {url.scheme}://{url.hostname}:{url.port or ''} (from the environment's *_PROXY variables): "
            "only http:// proxies are supported; unset it or set NO_PROXY for this server"
        )
    auth = None
    if url.username is not None:
        pair = f"{unquote(url.username)}:{unquote(url.password or '')}".encode()
        auth = "Basic " + base64.b64encode(pair).decode("ascii")
    return _Proxy(_origin(url, "a proxy"), auth)


def _ssl_context() -> ssl.SSLContext:
    """Verified TLS: the CA files named by SSL_CERT_FILE / SSL_CERT_DIR, else certifi's bundle."""
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile is None and capath is None:
        import certifi  # the bundle the openai SDK uses: the same trust as before; imported for https only

        cafile = certifi.where()
    context = ssl.create_default_context(cafile=cafile, capath=capath)
    context.set_alpn_protocols(["http/1.1"])
    return context


def _decode_body(content: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return content
    if encoding in ("gzip", "x-gzip", "deflate"):
        try:
            return zlib.decompress(content, 47)  # 47: a gzip or a zlib header, detected
        except zlib.error as exc:
            if encoding == "deflate":
                with contextlib.suppress(zlib.error):
                    return zlib.decompress(content, -15)  # raw deflate, as some servers send "deflate"
            # A ValueError, as for a body that is not JSON: the client retries it as an unreadable reply.
            raise ValueError(f"the server's {encoding} body does not decompress: {exc}") from None
    raise ValueError(f"the server sent a body in an unsupported content encoding {encoding!r}")


class _BadReply(Exception):
    """The server's reply does not follow HTTP/1.1."""


def parse_head(head: bytes) -> tuple[str, dict[str, str]]:
    """A message head (start line, header lines, the blank line) -> (start line, headers with lower-cased
    names; a repeated name keeps its last value). `ValueError` for a header line without a name and colon.
    The one parser of both sides: this client's replies and the LLM bridge's requests."""
    start, *lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise ValueError(f"malformed header line {line[:80]!r}")
        headers[name.lower()] = value.strip()
    return start, headers


async def read_chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked body (RFC 9112 7.1), trailers skipped. `ValueError` for bad framing; the stream's
    `IncompleteReadError` when the peer closes first."""
    parts: list[bytes] = []
    try:
        while True:
            line = await reader.readuntil(b"\r\n")
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            if await reader.readexactly(2) != b"\r\n":
                raise ValueError("a chunk does not end with CRLF")
    except asyncio.LimitOverrunError:
        raise ValueError("a chunk-size or trailer line over 64 KiB") from None


def _reply_head(head: bytes) -> tuple[int, dict[str, str], bool]:
    """A reply's head -> (status, headers, keep-alive?); `_BadReply` when it is not HTTP/1.x."""
    try:
        status_line, headers = parse_head(head)
    except ValueError as exc:
        raise _BadReply(str(exc)) from None
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise _BadReply(f"not an HTTP/1.x status line: {status_line[:80]!r}")
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    keep_alive = "keep-alive" in tokens if parts[0] == "HTTP/1.0" else "close" not in tokens
    return int(parts[1]), headers, keep_alive


class _Connection:
    """One keep-alive connection; one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.keep_alive = True

    def reusable(self) -> bool:
        return self.keep_alive and not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()

    async def roundtrip(self, wire: bytes, method: str) -> HTTPResponse:
        """Send one serialized request and read its reply."""
        self.keep_alive = False  # until a whole, framed reply has been read
        self.writer.write(wire)
        await self.writer.drain()
        reader = self.reader
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    raise HTTPConnectError(
                        "the server closed the connection in the middle of its reply"
                    ) from None
                raise HTTPConnectError("the server closed the connection without replying") from None
            except asyncio.LimitOverrunError:
                raise _BadReply("the reply's headers exceed 64 KiB") from None
            status, headers, keep_alive = _reply_head(head)
            if not 100 <= status < 200:
                break  # 1xx (100 Continue and the like): the real reply follows
        framing = headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        try:
            if method == "HEAD" or status in (204, 304):
                content = b""
            elif "chunked" in framing:
                content = await read_chunked(reader)
            elif length is not None:
                content = await reader.readexactly(int(length))
            else:
                content = await reader.read()  # no framing: the body ends where the server closes
                keep_alive = False
        except asyncio.IncompleteReadError:
            raise HTTPConnectError("the server closed the connection in the middle of its reply") from None
        except ValueError as exc:  # a bad Content-Length or chunk framing
            raise _BadReply(f"bad body framing (Content-Length {length!r}): {exc}") from None
        encoding = headers.get("content-encoding")
        if encoding:
            content = _decode_body(content, encoding)
        self.keep_alive = keep_alive
        return HTTPResponse(status, headers, content)


class ConnectionPool:
    """Keep-alive connections to the origin of `base_url`; `request` sends one request and reads its reply.

    Raises `HTTPTimeout`, `HTTPConnectError` or `ProxyConfigError` (at construction); a non-2xx reply is
    returned, not raised. Belongs to the event loop that first uses it.
    """

    def __init__(self, base_url: str, *, user_agent: str, environ: Mapping[str, str] | None = None) -> None:
        url = urlsplit(base_url)
        self.origin = _origin(url, "the LLM server's URL (llm.base_url or OPENAI_BASE_URL)")
        self.base_path = url.path.rstrip("/")
        self._proxy = proxy_for(base_url, environ)
        self._user_agent = user_agent
        self._idle: list[_Connection] = []
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    def _target(self, path: str) -> str:
        path = self.base_path + "/" + path.lstrip("/")
        if self._proxy is not None and self.origin.scheme == "http":
            return f"http://{self.origin.authority}{path}"  # absolute-form, for the proxy
        return path

    async def _open(self) -> _Connection:
        origin, proxy = self.origin, self._proxy
        tls = None
        if origin.scheme == "https":
            if self._ssl is None:
                self._ssl = _ssl_context()
            tls = self._ssl
        try:
            if proxy is None:
                reader, writer = await asyncio.open_connection(
                    origin.host, origin.port, ssl=tls, server_hostname=origin.host if tls else None
                )
            else:
                reader, writer = await asyncio.open_connection(proxy.origin.host, proxy.origin.port)
                if tls is not None:
                    await self._tunnel(reader, writer, proxy)
                    await writer.start_tls(tls, server_hostname=origin.host)
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError) as exc:
            where = f"{origin.scheme}://{origin.authority}"
            via = f" via the proxy {proxy.origin.authority}" if proxy else ""
            raise HTTPConnectError(f"cannot connect to {where}{via}: {type(exc).__name__}: {exc}") from exc
        return _Connection(reader, writer)

    async def _tunnel(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proxy: _Proxy
    ) -> None:
        """Ask an http:// proxy for a CONNECT tunnel to the origin."""
        authority = f"{self.origin.host}:{self.origin.port}"
        lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
        if proxy.authorization:
            lines.append(f"Proxy-Authorization: {proxy.authorization}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[1].startswith("2"):
            writer.close()
            raise HTTPConnectError(f"the proxy {proxy.origin.authority} refused the tunnel: {status_line}")

    def _wire(self, method: str, path: str, extra: Mapping[str, str], body: bytes) -> bytes:
        """The request's bytes: request line, headers, blank line, body."""
        lines = [
            f"{method} {self._target(path)} HTTP/1.1",
            f"Host: {self.origin.authority}",
            f"User-Agent: {self._user_agent}",
            "Accept-Encoding: gzip, deflate",
        ]
        if method != "GET" or body:
            lines.append(f"Content-Length: {len(body)}")
        if self._proxy is not None and self._proxy.authorization and self.origin.scheme == "http":
            lines.append(f"Proxy-Authorization: {self._proxy.authorization}")
        for name, value in extra.items():
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                raise ValueError(f"header {name!r}: a line break in a header would split the request")
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def request(
        self, method: str, path: str, *, headers: Mapping[str, str], body: bytes = b"", timeout_s: float
    ) -> HTTPResponse:
        """One request to `base_url`'s path + `path`, with a deadline of `timeout_s` for all of it."""
        if self._closed:
            raise HTTPConnectError("the connection pool is closed")
        wire = self._wire(method, path, headers, body)
        try:
            async with asyncio.timeout(timeout_s):
                return await self._send(wire, method)
        except TimeoutError:
            raise HTTPTimeout(f"no complete reply within {timeout_s:g} s") from None

    async def _send(self, wire: bytes, method: str) -> HTTPResponse:
        conn = None
        while self._idle and conn is None:
            conn = self._idle.pop()
            if not conn.reusable():  # the server closed it while idle (its keep-alive timeout)
                conn.close()
                conn = None
        if conn is None:
            conn = await self._open()
        return await self._exchange(conn, wire, method)

    async def _exchange(self, conn: _Connection, wire: bytes, method: str) -> HTTPResponse:
        keep = False
        try:
            response = await conn.roundtrip(wire, method)
            keep = conn.reusable()
            return response
        except HTTPConnectError:
            raise
        except (OSError, asyncio.IncompleteReadError, ssl.SSLError) as exc:
            raise HTTPConnectError(f"{type(exc).__name__}: {exc}") from exc
        except _BadReply as exc:
            raise HTTPConnectError(f"the server's reply broke HTTP/1.1: {exc}") from exc
        finally:
            if keep and not self._closed and len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
            else:
                conn.close()  # also on cancellation and timeout: a half-read reply cannot be reused

    async def aclose(self) -> None:
        """Close the idle connections; the pool refuses requests afterwards."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        for conn in idle:
            with contextlib.suppress(OSError, ssl.SSLError):
                await conn.writer.wait_closed()
