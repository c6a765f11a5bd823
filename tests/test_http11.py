"""The harness's HTTP/1.1 client (mem0bench/llm/http11.py) against real sockets: servers that misbehave the
way real ones do (chunked bodies, closed keep-alive connections, resets, silence, gzip, TLS, proxies).

The stand-in server covers the OpenAI side (429 with Retry-After, 5xx, usage...) in test_llm_client.py;
these cover the wire underneath it."""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trustme

from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.http11 import (
    ConnectionPool,
    HTTPConnectError,
    HTTPTimeout,
    ProxyConfigError,
    _decode_body,
    proxy_for,
)
from mem0bench.llm.transport import HTTPStatusError, JsonTransport

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
    """A TCP server whose connections `handler` serves; counts connections and keeps request lines."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.connections = 0
        self.requests: list[str] = []
        self.headers: list[dict[str, str]] = []

    async def __aenter__(self) -> Server:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
                pass
            finally:
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
        return got


def run(coro: Awaitable[object]) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def pool(url: str, **environ: str) -> ConnectionPool:
    return ConnectionPool(url, user_agent="test", environ=environ)


def test_keep_alive_reuses_one_connection_and_reads_chunked_bodies() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await server.note(reader) is not None:
            writer.write(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
            )
            await writer.drain()

    server = Server(handler)

    async def main() -> list[bytes]:
        async with server:
            p = pool(server.url())
            out = [
                (await p.request("POST", "/x", headers={}, body=b"{}", timeout_s=5)).content for _ in range(3)
            ]
            await p.aclose()
            return out

    assert run(main()) == [b"hello world"] * 3
    assert server.connections == 1 and server.requests == ["POST /v1/x HTTP/1.1"] * 3


def test_an_idle_connection_the_server_closed_is_not_used() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if await server.note(reader) is not None:
            writer.write(reply(b"ok"))  # keep-alive by HTTP/1.1's default, then closes anyway (idle timeout)
            await writer.drain()

    server = Server(handler)

    async def main() -> list[bytes]:
        async with server:
            p = pool(server.url())
            first = await p.request("POST", "/x", headers={}, body=b"1", timeout_s=5)
            await asyncio.sleep(0.05)  # the close reaches the client while the connection is idle
            second = await p.request("POST", "/x", headers={}, body=b"2", timeout_s=5)
            await p.aclose()
            return [first.content, second.content]

    assert run(main()) == [b"ok", b"ok"]
    assert server.connections == 2 and len(server.requests) == 2  # each request sent exactly once


def test_a_reused_connection_closed_before_any_reply_byte_is_an_error_not_a_silent_resend() -> None:
    # The race the idle check cannot see: the server closes the kept-alive connection just as the next
    # request goes out on it. It may have read (and billed) the request: the client's retry loop decides,
    # and counts the retry.
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served = 0
        while await server.note(reader) is not None:
            if server.connections == 1 and served == 1:
                return  # closes without a byte of a reply
            served += 1
            writer.write(reply(b"ok"))
            await writer.drain()

    server = Server(handler)

    async def main() -> list[bytes]:
        async with server:
            p = pool(server.url())
            out = [(await p.request("POST", "/x", headers={}, body=b"{}", timeout_s=5)).content]
            with pytest.raises(HTTPConnectError, match="closed the connection without replying"):
                await p.request("POST", "/x", headers={}, body=b"{}", timeout_s=5)
            out.append((await p.request("POST", "/x", headers={}, body=b"{}", timeout_s=5)).content)
            await p.aclose()
            return out

    assert run(main()) == [b"ok", b"ok"]
    assert server.connections == 2 and len(server.requests) == 3  # the third on a new connection


def failing_request(serve: Callable[[asyncio.StreamWriter], Awaitable[None]], match: str) -> Server:
    """One request to a fresh server that reads it, then does `serve`; the request must fail with an
    `HTTPConnectError` matching `match`. -> the server (its counts)."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.note(reader)
        await serve(writer)

    server = Server(handler)

    async def main() -> None:
        async with server:
            p = pool(server.url())
            with pytest.raises(HTTPConnectError, match=match):
                await p.request("POST", "/x", headers={}, body=b"{}", timeout_s=5)
            await p.aclose()

    run(main())
    return server


def test_a_new_connection_closed_before_any_reply_is_a_connection_error() -> None:
    async def close(writer: asyncio.StreamWriter) -> None:
        return None  # the server's handler returns: the connection closes without a reply

    server = failing_request(close, "closed the connection without replying")
    assert server.connections == 1  # not sent again: a fresh connection's failure is the server's answer


