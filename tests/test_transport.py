"""The LLM client's wire (mem0bench/llm/transport.py, on httpx2) against real sockets: servers that misbehave
the way real ones do (chunked and gzip bodies, resets, silence, error pages, TLS, proxies), the bytes
that go out, and the settings it refuses in one line.

The stand-in server covers the OpenAI side (429 with Retry-After, 5xx, usage...) in test_llm_client.py;
these cover the wire underneath it."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import importlib.util
import json
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trustme

from devtools.standin.server import StandinServer
from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.client import LLMClient
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.transport import (
    HTTPConnectError,
    HTTPStatusError,
    HTTPTimeout,
    JsonTransport,
    ProxyConfigError,
)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
    """-> (request line, lower-cased headers, body), or None when the client closed the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers = {
        k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)
    }
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return lines[0], headers, body


def reply(body: bytes, *, status: str = "200 OK", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


class Server:
    """A TCP server whose connections `handler` serves; counts connections, keeps requests."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.connections = 0
        self.open = 0
        self.most_open = 0
        self.requests: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.bodies: list[bytes] = []

    async def __aenter__(self) -> Server:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            self.open += 1
            self.most_open = max(self.most_open, self.open)
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
                pass
            finally:
                self.open -= 1
                writer.close()

        self._server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    async def note(self, reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
        got = await read_request(reader)
        if got is not None:
            self.requests.append(got[0])
            self.headers.append(got[1])
            self.bodies.append(got[2])
        return got


def run(coro: Awaitable[object]) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def transport(url: str, **kw: float) -> JsonTransport:
    return JsonTransport(url, "sk-test", timeout_s=float(kw.pop("timeout_s", 5.0)), **kw)  # type: ignore[arg-type]


CHAT_REPLY = json.dumps(
    {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Ici."}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
    }
).encode()


def test_the_body_on_the_wire_is_the_cache_keys_body_byte_for_byte() -> None:
    # The request bodies (and so every cache key, sha256(body + "\0" + salt)) do not depend on the wire
    # underneath: the digest was taken on main (fa37cf6), before httpx2 carried the requests.
    messages = [{"role": "system", "content": "Réponds brièvement."}, {"role": "user", "content": "Où ? 🙂"}]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await server.note(reader) is not None:
            writer.write(reply(CHAT_REPLY))
            await writer.drain()

    server = Server(handler)

    async def go() -> None:
        async with server:
            settings = LLMSettings(
                base_url=server.url(), api_key="sk-test", model="gpt-4o-mini", temperature=0.0
            )
            async with LLMClient(settings) as client:
                assert (await client.chat(messages, stage="answer", max_tokens=7)).text == "Ici."

    run(go())
    assert server.requests == ["POST /v1/chat/completions HTTP/1.1"]
    digest = hashlib.sha256(server.bodies[0]).hexdigest()
    assert digest == "e3cd9028edb34511f133f9caef1d388a692670344d10f86c0318638db3ccbcd7"


def test_keep_alive_chunked_and_gzip_replies_and_the_headers_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-test")
    payload = json.dumps({"x": "y" * 1000}).encode()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (got := await server.note(reader)) is not None:
            if got[0].startswith("POST /v1/gz"):
                writer.write(reply(gzip.compress(payload), extra="Content-Encoding: gzip\r\n"))
            else:
                writer.write(
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b'5\r\n{"a":\r\n3;ext=1\r\n "b\r\n2\r\n"}\r\n0\r\nX-Trailer: t\r\n\r\n'
                )
            await writer.drain()

    server = Server(handler)

    async def main() -> list[object]:
        async with server:
            t = transport(server.url())
            out = [
                await t.post("/chunked", b"{}"),
                await t.post_json("/gz", {"q": "é"}),
                await t.get("/models"),
            ]
            await t.aclose()
            return out

    assert run(main()) == [{"a": "b"}, json.loads(payload), {"a": "b"}]
    assert server.connections == 1  # one kept-alive connection for all three
    assert server.requests == ["POST /v1/chunked HTTP/1.1", "POST /v1/gz HTTP/1.1", "GET /v1/models HTTP/1.1"]
    assert server.bodies[1] == '{"q":"é"}'.encode()  # compact UTF-8, as the SDK sends it
    sent = server.headers[0]
    assert sent["authorization"] == "Bearer sk-test" and sent["content-type"] == "application/json"
    assert sent["openai-organization"] == "org-test" and sent["host"] == f"127.0.0.1:{server.port}"
    assert "gzip" in sent["accept-encoding"] and "content-type" not in server.headers[2]


def test_error_replies_carry_the_servers_message_and_an_unreadable_body_is_a_value_error() -> None:
    bodies = [
        (b'{"error": {"message": "Rate limit reached", "type": "rate_limit"}}', "429 Too Many Requests"),
        (b"<html>bad\ngateway</html>", "502 Bad Gateway"),
        (b'{"error": "busy"}', "503 Service Unavailable"),
        (b"not json", "200 OK"),
        (b"not gzip", "200 OK"),
    ]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for i, (body, status) in enumerate(bodies):
            await server.note(reader)
            extra = "Retry-After: 3\r\n" + ("Content-Encoding: gzip\r\n" if i == 4 else "")
            writer.write(reply(body, status=status, extra=extra))
            await writer.drain()

    server = Server(handler)

    async def main() -> list[BaseException]:
        async with server:
            t = transport(server.url())
            errors = []
            for _ in bodies:
                try:
                    await t.post_json("/chat/completions", {"a": 1})
                except (HTTPStatusError, ValueError) as exc:
                    errors.append(exc)
            await t.aclose()
            return errors

    limited, gateway, busy, garbled, undecodable = run(main())  # type: ignore[misc]
    assert isinstance(limited, HTTPStatusError) and limited.status_code == 429
    assert limited.message == "Rate limit reached" and limited.headers["Retry-After"] == "3"
    assert isinstance(gateway, HTTPStatusError) and gateway.message == "<html>bad gateway</html>"
    assert isinstance(busy, HTTPStatusError) and busy.message == "busy"
    assert isinstance(garbled, ValueError) and not isinstance(garbled, HTTPStatusError)
    assert isinstance(undecodable, ValueError) and "does not decode" in str(undecodable)


def test_refused_reset_and_silent_servers() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (got := await server.note(reader)) is not None:
            if got[2] == b'"reset"':
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf")
                await writer.drain()
                writer.transport.abort()
                return
            if got[2] == b'"slow"':
                await asyncio.sleep(5)
            writer.write(reply(b'"fast"'))
            await writer.drain()

    server = Server(handler)

    async def main() -> list[str]:
        out = []
        refused = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = refused.sockets[0].getsockname()[1]
        refused.close()
        await refused.wait_closed()
        t = transport(f"http://127.0.0.1:{port}/v1")
        with pytest.raises(HTTPConnectError) as caught:
            await t.get("/models")
        out.append(str(caught.value))
        await t.aclose()
        async with server:
            t = transport(server.url())
            with pytest.raises(HTTPConnectError):
                await t.post("/x", b'"reset"')
            started = time.monotonic()
            with pytest.raises(HTTPTimeout, match="within 0.3 s"):
                await t.post("/x", b'"slow"', timeout_s=0.3)
            out.append(f"{time.monotonic() - started:.1f}")
            out.append(await t.post("/x", b'"quick"'))
            await t.aclose()
        return out

    refused_message, waited, fast = run(main())  # type: ignore[misc]
    assert refused_message.startswith("cannot connect to http://127.0.0.1:") and "\n" not in refused_message
    assert 0.3 <= float(waited) < 2.0 and fast == "fast"


def test_connections_are_pooled_up_to_the_concurrency() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await server.note(reader) is not None:
            await asyncio.sleep(0.05)
            writer.write(reply(b"{}"))
            await writer.drain()

    server = Server(handler)

    async def main() -> None:
        async with server:
            t = transport(server.url(), max_connections=3)
            await asyncio.gather(*(t.post("/x", b"{}") for _ in range(12)))
            await t.aclose()

    run(main())
    assert len(server.requests) == 12 and server.most_open <= 3 and server.connections <= 3


def test_a_bad_base_url_or_proxy_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    for url in ("ftp://example.com/v1", "localhost:8000/v1", "http:///v1"):
        with pytest.raises(
            ConfigurationError, match=r"llm.base_url or OPENAI_BASE_URL\) must be an http"
        ) as e:
            transport(url)
        assert "\n" not in str(e.value)
    monkeypatch.setenv("HTTPS_PROXY", "ftp://proxy.corp:21")
    with pytest.raises(ProxyConfigError, match="cannot be used") as e:
        transport("https://api.openai.com/v1")
    assert "\n" not in str(e.value) and issubclass(ProxyConfigError, ConfigurationError)
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    if importlib.util.find_spec("socksio") is None:  # socks needs the extra: said in one line
        with pytest.raises(ProxyConfigError, match=r"pip install 'httpx2\[socks\]'"):
            transport("https://api.openai.com/v1")
    else:
        transport("https://api.openai.com/v1")


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


def tls_server_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


async def echo_path(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while (got := await read_request(reader)) is not None:
        writer.write(reply(json.dumps(got[0]).encode()))
        await writer.drain()


def test_tls_is_verified_against_ssl_cert_file(
    authority: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    server = Server(echo_path, tls=tls_server_context(authority))

    async def main(trusted: bool) -> object:
        async with server:
            if trusted:
                monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
            else:
                monkeypatch.delenv("SSL_CERT_FILE", raising=False)
                monkeypatch.delenv("SSL_CERT_DIR", raising=False)
            t = transport(server.url("https"))
            try:
                return await t.get("/models")
            finally:
                await t.aclose()

    assert run(main(trusted=True)) == "GET /v1/models HTTP/1.1"
    with pytest.raises(HTTPConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        run(main(trusted=False))


class Proxy:
    """An http:// proxy: absolute-form requests are forwarded to their origin; CONNECT opens a tunnel."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.auth: list[str | None] = []

    async def handler(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, *rest = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in rest if ":" in h)}
        self.seen.append(line)
        self.auth.append(headers.get("proxy-authorization"))
        method, target, _ = line.split(" ")
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
            return
        origin = target.split("/")[2]
        host, port = origin.rsplit(":", 1)
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        path = "/" + target.split("/", 3)[3]
        kept = [h for h in rest if h and not h.lower().startswith("connection:")]
        up_writer.write(
            f"{method} {path} HTTP/1.1\r\n".encode()
            + "".join(f"{h}\r\n" for h in kept).encode()
            + b"Connection: close\r\n"
        )
        up_writer.write(b"\r\n" + body)
        await up_writer.drain()
        await pipe(up_reader, writer)


