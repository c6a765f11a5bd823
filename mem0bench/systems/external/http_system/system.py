"""The adapter: a memory service reached over HTTP, behind the MemorySystem protocol.

Ingestion sends a conversation's sessions in order (PUT, so a session sent twice replaces itself) and
saves, after each acknowledged session, which sessions the service holds (`state/<sample>/http_system/`).
A second ingest of a finished conversation sends nothing; an interrupted one goes on from the next
session. With no saved progress (a fresh run, or the runner cleared a conversation it did not trust) the
conversation is first deleted on the service, so a killed attempt's sessions are never held twice.

Conversation ids on the service carry the run's key (`<sample_id>.<key>`, the key a hash of the run's
state folder): two runs, or two jobs of a sweep, never share or delete each other's memory.

A session the service fails to add after the retries is a StepFailure (the other sessions go on; a
transient one makes the runner ingest the conversation again next run). A search that fails raises the
call's `LLMCallError`: the question is recorded as failed and asked again by a rerun. Usage a service
reports is counted under the stage (ingest or search) like the harness's own calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.files import atomic_write
from mem0bench.common.text import one_line
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm import timing
from mem0bench.llm.timing import measure
from mem0bench.llm.types import CallFailure, LLMCallError, ReplyShapeError, Usage
from mem0bench.memory.base import IngestReport, RetrievedContext, StepFailure, SystemBase, SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.memory.ingest_progress import report_ingested
from mem0bench.systems.external.http_system.transport import ServicePolicy, ServiceTransport, path_of
from mem0bench.systems.external.http_system.wire import (
    SearchReply,
    ServiceUsage,
    parse_search,
    parse_usage,
    search_body,
    session_body,
)
from mem0bench.tokens import count_tokens

__all__ = ["HttpSystem", "check_health"]

STEP = "add_session"
"""The ingestion step's name in failures.jsonl."""
_FORMAT = 1


