"""Requests to a memory service, under the harness's rules for calls: bounded retries with backoff, a
failure that gave up is an `LLMCallError` (recorded and counted by the stages, retried by a rerun when
transient), and a service that stops answering altogether stops the run in one line (`ServerUnreachable`,
the LLM client's own watch and message).

Not the LLM client: a service is not an OpenAI-compatible server, and its replies are not cached (a
service keeps its own memory; the adapter's saved progress is what makes a rerun free)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx2

from mem0bench.common.text import one_line
from mem0bench.llm import timing
from mem0bench.llm.reachability import ReachabilityWatch
from mem0bench.llm.retry import backoff_delay, parse_retry_after
from mem0bench.llm.types import CallFailure, FailureKind, LLMCallError

__all__ = ["ServicePolicy", "ServiceTransport", "path_of"]

_RETRIED_STATUS = {408, 409, 425, 429}


@dataclass(frozen=True)
class ServicePolicy:
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    unreachable_after_s: float = 60.0
    max_concurrency: int = 8


def path_of(*parts: str) -> str:
    """A URL path from raw segments (a conversation id may hold any character)."""
    return "/" + "/".join(quote(p, safe="") for p in parts)


class _Attempt(Exception):
    def __init__(self, kind: FailureKind, message: str, retry: bool = True, retry_after: float | None = None):
        super().__init__(message)
        self.kind: FailureKind = kind
        self.message = message
        self.retry = retry
        self.retry_after = retry_after


class ServiceTransport:
    """JSON requests to one service URL. One per system instance; its HTTP pool is made in the event loop
    that first uses it and closed by `aclose`."""

    def __init__(self, url: str, policy: ServicePolicy, headers: dict[str, str] | None = None) -> None:
        self.url = url.rstrip("/")
        self.policy = policy
        self.headers = dict(headers or {})
        self.watch = ReachabilityWatch(self.url, policy.unreachable_after_s)
        self.requests = 0
        """Requests sent (every attempt), for the conformance check's call counts."""
        self.on_request: Callable[[], None] | None = None
        """Called as each request is sent (the conformance check interrupts an ingest with it)."""
        self._client: httpx2.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._random = random.Random()

    def _pool(self) -> tuple[httpx2.AsyncClient, asyncio.Semaphore]:
        if self._client is None or self._semaphore is None:
            self._client = httpx2.AsyncClient(
                base_url=self.url, timeout=self.policy.timeout_s, headers=self.headers
            )
            self._semaphore = asyncio.Semaphore(self.policy.max_concurrency)
        return self._client, self._semaphore

    async def request(
        self, method: str, path: str, *, stage: str, body: Any = None, absent_ok: bool = False
    ) -> Any:
        """Send until it succeeds or the retries are spent; -> the decoded JSON reply (None for an empty
        body, or a 404 when `absent_ok`). Raises `LLMCallError` when it gives up, `ServerUnreachable`
        when the service is gone."""
        client, semaphore = self._pool()
        content = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        attempt = 0
        while True:
            attempt += 1
            self.watch.check()
            queued = time.perf_counter()
            async with semaphore:
                started = time.perf_counter()
                timing.add_wait(started - queued)
                try:
                    return await self._send(client, method, path, content, absent_ok)
                except _Attempt as problem:
                    failed = problem
                finally:
                    timing.add_network(time.perf_counter() - started)
            if failed.kind in ("connection", "timeout"):
                self.watch.failed(failed.message)
                self.watch.check()
            else:
                self.watch.reply()
            if not failed.retry or attempt > self.policy.max_retries:
                message = f"{method} {path}: {failed.message}"
                raise LLMCallError(
                    CallFailure(stage=stage, kind=failed.kind, message=message, attempts=attempt)
                )
            p = self.policy
            await self.watch.sleep(
                backoff_delay(attempt, failed.retry_after, p.backoff_base_s, p.backoff_max_s, self._random)
            )

    async def _send(
        self, client: httpx2.AsyncClient, method: str, path: str, content: bytes | None, absent_ok: bool
    ) -> Any:
        self.requests += 1
        if self.on_request is not None:
            self.on_request()
        headers = {"Content-Type": "application/json"} if content is not None else None
        try:
            reply = await client.request(method, path, content=content, headers=headers)
        except httpx2.TimeoutException:
            raise _Attempt(
                "timeout", f"no reply within {self.policy.timeout_s:g} s (method.timeout_s)"
            ) from None
        except httpx2.RequestError as exc:
            raise _Attempt("connection", one_line(f"{type(exc).__name__}: {exc}")) from None
        self.watch.reply()
        status = reply.status_code
        if status == 404 and absent_ok:
            return None
        if status >= 400:
            detail = _error_text(reply)
            message = f"HTTP {status}" + (f": {detail}" if detail else "")
            after = parse_retry_after(reply.headers)
            if status == 429:
                raise _Attempt("rate_limit", message, retry_after=after)
            if status >= 500:
                raise _Attempt("server_error", message, retry_after=after)
            if status in _RETRIED_STATUS:
                raise _Attempt("timeout" if status == 408 else "server_error", message, retry_after=after)
            raise _Attempt("bad_request", message, retry=False)
        if not reply.content.strip():
            return None
        try:
            return reply.json()
        except ValueError as exc:
            raise _Attempt("malformed", f"the reply is not JSON ({exc})", retry=False) from None

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


def _error_text(reply: httpx2.Response) -> str:
    """The service's own words for an error: `{"error": "..."}` or `{"error": {"message": ...}}`, else
    the start of the body."""
    try:
        body = reply.json()
    except ValueError:
        return one_line(reply.text[:200])
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    return one_line(str(error if error is not None else body))[:300]
