"""The adapter side of a system in its own venv: `OwnEnvSystem` starts the system's service (as the
harness starts its embedded FalkorDB), reaches it through `HttpSystem` (saved per-session progress,
retries, failures) and stops it with the run.

Only this run may use the service: it listens on 127.0.0.1 and admits a request only with a random token
(made here, given to it on stdin, never on disk or a command line), as the LLM bridge admits only its own.
The service's LLM and embedding calls go to this adapter's LLM bridge (the harness's client, cache, ledger
and failure records); every request to the service names the bridge scope it runs in, which the service
passes on with the system's calls, so they count under `<name>_ingest` / `<name>_search` and in the
question's own timing.

A subclass names its venv (`env`) and service script, says what its service needs (`service_settings`),
what its memories depend on (`memory_settings`: a change re-ingests) and how a search's items read as an
answer context (`render`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from pathlib import Path
from typing import Any, ClassVar

import httpx2

from mem0bench.common.files import atomic_write
from mem0bench.common.private import private_dir
from mem0bench.data.context import ContextKind
from mem0bench.data.model import Conversation, Question
from mem0bench.llm.timing import measure
from mem0bench.llm.types import CallFailure, LLMCallError, ReplyShapeError
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemBase, SystemContext
from mem0bench.systems.external.bridge import SCOPE_HEADER, LLMBridge, scope_token
from mem0bench.systems.external.http_system.system import HttpSystem
from mem0bench.systems.external.http_system.transport import ServiceTransport, path_of
from mem0bench.systems.external.http_system.wire import SearchItem, parse_search, search_body
from mem0bench.systems.external.own_env.process import ServiceProcess
from mem0bench.systems.external.own_env.venv import OwnVenv
from mem0bench.tokens import count_tokens

__all__ = ["OwnEnvSystem", "Rendered"]


class _ScopedTransport(ServiceTransport):
    """The protocol's transport, its requests naming the bridge scope open where they are made."""

    def _pool(self) -> tuple[httpx2.AsyncClient, asyncio.Semaphore]:
        fresh = self._client is None
        client, semaphore = super()._pool()
        if fresh:
            client.event_hooks["request"].append(_stamp)
        return client, semaphore


async def _stamp(request: httpx2.Request) -> None:
    token = scope_token()
    if token is not None:
        request.headers[SCOPE_HEADER] = token


class _Service(HttpSystem):
    """`HttpSystem` whose saved progress is keyed by what the memories depend on, not by the service's
    URL: each run starts the service on a new port, and a rerun must find its sessions done."""

    settings: dict[str, Any]
    system: str

    def _fingerprint(self, conversation: Conversation) -> str:
        return conversation.fingerprint({"service": self.system, **self.settings})


class Rendered:
    """A search's items as an answer context: its text, the turns behind it, how many items it shows."""

    def __init__(self, text: str, dia_ids: list[str], items: int, kind: ContextKind = "memories") -> None:
        self.text, self.dia_ids, self.items, self.kind = text, dia_ids, items, kind