def test_a_reset_in_the_middle_of_a_reply_is_a_connection_error_not_a_retry() -> None:
    async def half_then_reset(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf")
        await writer.drain()
        writer.transport.abort()

    server = failing_request(half_then_reset, "in the middle of its reply|ConnectionResetError")
    assert len(server.requests) == 1


def test_a_silent_server_times_out_and_its_connection_is_not_reused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (got := await server.note(reader)) is not None:
            if got[2] == b"slow":
                await asyncio.sleep(5)
            writer.write(reply(b"fast"))
            await writer.drain()

    server = Server(handler)

    async def main() -> bytes:
        async with server:
            p = pool(server.url())
            with pytest.raises(HTTPTimeout, match="within 0.2 s"):
                await p.request("POST", "/x", headers={}, body=b"slow", timeout_s=0.2)
            ok = await p.request("POST", "/x", headers={}, body=b"quick", timeout_s=5)
            await p.aclose()
            return ok.content

    assert run(main()) == b"fast"
    assert server.connections == 2  # the timed-out connection was dropped, not handed a second request


def test_gzip_bodies_are_decoded_and_a_close_delimited_body_is_read_to_the_end() -> None:
    payload = json.dumps({"x": "y" * 1000}).encode()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (got := await server.note(reader)) is not None:
            if got[0].startswith("POST /v1/gz"):
                writer.write(reply(gzip.compress(payload), extra="Content-Encoding: gzip\r\n"))
                await writer.drain()
                continue
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + payload)  # ends at close
            await writer.drain()
            return

    server = Server(handler)

    async def main() -> list[bytes]:
        async with server:
            p = pool(server.url())
            a = await p.request("POST", "/gz", headers={}, body=b"{}", timeout_s=5)
            b = await p.request("POST", "/close", headers={}, body=b"{}", timeout_s=5)
            await p.aclose()
            return [a.content, b.content]

    assert run(main()) == [payload, payload]
    assert "gzip" in server.headers[0]["accept-encoding"]


def test_a_refused_connection_names_the_server() -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        p = pool(f"http://127.0.0.1:{port}/v1")
        with pytest.raises(HTTPConnectError, match=f"cannot connect to http://127.0.0.1:{port}"):
            await p.request("GET", "/models", headers={}, timeout_s=5)

    run(main())


def test_json_transport_turns_error_replies_into_status_errors_with_the_servers_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-test")
    bodies = [
        (b'{"error": {"message": "Rate limit reached", "type": "rate_limit"}}', "429 Too Many Requests"),
        (b"<html>bad gateway</html>", "502 Bad Gateway"),
        (b"not json", "200 OK"),
    ]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for body, status in bodies:
            await server.note(reader)
            writer.write(reply(body, status=status, extra="Retry-After: 3\r\n"))
            await writer.drain()

    server = Server(handler)

    async def main() -> list[BaseException]:
        async with server:
            transport = JsonTransport(server.url(), "sk-test", timeout_s=5)
            errors = []
            for _ in bodies:
                try:
                    await transport.post_json("/chat/completions", {"a": 1})
                except (HTTPStatusError, ValueError) as exc:
                    errors.append(exc)
            await transport.aclose()
            return errors

    limited, gateway, garbled = run(main())  # type: ignore[misc]
    assert isinstance(limited, HTTPStatusError) and limited.status_code == 429
    assert limited.message == "Rate limit reached" and limited.headers["retry-after"] == "3"
    assert isinstance(gateway, HTTPStatusError) and gateway.message == "<html>bad gateway</html>"
    assert isinstance(garbled, ValueError) and not isinstance(garbled, HTTPStatusError)
    sent = server.headers[0]
    assert sent["authorization"] == "Bearer sk-test" and sent["content-type"] == "application/json"
    assert sent["openai-organization"] == "org-test" and sent["host"] == f"127.0.0.1:{server.port}"


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


def tls_server_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