async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except ConnectionError:
        pass
    finally:
        sink.close()


def test_http_and_https_through_the_environments_proxy(
    authority: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = Proxy()
    plain = Server(echo_path)
    secure = Server(echo_path, tls=tls_server_context(authority))
    front = Server(proxy.handler)

    async def main() -> list[object]:
        async with plain, secure, front:
            monkeypatch.setenv("HTTP_PROXY", f"http://u:p%40ss@127.0.0.1:{front.port}")
            monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{front.port}")
            out = []
            for t in (transport(plain.url()), transport(secure.url("https"))):
                out.append(await t.get("/models"))
                await t.aclose()
            return out

    assert run(main()) == ["GET /v1/models HTTP/1.1"] * 2
    assert proxy.seen == [
        f"GET http://127.0.0.1:{plain.port}/v1/models HTTP/1.1",  # absolute-form to the proxy
        f"CONNECT 127.0.0.1:{secure.port} HTTP/1.1",  # a tunnel, TLS end to end
    ]
    assert proxy.auth == ["Basic dTpwQHNz", None]  # u:p@ss, from the URL's user info


def test_the_client_keeps_the_servers_latest_rate_limit_headers() -> None:
    with StandinServer(ratelimit=(500, 200_000)) as standin:
        settings = LLMSettings(base_url=standin.base_url, api_key="sk-test")

        async def go() -> list[object]:
            async with LLMClient(settings) as client:
                seen: list[object] = [client.rate_limits]
                for question in ("one", "two"):
                    await client.chat([{"role": "user", "content": question}], stage="answer")
                    seen.append(client.rate_limits)
                return seen

        before, first, second = run(go())  # type: ignore[misc]
    assert before is None
    assert first.limit_requests == 500 and first.limit_tokens == 200_000  # type: ignore[attr-defined]
    assert first.remaining_requests == 499 and second.remaining_requests == 498  # type: ignore[attr-defined]
    assert second.remaining_tokens < first.remaining_tokens < 200_000  # type: ignore[attr-defined]
    assert first.reset_requests_s == pytest.approx(0.12)  # type: ignore[attr-defined]  # "120ms"
    assert second.seen_at >= first.seen_at  # type: ignore[attr-defined]
