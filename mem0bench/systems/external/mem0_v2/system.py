"""mem0's current release (mem0ai 2.x) as a MemorySystem (`mem0_v2`), run in its own environment.

mem0ai 2.x and the 1.0.11 of `mem0_oss` cannot share one environment, so mem0 2.x runs in a venv of its own
(`python -m mem0bench setup-system mem0_v2`, see `venv`) as a service (`service.py`) that speaks the HTTP
system protocol; this adapter starts it (as the harness starts its embedded FalkorDB), talks to it through
`HttpSystem` (saved per-session progress, retries, failures) and stops it at the end.

Only this run may use the service: it listens on 127.0.0.1 and admits a request only with a random token
(made here, given to it on stdin, never on disk or a command line), as the LLM bridge admits only its own.
The service's LLM and embedding calls go to this adapter's LLM bridge (the harness's client, cache,
ledger and failure records); every request to the service names the bridge scope it runs in, which the
service passes on with mem0's calls, so they count under `mem0_v2_ingest` / `mem0_v2_search` and in the
question's own timing. The answer context is rendered as `mem0_oss`'s: one list of dated memories per speaker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx2

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.files import atomic_write
from mem0bench.common.private import private_dir
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.timing import measure
from mem0bench.llm.types import CallFailure, LLMCallError, ReplyShapeError
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemBase, SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.systems.external.bridge import SCOPE_HEADER, LLMBridge, scope_token
from mem0bench.systems.external.http_system.system import HttpSystem
from mem0bench.systems.external.http_system.transport import ServiceTransport, path_of
from mem0bench.systems.external.http_system.wire import parse_search, search_body
from mem0bench.systems.external.mem0_oss.library import HARNESS_INSTRUCTIONS
from mem0bench.systems.external.mem0_oss.render import memory_dia_ids, memory_score, render_sections
from mem0bench.systems.external.mem0_v2 import venv
from mem0bench.systems.external.mem0_v2.costs import mem0_v2_cost_plan
from mem0bench.tokens import count_tokens

__all__ = ["Mem0V2"]

SERVICE = Path(__file__).with_name("service.py")
_PID_FILE = "service.pid"


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

    def _fingerprint(self, conversation: Conversation) -> str:
        return conversation.fingerprint({"service": "mem0_v2", **self.settings})


class Mem0V2(SystemBase):
    """mem0ai 2.x's Memory, one per conversation and speaker, in the service this adapter starts."""

    packages: tuple[str, ...] = ()  # not in this environment: `versions` reads the venv's

    def __init__(
        self,
        *,
        name: str = "mem0_v2",
        batch_size: int = 2,
        top_k: int = 30,
        harness_instructions: bool = True,
        threshold: float = 0.1,
        temperature: float = 0.0,
        extraction_date: str = "session",
        timeout_s: float = 900.0,
        max_retries: int = 2,
        max_concurrency: int = 8,
        workers: int = 8,
        context: SystemContext,
    ) -> None:
        for label, value in (("batch_size", batch_size), ("top_k", top_k), ("workers", workers)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {label} must be an integer >= 1, got {value!r}")
        if extraction_date not in ("session", "today"):
            raise ValueError(f"{name}: extraction_date must be 'session' or 'today', got {extraction_date!r}")
        super().__init__()
        self.extraction_date = extraction_date
        self.threshold = float(threshold)
        self.python = venv.venv_python()  # not set up: one line naming the command, before any work
        self.versions = venv.installed_versions()
        """What run.json records (`system_versions`): the venv's mem0ai, not this environment's."""
        self.name = name
        self.batch_size, self.top_k, self.workers = batch_size, top_k, workers
        self.harness_instructions, self.temperature = bool(harness_instructions), float(temperature)
        self.timeout_s, self.max_retries, self.max_concurrency = (
            float(timeout_s),
            int(max_retries),
            max_concurrency,
        )
        self.context = context
        self.service_dir = Path(context.state_dir) / "mem0_v2_service"  # the service's data, pid, log
        self.bridge = LLMBridge(context.client, workers=workers)
        self._token = secrets.token_urlsafe(32)
        self._process: subprocess.Popen[bytes] | None = None
        self._http: HttpSystem | None = None
        self._starting: asyncio.Lock | None = None

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return mem0_v2_cost_plan(method, dataset, n_questions)

    # ---- the service ----------------------------------------------------------------------------------

    async def _service(self) -> HttpSystem:
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
                http.settings = self._memory_settings()
                self._http = http
        return self._http

    def _memory_settings(self) -> dict[str, Any]:
        """What the memories depend on (a change re-ingests), besides the models (the run's config)."""
        return {
            "batch_size": self.batch_size, "instructions": self.harness_instructions,
            "extraction_date": self.extraction_date, "temperature": self.temperature,
            "versions": self.versions,
        }  # fmt: skip

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
        """Start the service on its data folder (in the run's state) -> its port."""
        data = private_dir(self.service_dir)
        _stop_orphan(data)  # qdrant's local mode admits one process per folder: a killed run's service goes
        settings = {
            "token": self._token,
            "bridge_base": self.bridge.base_url("-").removesuffix("-/v1"),
            "bridge_key": self.bridge.api_key,
            "model": self.bridge.model,
            "embedding_model": self.bridge.embedding_model,
            "embedding_dims": dims,
            "temperature": self.temperature,
            "data_dir": str(data / "data"),
            "batch_size": self.batch_size,
            "top_k": self.top_k,
            "instructions": HARNESS_INSTRUCTIONS if self.harness_instructions else "",
            "workers": self.workers,
            "extraction_date": self.extraction_date,
            "threshold": self.threshold,
        }
        log = (data / "service.log").open("ab")
        try:
            process = subprocess.Popen(
                [str(self.python), str(SERVICE)], cwd=data, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise ConfigurationError(
                f"{self.name}: cannot start the mem0 2.x service ({self.python}): {exc}"
            ) from None
        finally:
            log.close()
        self._process = process
        (data / _PID_FILE).write_text(f"{process.pid}\n", encoding="utf-8")
        assert process.stdin is not None and process.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write(json.dumps(settings).encode() + b"\n")
            process.stdin.close()
        line = process.stdout.readline().decode(errors="replace").strip()
        if not line.startswith("PORT "):
            self._stop()
            raise ConfigurationError(
                f"{self.name}: the mem0 2.x service did not start (exit {process.returncode}); "
                f"its log: {data / 'service.log'}"
            )
        return int(line.split()[1])

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()

    # ---- the protocol ---------------------------------------------------------------------------------

    def ingest_units(self, conversation: Conversation) -> int:
        return sum(len(s.turns) // 2 or 1 for s in conversation.sessions if s.turns)

    async def ingest(self, conversation: Conversation) -> IngestReport:
        http = await self._service()
        async with self.bridge.scope(conversation.sample_id, stage=http.ingest_stage, stamped=True):
            return await http.ingest(conversation)

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """Each speaker's top_k memories, rendered as `mem0_oss` renders them."""
        http = await self._service()
        target = path_of("conversations", http.service_id(conversation), "search")
        with measure() as t:
            async with self.bridge.scope(conversation.sample_id, stage=http.search_stage, stamped=True):
                reply = await http.transport.request(
                    "POST", target, stage=http.search_stage, body=search_body(question, self.top_k)
                )
            try:
                found = parse_search(reply)
                raw = reply["items"] if found.items is not None else []
            except (ReplyShapeError, KeyError, TypeError) as exc:
                raise LLMCallError(
                    CallFailure(http.search_stage, "malformed", f"POST {target}: {exc}", 1)
                ) from None
            speakers = list(conversation.speakers)
            memories: list[list[dict[str, Any]]] = [[] for _ in speakers]
            for item, parsed in zip(raw, found.items or (), strict=True):
                who = item.get("speaker") if isinstance(item, dict) else None
                if who in speakers:
                    memories[speakers.index(who)].append(
                        {"memory": parsed.text, "score": parsed.score,
                         "metadata": {"timestamp": parsed.date, "dia_ids": list(parsed.turn_ids)}}
                    )  # fmt: skip
            for items in memories:  # mem0's order; equal scores by text (a stable context, a stable cache)
                items.sort(key=lambda m: (-round(memory_score(m), 6), str(m["memory"])))
            text = render_sections(speakers, memories)
        dia_ids = dict.fromkeys(d for items in memories for m in items for d in memory_dia_ids(m))
        return RetrievedContext(
            kind="memories", text=text, tokens=count_tokens(text), source_dia_ids=tuple(dia_ids),
            search_latency_s=t.latency_s, local_search_s=t.local_s, items=sum(len(m) for m in memories),
        )  # fmt: skip

    async def delete(self, conversation: Conversation) -> None:
        http = await self._service()
        await http.delete(conversation)

    async def aclose(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            with contextlib.suppress(Exception):
                await http.aclose()
        await asyncio.to_thread(self._stop)
        await self.bridge.aclose()


def _stop_orphan(data: Path) -> None:
    """The service an earlier instance (a killed run, or one not closed) left on this folder, stopped."""
    try:
        pid = int((data / _PID_FILE).read_text(encoding="utf-8").strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return
    if str(SERVICE).encode() not in command:
        return  # the pid is another program's now
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            time.sleep(0.1)
            if not Path(f"/proc/{pid}").exists():
                return
        os.kill(pid, signal.SIGKILL)