async def echo_path(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while (got := await read_request(reader)) is not None:
        writer.write(reply(got[0].encode()))
        await writer.drain()


def test_tls_is_verified_against_ssl_cert_file(
    authority: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    server = Server(echo_path, tls=tls_server_context(authority))

    async def main(trusted: bool) -> bytes:
        async with server:
            if trusted:
                monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
            else:
                monkeypatch.delenv("SSL_CERT_FILE", raising=False)
                monkeypatch.delenv("SSL_CERT_DIR", raising=False)
            p = pool(server.url("https"))
            try:
                return (await p.request("GET", "/models", headers={}, timeout_s=5)).content
            finally:
                await p.aclose()

    assert run(main(trusted=True)) == b"GET /v1/models HTTP/1.1"
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
        up_writer.write(
            f"{method} {path} HTTP/1.1\r\n".encode() + "".join(f"{h}\r\n" for h in rest if h).encode()
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


def test_http_and_https_through_an_http_proxy(
    authority: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    proxy = Proxy()
    plain = Server(echo_path)
    secure = Server(echo_path, tls=tls_server_context(authority))
    front = Server(proxy.handler)

    async def main() -> list[bytes]:
        async with plain, secure, front:
            environ = {
                "HTTP_PROXY": f"http://u:p%40ss@127.0.0.1:{front.port}",
                "https_proxy": f"127.0.0.1:{front.port}",
            }
            out = []
            for p in (pool(plain.url(), **environ), pool(secure.url("https"), **environ)):
                out.append((await p.request("GET", "/models", headers={}, timeout_s=5)).content)
                await p.aclose()
            return out

    assert run(main()) == [b"GET /v1/models HTTP/1.1"] * 2
    assert proxy.seen == [
        f"GET http://127.0.0.1:{plain.port}/v1/models HTTP/1.1",  # absolute-form to the proxy
        f"CONNECT 127.0.0.1:{secure.port} HTTP/1.1",  # a tunnel, TLS end to end
    ]
    assert proxy.auth == ["Basic dTpwQHNz", None]  # u:p@ss, from the URL's user info


def test_which_proxy_the_environment_asks_for() -> None:
    assert proxy_for("https://api.openai.com/v1", {}) is None
    found = proxy_for("https://api.openai.com/v1", {"HTTPS_PROXY": "http://proxy.corp:3128"})
    assert found is not None and found.origin.host == "proxy.corp" and found.origin.port == 3128
    assert proxy_for("http://127.0.0.1:8000/v1", {"HTTPS_PROXY": "http://proxy:3128"}) is None  # scheme
    assert (
        proxy_for("https://api.openai.com/v1", {"ALL_PROXY": "http://p:1", "NO_PROXY": ".openai.com"}) is None
    )
    assert proxy_for("http://localhost:8000/v1", {"all_proxy": "http://p:1", "no_proxy": "*"}) is None
    with pytest.raises(ProxyConfigError, match="only http:// proxies"):
        proxy_for("https://api.openai.com/v1", {"HTTPS_PROXY": "socks5://p:1080"})
    assert issubclass(ProxyConfigError, ConfigurationError)  # the run's one-line `error:`, exit 2


def test_a_body_that_does_not_decompress_is_an_unreadable_reply() -> None:
    # A ValueError (the client retries it as an unreadable reply), never zlib's own error escaping.
    with pytest.raises(ValueError, match="gzip body does not decompress"):
        _decode_body(b"not gzip at all", "gzip")
    with pytest.raises(ValueError, match="unsupported content encoding 'br'"):
        _decode_body(b"x", "br")
    assert _decode_body(gzip.compress(b"ok"), "gzip") == b"ok"
    assert _decode_body(zlib.compress(b"ok")[2:-4], "deflate") == b"ok"  # raw deflate, as some servers send


def test_framing_rules_interim_replies_http_1_0_and_broken_replies() -> None:
    replies = [
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",  # 1xx skipped
        b"HTTP/1.1 204 No Content\r\n\r\n",  # no body, connection kept
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nab\r\n0\r\nX-Trailer: t\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nold!",  # HTTP/1.0 without keep-alive: closed after
        b"SMTP ready\r\n\r\n",  # not HTTP at all
    ]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await server.note(reader) is not None:
            writer.write(replies[len(server.requests) - 1])
            await writer.drain()

    server = Server(handler)

    async def main() -> list[object]:
        async with server:
            p = pool(server.url())
            out: list[object] = []
            for _ in replies:
                try:
                    r = await p.request("POST", "/x", headers={}, body=b"{}", timeout_s=5)
                    out.append((r.status, r.content))
                except HTTPConnectError as exc:
                    out.append(str(exc))
            await p.aclose()
            return out

    got = run(main())
    assert got[:4] == [(200, b"ok"), (204, b""), (200, b"ab"), (200, b"old!")]  # type: ignore[index]
    assert "broke HTTP/1.1" in str(got[4]) and "not an HTTP/1.x status line" in str(got[4])  # type: ignore[index]
    assert server.connections == 2  # one for the first four (1.1 keep-alive), a new one after HTTP/1.0


def test_a_header_value_cannot_split_the_request() -> None:
    with pytest.raises(ValueError, match="line break"):
        pool("http://127.0.0.1:1/v1")._wire("POST", "/x", {"x-a": "1\r\nInjected: yes"}, b"")
