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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx2

from mem0bench.llm.reachability import ReachabilityWatch
from mem0bench.llm.retry import Retryable, RetryPolicy, call_with_retries
from mem0bench.llm.transport import HTTPStatusError, error_message, new_client, send
from mem0bench.llm.types import CallFailure, LLMCallError

__all__ = ["ServicePolicy", "ServiceTransport", "path_of"]


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


class ServiceTransport:
    """JSON requests to one service URL. One per system instance; its HTTP pool is made in the event loop
    that first uses it and closed by `aclose`. Statuses, retries and backoff are `llm.retry`'s, as for
    the LLM client's calls."""

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
        self._retry = RetryPolicy(policy.max_retries, policy.backoff_base_s, policy.backoff_max_s)

    def _pool(self) -> tuple[httpx2.AsyncClient, asyncio.Semaphore]:
        if self._client is None or self._semaphore is None:
            self._client = new_client(
                self.url,
                timeout_s=self.policy.timeout_s,
                max_connections=self.policy.max_concurrency,
                headers=self.headers,
                what="the memory service's URL (method.url)",
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

        def give_up(problem: Retryable, attempts: int) -> LLMCallError:
            message = f"{method} {path}: {problem.message}"
            return LLMCallError(
                CallFailure(stage=stage, kind=problem.kind, message=message, attempts=attempts)
            )

        result, _ = await call_with_retries(
            lambda: self._send(client, method, path, content, absent_ok),
            policy=self._retry,
            watch=self.watch,
            slots=semaphore,
            give_up=give_up,
            rng=self._random,
        )
        return result

    async def _send(
        self, client: httpx2.AsyncClient, method: str, path: str, content: bytes | None, absent_ok: bool
    ) -> Any:
        self.requests += 1
        if self.on_request is not None:
            self.on_request()
        headers = {"Content-Type": "application/json"} if content is not None else None
        reply = await send(
            client, method, path, timeout_s=self.policy.timeout_s, content=content, headers=headers
        )
        status = reply.status_code
        if status == 404 and absent_ok:
            return None
        if status >= 400:
            raise HTTPStatusError(status, error_message(reply.content), reply.headers)
        if not reply.content.strip():
            return None
        return json.loads(reply.content)  # a ValueError: an unreadable reply, retried

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