def check_health(url: str, timeout_s: float = 5.0) -> dict[str, Any]:
    """GET /health, before any work: a service that is not there is one line now, not a failed run.
    Blocking (it runs once, from the constructor)."""
    target = url.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(target, timeout=timeout_s) as reply:  # noqa: S310 - a user-given URL
            body = json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as exc:
        raise ConfigurationError(
            f"http_system: {target} answered HTTP {exc.code}: the service is not ready"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigurationError(
            f"http_system: no service answers at {target} ({one_line(reason)}): start it, or set method.url=..."
        ) from None
    except ValueError:
        raise ConfigurationError(f"http_system: {target} did not answer JSON") from None
    if not isinstance(body, dict) or body.get("status") != "ok":
        raise ConfigurationError(
            f'http_system: {target} must answer {{"status": "ok"}}, got {one_line(body)[:200]}'
        )
    return body


class HttpSystem(SystemBase):
    """A memory service at `url` speaking docs/http_system.openapi.yaml."""

    def __init__(
        self,
        *,
        name: str = "http_system",
        url: str | None = None,
        top_k: int | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        unreachable_after_s: float = 60.0,
        max_concurrency: int = 8,
        context: SystemContext,
    ) -> None:
        if not url or not str(url).startswith(("http://", "https://")):
            raise ValueError(f"{name}: set method.url=http://HOST:PORT (the service's address), got {url!r}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"{name}: top_k must be null or an integer >= 1, got {top_k!r}")
        try:
            policy = ServicePolicy(
                float(timeout_s), int(max_retries), float(backoff_base_s), float(backoff_max_s),
                float(unreachable_after_s), int(max_concurrency),
            )  # fmt: skip
        except (TypeError, ValueError):
            raise ValueError(f"{name}: timeouts, retries and max_concurrency must be numbers") from None
        if policy.timeout_s <= 0 or policy.max_retries < 0 or policy.max_concurrency < 1:
            raise ValueError(f"{name}: timeout_s must be > 0, max_retries >= 0, max_concurrency >= 1")
        headers = {}
        if api_key_env:
            key = os.environ.get(api_key_env)
            if not key:
                raise ValueError(f"{name}: method.api_key_env names {api_key_env}, which is not set")
            headers["Authorization"] = f"Bearer {key}"  # sent, never saved: the config holds only the name
        super().__init__()
        self.name = name
        # Stages of the service's own requests and reported usage, apart from the harness's (as the
        # other adapters name theirs): metrics.json shows them as <name>_ingest and <name>_search.
        self.ingest_stage, self.search_stage = f"{name}_ingest", f"{name}_search"
        self.url = str(url).rstrip("/")
        self.top_k = top_k
        self.context = context
        self.service = check_health(self.url, min(policy.timeout_s, 10.0))
        """What GET /health answered (its name and version, when the service gives them)."""
        self.transport: ServiceTransport = ServiceTransport(self.url, policy, headers)
        self.namespace = hashlib.sha256(str(Path(context.state_dir).resolve()).encode()).hexdigest()[:12]
        self._locks: dict[str, asyncio.Lock] = {}

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """The harness cannot know a service's own LLM calls before it runs (it counts what the service
        reports): no calls of its own, no query embedding, a context of unknown size (0)."""
        return CostPlan(context_tokens=0.0, lines=[], embeds_queries=False)

    @property
    def requests(self) -> int:
        """Requests sent to the service so far (every attempt)."""
        return self.transport.requests

    def service_id(self, conversation: Conversation) -> str:
        return f"{conversation.sample_id}.{self.namespace}"

    def _progress_file(self, sample_id: str) -> Path:
        safe = sample_id.replace(os.sep, "_").replace("/", "_")
        return Path(self.context.state_dir) / safe / "http_system" / "progress.json"

    def _fingerprint(self, conversation: Conversation) -> str:
        return conversation.fingerprint({"url": self.url, "format": _FORMAT})

    def _load(self, conversation: Conversation) -> set[int] | None:
        """The sessions the service acknowledged, or None when no progress stands (absent, stale, torn)."""
        try:
            saved = json.loads(self._progress_file(conversation.sample_id).read_text(encoding="utf-8"))
            if saved.get("fingerprint") != self._fingerprint(conversation):
                return None
            return {int(n) for n in saved["sessions"]}
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _save(self, conversation: Conversation, sessions: set[int]) -> None:
        data = {"fingerprint": self._fingerprint(conversation), "sessions": sorted(sessions)}
        atomic_write(self._progress_file(conversation.sample_id), json.dumps(data))

    # ------------------------------------------------------------------ ingest

    async def ingest(self, conversation: Conversation) -> IngestReport:
        sid = conversation.sample_id
        async with self._locks.setdefault(sid, asyncio.Lock()):
            done = self._load(conversation)
            if done is None:
                # Nothing of ours stands: whatever a killed attempt left on the service goes first.
                await self._call(
                    "DELETE", path_of("conversations", self.service_id(conversation)), self.ingest_stage
                )
                done = set()
                self._save(conversation, done)
            failures = 0
            for session in conversation.sessions:
                if not session.turns:
                    continue
                if session.index in done:
                    report_ingested(len(session.turns) // 2 or 1)
                    continue
                target = path_of(
                    "conversations", self.service_id(conversation), "sessions", str(session.index)
                )
                try:
                    await self._call("PUT", target, self.ingest_stage, session_body(conversation, session))
                except LLMCallError as error:
                    failures += 1
                    self.failures.append(self._failure(conversation, session.index, error.failure))
                else:
                    done.add(session.index)
                    self._save(conversation, done)
                report_ingested(len(session.turns) // 2 or 1)
        details = {"sessions": sum(1 for s in conversation.sessions if s.turns), "sessions_added": len(done)}
        return IngestReport(sid, memory_tokens=None, failures=failures, details=details)

    def ingest_units(self, conversation: Conversation) -> int:
        return sum(len(s.turns) // 2 or 1 for s in conversation.sessions if s.turns)

    def _failure(self, conversation: Conversation, session: int, failure: CallFailure) -> StepFailure:
        turns = next(s.turns for s in conversation.sessions if s.index == session)
        return StepFailure(
            system=self.name, sample_id=conversation.sample_id, stage=STEP, kind=failure.kind,
            message=one_line(f"session {session}: {failure.message}"), dia_ids=tuple(t.dia_id for t in turns),
        )  # fmt: skip

    async def _call(self, method: str, path: str, stage: str, body: Any = None) -> Any:
        """One request; the usage it reports is counted, a reply that cannot be read is `malformed`.
        Deleting what the service does not hold (404) is no failure."""
        reply = await self.transport.request(
            method, path, stage=stage, body=body, absent_ok=method == "DELETE"
        )
        try:
            self._count(stage, parse_usage(reply))
        except ReplyShapeError as exc:
            raise LLMCallError(CallFailure(stage, "malformed", f"{method} {path}: {exc}", 1)) from None
        return reply

    def _count(self, stage: str, usage: ServiceUsage | None) -> None:
        """A service's reported LLM usage, in the ledger and the current timing scope (as the client
        counts its own calls): the first call carries the tokens, the others count as calls."""
        if usage is None:
            return
        model = usage.model or f"{self.name}-service"
        for i in range(usage.calls):
            tokens = usage.usage if i == 0 else Usage()
            self.context.client.ledger.record(stage, model, tokens, cached=False)
            timing.add_usage(stage, tokens.prompt_tokens, tokens.completion_tokens)

    # ------------------------------------------------------------------ retrieve

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        target = path_of("conversations", self.service_id(conversation), "search")
        with measure() as t:
            reply = await self.transport.request(
                "POST", target, stage=self.search_stage, body=search_body(question, self.top_k)
            )
            try:
                found = parse_search(reply)
            except ReplyShapeError as exc:
                raise LLMCallError(
                    CallFailure(self.search_stage, "malformed", f"POST {target}: {exc}", 1)
                ) from None
            self._count(self.search_stage, found.usage)
            text, items, dia_ids = _render(found)
        return RetrievedContext(
            kind="notes", text=text, tokens=count_tokens(text), source_dia_ids=dia_ids,
            search_latency_s=t.latency_s, local_search_s=t.local_s, items=items,
        )  # fmt: skip

    async def delete(self, conversation: Conversation) -> None:
        """Forget a conversation on the service and here (DELETE /conversations/{id})."""
        await self._call("DELETE", path_of("conversations", self.service_id(conversation)), self.ingest_stage)
        self._progress_file(conversation.sample_id).unlink(missing_ok=True)

    async def aclose(self) -> None:
        await self.transport.aclose()


def _render(found: SearchReply) -> tuple[str, int | None, tuple[str, ...]]:
    """The context the answer model reads: one item a line, its date in square brackets (the `notes`
    context's convention), or the service's own context string as it is."""
    if found.items is None:
        return (found.context or "").strip(), None, ()
    lines = [f"[{i.date}] {i.text}" if i.date else i.text for i in found.items]
    dia_ids = tuple(dict.fromkeys(d for i in found.items for d in i.turn_ids))
    return "\n".join(lines), len(found.items), dia_ids
