"""The HTTP/1.1 framing the LLM bridge's small server reads (RFC 9112): a request head and a chunked body.

The bridge's peers are the adapted libraries' own clients (httpx, requests) on loopback; a web framework
would be a dependency for four routes. The head is read in one buffer search by the caller and parsed
here (a line-by-line read was a visible share of the event loop's CPU in a bridged run)."""

from __future__ import annotations

import asyncio

__all__ = ["parse_head", "read_chunked"]


def parse_head(head: bytes) -> tuple[str, dict[str, str]]:
    """A message head (start line, header lines, the blank line) -> (start line, headers with lower-cased
    names; a repeated name keeps its last value). `ValueError` for a header line without a name and colon."""
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