class OwnEnvSystem(SystemBase):
    """A memory system in its own venv, as a service this adapter starts."""

    env: ClassVar[OwnVenv]
    service_script: ClassVar[Path]
    packages: tuple[str, ...] = ()  # not in this environment: `versions` reads the venv's

    def __init__(
        self,
        *,
        name: str,
        top_k: int,
        timeout_s: float,
        max_retries: int,
        max_concurrency: int,
        workers: int,
        context: SystemContext,
    ) -> None:
        for label, value in (("top_k", top_k), ("workers", workers), ("max_concurrency", max_concurrency)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {label} must be an integer >= 1, got {value!r}")
        super().__init__()
        self.python = self.env.python()  # not set up: one line naming the command, before any work
        self.versions = self.env.installed_versions()
        """What run.json records (`system_versions`): the venv's packages, not this environment's."""
        self.name, self.top_k, self.workers = name, top_k, workers
        self.timeout_s, self.max_retries, self.max_concurrency = (
            float(timeout_s),
            int(max_retries),
            max_concurrency,
        )
        self.context = context
        self.service_dir = Path(context.state_dir) / f"{self.env.system}_service"  # its data, pid, log
        self.process = ServiceProcess(
            label=name, python=self.python, script=self.service_script, data=self.service_dir
        )
        self.bridge = LLMBridge(context.client, workers=workers)
        self._token = secrets.token_urlsafe(32)
        self._http: HttpSystem | None = None
        self._starting: asyncio.Lock | None = None

    # ---- what a system says ---------------------------------------------------------------------------

    def service_settings(self, dims: int) -> dict[str, Any]:
        """The service's own settings (the token, the bridge and the models are added here)."""
        return {}

    def service_env(self) -> dict[str, str]:
        """Environment variables the service needs set before it imports its library."""
        return {}

    def memory_settings(self) -> dict[str, Any]:
        """What the memories depend on, besides the models (the run's config): a change re-ingests."""
        return {"versions": self.versions}

    def render(self, conversation: Conversation, items: list[tuple[dict[str, Any], SearchItem]]) -> Rendered:
        """The search's items (each as the service sent it and as the protocol reads it) as a context."""
        raise NotImplementedError

    # ---- the service ----------------------------------------------------------------------------------

    async def service(self) -> HttpSystem:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._http is None:
                await self.bridge.start()
                dims = await self._dims()
                port = await asyncio.to_thread(self._spawn, dims)
                http = await asyncio.to_thread(
                    lambda: _Service(
                        name=self.name,
                        url=f"http://127.0.0.1:{port}",
                        top_k=self.top_k,
                        timeout_s=self.timeout_s,
                        max_retries=self.max_retries,
                        max_concurrency=self.max_concurrency,
                        context=self.context,
                    )  # fmt: skip
                )
                http.transport = _ScopedTransport(
                    http.url, http.transport.policy, {"Authorization": f"Bearer {self._token}"}
                )
                http.failures = self.failures  # one list: the runner reads ours
                http.settings, http.system = self.memory_settings(), self.env.system
                self._http = http
        return self._http

    async def _dims(self) -> int:
        """The embedder's size, kept in the state folder: a rerun that only searches makes no probe call
        (a call inside ingest would make the runner record a new ingestion)."""
        saved = self.service_dir / "embedding_dims.json"
        model = self.bridge.embedding_model
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            known = json.loads(saved.read_text(encoding="utf-8"))
            if known["model"] == model:
                return int(known["dims"])
        dims = await self.bridge.embedding_dims()
        private_dir(saved.parent)
        atomic_write(saved, json.dumps({"model": model, "dims": dims}))
        return dims

    def _spawn(self, dims: int) -> int:
        settings = {
            "token": self._token,
            "bridge_base": self.bridge.base_url("-").removesuffix("-/v1"),
            "bridge_key": self.bridge.api_key,
            "model": self.bridge.model,
            "embedding_model": self.bridge.embedding_model,
            "embedding_dims": dims,
            "data_dir": str(self.service_dir / "data"),
            "top_k": self.top_k,
            "workers": self.workers,
            **self.service_settings(dims),
        }
        return self.process.start(settings, env=self.service_env())

    # ---- the protocol ---------------------------------------------------------------------------------

    async def ingest(self, conversation: Conversation) -> IngestReport:
        http = await self.service()
        async with self.bridge.scope(conversation.sample_id, stage=http.ingest_stage, stamped=True):
            return await http.ingest(conversation)

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        http = await self.service()
        target = path_of("conversations", http.service_id(conversation), "search")
        with measure() as t:
            async with self.bridge.scope(conversation.sample_id, stage=http.search_stage, stamped=True):
                reply = await http.transport.request(
                    "POST", target, stage=http.search_stage, body=search_body(question, self.top_k)
                )
            try:
                found = parse_search(reply)
                raw = reply["items"] if found.items is not None else []
                rendered = self.render(conversation, list(zip(raw, found.items or (), strict=True)))
            except (ReplyShapeError, KeyError, TypeError, ValueError) as exc:
                raise LLMCallError(
                    CallFailure(http.search_stage, "malformed", f"POST {target}: {exc}", 1)
                ) from None
        return RetrievedContext(
            kind=rendered.kind, text=rendered.text, tokens=count_tokens(rendered.text),
            source_dia_ids=tuple(dict.fromkeys(rendered.dia_ids)), search_latency_s=t.latency_s,
            local_search_s=t.local_s, items=rendered.items,
        )  # fmt: skip

    async def delete(self, conversation: Conversation) -> None:
        http = await self.service()
        await http.delete(conversation)

    async def aclose(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            with contextlib.suppress(Exception):
                await http.aclose()
        await asyncio.to_thread(self.process.stop)
        await self.bridge.aclose()
