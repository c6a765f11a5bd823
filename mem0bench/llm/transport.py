"""JSON POSTs straight through the OpenAI SDK's own `httpx2.AsyncClient`, skipping its per-request layers.

Why: `AsyncOpenAI.post(...)` copies and re-validates request options, merges headers and wraps the
response on every call, which measured ~0.4 ms CPU per request here, for features we turn off (its
retries) or do not use (streaming, parsing into models). This sends the same pre-serialized bytes with
the headers the SDK sends (built once from the SDK's own properties), the same timeout, through the same
pool (so limits, proxies and TLS settings are unchanged), and raises the exceptions the SDK would raise,
so `retry.classify` sees exactly what it saw before.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from typing import Any

import anyio
import httpx2
import openai

__all__ = ["JsonTransport"]

# What the SDK maps onto APITimeoutError / APIConnectionError (openai._httpx2.timeout_exceptions and
# request_exceptions, for an httpx2 pool). Timeouts first: they are RequestErrors too.
_TIMEOUT_ERRORS: tuple[type[BaseException], ...] = (httpx2.TimeoutException,)
_REQUEST_ERRORS: tuple[type[BaseException], ...] = (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream)


class JsonTransport:
    """POST JSON bytes to a path under the SDK client's base URL; -> the decoded JSON reply.

    Raises `openai.APITimeoutError`, `openai.APIConnectionError` or the SDK's `APIStatusError` subclass
    for a non-2xx status (built by the SDK itself, so messages match), and `ValueError` for a body that is
    not JSON. Never retries.
    """

    def __init__(self, sdk: openai.AsyncOpenAI) -> None:
        self._sdk = sdk
        self._headers: dict[str, str] | None = None
        self._urls: dict[str, httpx2.URL] = {}

    def _build_headers(self) -> dict[str, str]:
        # The SDK's own header sources: Authorization (from its key), Accept, Content-Type, User-Agent,
        # the X-Stainless-* platform headers and OpenAI-Organization / OpenAI-Project when configured.
        # Built on first use, inside the event loop (X-Stainless-Async names the running async library).
        sdk = self._sdk
        headers: dict[str, str] = {}
        for source in (sdk.auth_headers, sdk.default_headers):
            for name, value in source.items():
                if isinstance(value, str):  # skips the SDK's Omit() markers
                    headers[name] = value
        headers["x-stainless-retry-count"] = "0"  # the SDK's retries are off; ours resend from scratch
        timeout = sdk.timeout
        read = timeout.read if isinstance(timeout, httpx2.Timeout) else timeout
        if read is not None:
            headers["x-stainless-read-timeout"] = str(read)
        return headers

    def _url(self, path: str) -> httpx2.URL:
        url = self._urls.get(path)
        if url is None:
            base = self._sdk.base_url  # always ends with "/" (the SDK enforces it)
            url = base.copy_with(raw_path=base.raw_path + path.lstrip("/").encode("ascii"))
            self._urls[path] = url
        return url

    async def post(self, path: str, content: bytes) -> Any:
        """POST `content` (UTF-8 JSON) to `path` (e.g. "/chat/completions"); -> the parsed JSON body."""
        headers = self._headers
        if headers is None:
            # Platform detection may run `uname` & co.: like the SDK, do it off the event loop, once.
            await asyncio.to_thread(self._sdk.platform_headers)
            headers = self._headers = self._build_headers()
        sdk = self._sdk
        client = sdk._client  # the SDK's pool; public SDK API has no cheaper way to reach it
        request = client.build_request(
            "POST", self._url(path), content=content, headers=headers, timeout=sdk.timeout
        )
        try:
            response = await client.send(request)
        except openai.OpenAIError:
            raise
        except _TIMEOUT_ERRORS as exc:
            raise openai.APITimeoutError(request=request) from exc
        except _REQUEST_ERRORS as exc:
            raise openai.APIConnectionError(request=request) from exc
        if not response.is_success:
            raise sdk._make_status_error_from_response(response) from None
        return response.json()

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        """`post` with `body` serialized the way the SDK serializes it (compact, UTF-8)."""
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        return await self.post(path, content)
