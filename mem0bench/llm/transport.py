"""JSON requests to an OpenAI-compatible server: the headers its API expects, errors the retry loop reads.

Sent over `http11.ConnectionPool` (see there for why not the openai SDK). The request bodies are the
ones the SDK would send (compact UTF-8 JSON), with the headers the API reads: `Authorization`, and
`OpenAI-Organization` / `OpenAI-Project` from the variables the SDK reads them from.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from typing import Any

from mem0bench.common.text import one_line
from mem0bench.llm.http11 import (
    ConnectionPool,
    HTTPConnectError,
    HTTPFailure,
    HTTPResponse,
    HTTPTimeout,
)

__all__ = [
    "HTTPConnectError",
    "HTTPFailure",
    "HTTPStatusError",
    "HTTPTimeout",
    "JsonTransport",
]

_USER_AGENT = "mem0bench/0.1 (OpenAI-compatible JSON client)"
_MAX_MESSAGE = 500


class HTTPStatusError(HTTPFailure):
    """The server answered with a non-2xx status. `message` is the server's own error text when the body
    is OpenAI-shaped (`{"error": {"message": ...}}`), else the body's start."""

    def __init__(self, status_code: int, message: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.message = message
        self.headers = headers


def _error_message(response: HTTPResponse) -> str:
    """A one-line message for an error reply: the server's own text when it gave one."""
    text = response.content.decode("utf-8", "replace").strip()
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


class JsonTransport:
    """POST / GET JSON under `base_url`; -> the decoded JSON reply.

    Raises `HTTPTimeout`, `HTTPConnectError`, `HTTPStatusError` (a non-2xx reply) and `ValueError` (a
    2xx body that is not JSON). Never retries (the client's retry loop decides).
    """

    def __init__(self, base_url: str, api_key: str, *, timeout_s: float) -> None:
        self.base_url = base_url
        self.timeout_s = timeout_s
        self._pool = ConnectionPool(base_url, user_agent=_USER_AGENT)
        headers = {
            "authorization": f"Bearer {api_key}",
            "accept": "application/json",
        }
        for variable, header in (
            ("OPENAI_ORG_ID", "openai-organization"),
            ("OPENAI_PROJECT_ID", "openai-project"),
        ):
            value = os.environ.get(variable)
            if value:
                headers[header] = value
        self._get_headers = headers
        self._post_headers = {**headers, "content-type": "application/json"}

    async def post(self, path: str, content: bytes, *, timeout_s: float | None = None) -> Any:
        """POST `content` (UTF-8 JSON) to `path` (e.g. "/chat/completions"); -> the parsed JSON body."""
        response = await self._pool.request(
            "POST", path, headers=self._post_headers, body=content, timeout_s=timeout_s or self.timeout_s
        )
        return _json_of(response)

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        """`post` with `body` serialized as the SDK serializes it (compact, UTF-8)."""
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        return await self.post(path, content)

    async def get(self, path: str, *, timeout_s: float | None = None) -> Any:
        """GET `path`; -> the parsed JSON body."""
        response = await self._pool.request(
            "GET", path, headers=self._get_headers, timeout_s=timeout_s or self.timeout_s
        )
        return _json_of(response)

    async def aclose(self) -> None:
        await self._pool.aclose()


def _json_of(response: HTTPResponse) -> Any:
    if not response.is_success:
        raise HTTPStatusError(response.status, _error_message(response), response.headers)
    return json.loads(response.content)
