"""mem0's open-source library as a MemorySystem (`mem0_oss`; with `graph: true`, `mem0_oss_graph`).

Ingestion follows mem0's evaluation harness (see `locomo`): per speaker, one mem0 instance and user id,
`add(messages, user_id=..., metadata={"timestamp": <session date>})` for every batch of messages, with
`infer=True` (mem0's extract-facts-then-ADD/UPDATE/DELETE/NONE pipeline and, with the graph, its entity
and relation extraction into an embedded Kuzu database). Retrieval: `search(question, user_id=...,
limit=top_k)` for each speaker, rendered as one list of dated memories per speaker (and relations).

Every LLM and embedding request mem0 makes goes to the LLM bridge (one route per conversation and speaker),
so the harness's client, cache, ledger and failure records serve it; its requests name their bridge scope
(stamped scopes), so a speaker's instance serves several questions' searches at once. mem0's AsyncMemory runs on a private
event loop in a worker thread of this adapter's pool: the harness's loop stays free to serve the bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mem0bench.common.text import one_line
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm import timing
from mem0bench.llm.types import TRANSIENT_KINDS, FailureKind
from mem0bench.memory.base import (
    IngestReport,
    RetrievedContext,
    SavedStore,
    StepFailure,
    SystemBase,
    SystemContext,
)
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.memory.ingest_progress import report_ingested
from mem0bench.memory.saved_state import ConversationLocks
from mem0bench.memory.vector_store import read_saved_records
from mem0bench.systems.external.bridge import LLMBridge
from mem0bench.systems.external.failure_kinds import failure_kind
from mem0bench.systems.external.mem0_oss import failures as libfail
from mem0bench.systems.external.mem0_oss import library, state
from mem0bench.systems.external.mem0_oss.costs import mem0_oss_cost_plan
from mem0bench.systems.external.mem0_oss.locomo import Batch, speaker_batches
from mem0bench.systems.external.mem0_oss.render import (
    RelationKey,
    memory_dia_ids,
    memory_score,
    relation_key,
    render_sections,
)
from mem0bench.systems.methods.mem0.streams import StreamSpec, stream_specs
from mem0bench.tokens import count_tokens

__all__ = ["Mem0OSS"]

T = TypeVar("T")
INGEST_STAGE = "mem0_oss_ingest"
SEARCH_STAGE = "mem0_oss_search"
ALL_MEMORIES = 1_000_000  # get_all's limit (mem0's default is 100)
RELATION_DATES = ("first_seen", "none")
"""`method.relation_dates` (graph only): each relation shown with the session date of the add that first
created it (`first_seen`, our help) or, as the library gives it, without one (`none`)."""


@dataclass
class _Stream:
    """One speaker's mem0 instance and what the adapter keeps beside it."""

    spec: StreamSpec
    folder: Path
    route: str
    memory: Any
    dims: int
    relation_dates: dict[RelationKey, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Outcome:
    value: Any
    records: list[libfail.LogRecord]
    error: BaseException | None


_thread_loops = threading.local()


def _private_loop() -> asyncio.AbstractEventLoop:
    """This worker thread's own event loop, kept from one call to the next: a loop made per call (what
    `asyncio.run` does) also makes, and joins, the threads of a new default executor for mem0's
    `asyncio.to_thread` calls, which cost a search more than its own work on a busy machine."""
    loop: asyncio.AbstractEventLoop | None = getattr(_thread_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = _thread_loops.loop = asyncio.new_event_loop()
    return loop


def _call_library(factory: Callable[[], Coroutine[Any, Any, Any]], seed: str = "") -> _Outcome:
    """Run one AsyncMemory call to completion on the worker thread's private loop, collecting what mem0
    logged at WARNING+ meanwhile and the exception it raised, if any. `seed`: the memory ids it makes
    come from it (repeatable requests). The call's task runs in this thread's context (the caller's,
    copied by `run_blocking`: its bridge scope, log capture and seed)."""
    with libfail.capture() as records, library.seeded(seed):
        try:
            value = _private_loop().run_until_complete(factory())
        except Exception as error:  # noqa: BLE001 - a library failure is recorded, not fatal
            return _Outcome(None, list(records), error)
        return _Outcome(value, list(records), None)


class Mem0OSS(SystemBase):
    """mem0ai's Memory (AsyncMemory), one instance per conversation and speaker."""

    packages: tuple[str, ...] = ("mem0ai", "qdrant-client", "kuzu", "rank-bm25")

    def __init__(
        self,
        *,
        name: str = "mem0_oss",
        graph: bool = False,
        batch_size: int = 2,
        top_k: int = 30,
        harness_instructions: bool = True,
        extraction_date: str = "session",
        relation_dates: str = "first_seen",
        workers: int = 16,
        context: SystemContext,
    ) -> None:
        if extraction_date not in library.EXTRACTION_DATES:
            raise ValueError(
                f"{name}: extraction_date must be one of {', '.join(library.EXTRACTION_DATES)}, "
                f"got {extraction_date!r}"
            )
        if relation_dates not in RELATION_DATES:
            raise ValueError(
                f"{name}: relation_dates must be one of {', '.join(RELATION_DATES)}, got {relation_dates!r}"
            )
        for label, value in (("batch_size", batch_size), ("top_k", top_k), ("workers", workers)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {label} must be an integer >= 1, got {value!r}")
        super().__init__()
        self.name = name
        self.graph = bool(graph)
        self.batch_size = batch_size
        self.top_k = top_k
        self.harness_instructions = bool(harness_instructions)
        self.extraction_date = extraction_date
        self.relation_dates = relation_dates
        self.state_dir = Path(context.state_dir)
        self.bridge = LLMBridge(context.client, workers=workers)
        self._streams: dict[str, list[_Stream]] = {}
        self._locks = ConversationLocks()

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return mem0_oss_cost_plan(method, dataset, n_questions)

    @classmethod
    def saved_memories(cls, state_dir: Path, sample_id: str) -> list[SavedStore] | None:
        """Each speaker's final memories as the adapter saved them beside mem0's own files (records.json:
        mem0's store itself needs mem0 and a reopened instance to read)."""
        folder = Path(state_dir) / sample_id
        stores = []
        for speaker in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
            memories = read_saved_records(speaker)
            if memories is None:
                continue
            name = str(state.read_meta(speaker).get("speaker") or speaker.name)
            stores.append(SavedStore(name, speaker.name, state.is_finished(speaker), tuple(memories)))
        return stores

    def _settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {
            "graph": self.graph, "batch_size": self.batch_size, "instructions": self.harness_instructions
        }  # fmt: skip
        if self.extraction_date != "session":  # only then: a default ingest keeps its saved state
            settings["extraction_date"] = self.extraction_date
        return settings

    async def _endpoint(self, route: str, dims: int | None) -> library.LibraryEndpoint:
        """The bridge route's settings; `dims` from a finished stream's meta, so that reopening one makes no
        call (a call inside ingest would make the runner record a new ingestion and answer again)."""
        return library.LibraryEndpoint(
            base_url=self.bridge.base_url(route),
            api_key=self.bridge.api_key,
            model=self.bridge.model,
            embedding_model=self.bridge.embedding_model,
            embedding_dims=dims if dims else await self.bridge.embedding_dims(),
        )

    # ---- ingest -------------------------------------------------------------------------------------

    def ingest_units(self, conversation: Conversation) -> int:
        """Progress units: the add calls of both speakers."""
        return sum(
            len(speaker_batches(conversation, spec.user, self.batch_size))
            for spec in stream_specs(conversation, True)
        )

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Both speakers' streams, concurrently (as the harness's two threads); a finished stream is
        reopened from disk, an unfinished one rebuilt from an empty store."""
        await self.bridge.start()
        sid = conversation.sample_id
        async with self._locks(sid):
            await self._close_conversation(sid)
            stamp = conversation.fingerprint(self._settings())
            specs = stream_specs(conversation, True)
            outcomes = await asyncio.gather(
                *(self._restore_or_run(conversation, spec, stamp) for spec in specs)
            )
            streams = [stream for stream, _ in outcomes]
            self._streams[sid] = streams
            return await self._report(sid, streams, restored=all(reopened for _, reopened in outcomes))

    async def _restore_or_run(
        self, conversation: Conversation, spec: StreamSpec, stamp: str
    ) -> tuple[_Stream, bool]:
        """The speaker's stream, and whether it was reopened from a finished state (not run now)."""
        sid = conversation.sample_id
        folder = self.state_dir / sid / spec.slug
        route = f"{sid}.{spec.slug}"
        if state.is_done(folder, stamp):
            return await self._reopen(spec, folder, route), True
        await self.bridge.run_blocking(state.reset_folder, folder, self.state_dir)
        stream = await self._open(spec, folder, route, None)
        await self._run_stream(conversation, stream)
        if not any(row.get("kind") in TRANSIENT_KINDS for row in stream.meta.get("failures", [])):
            state.mark_done(folder, stamp)  # a transient failure withholds it: the next ingest replays
        return stream, False

    async def _open(self, spec: StreamSpec, folder: Path, route: str, dims: int | None) -> _Stream:
        endpoint = await self._endpoint(route, dims)
        speaker = library.Speaker(user_id=spec.user, folder=folder)
        http = self.bridge.http_client(library.CLIENT_TIMEOUT_S)
        memory = await self.bridge.run_blocking(library.open_memory, speaker, endpoint, self.graph, http)
        return _Stream(spec=spec, folder=folder, route=route, memory=memory, dims=endpoint.embedding_dims)

    async def _reopen(self, spec: StreamSpec, folder: Path, route: str) -> _Stream:
        """A finished stream, from its folder (no LLM call)."""
        meta = await self.bridge.run_blocking(state.read_meta, folder)
        stream = await self._open(spec, folder, route, int(meta.get("embedding_dims") or 0) or None)
        stream.meta = meta
        stream.relation_dates = _dates_from_meta(meta)
        return stream

    async def _run_stream(self, conversation: Conversation, stream: _Stream) -> None:
        sid, spec, memory = conversation.sample_id, stream.spec, stream.memory
        counts: Counter[str] = Counter()
        rows: list[StepFailure] = []
        async with self.bridge.scope(stream.route, stage=INGEST_STAGE, stamped=True):
            for batch in speaker_batches(conversation, spec.user, self.batch_size):
                memory.config.custom_fact_extraction_prompt = self.extraction_prompt(batch)
                seed = f"{sid}:{spec.user}:{','.join(batch.dia_ids)}"
                outcome = await self.bridge.run_blocking(
                    _call_library, _add_call(memory, spec.user, batch), seed
                )
                counts["adds"] += 1
                self._count_results(outcome.value, batch, stream, counts)
                rows += self._failures(sid, spec, batch, outcome)
                report_ingested()
        memories = await self._all_memories(stream)
        counts["memories"] = len(memories)
        await self.bridge.run_blocking(state.write_records, stream.folder, spec.user, memories)
        stream.meta = {
            "key": spec.user,
            "speaker": spec.user,
            "embedding_dims": stream.dims,
            "counts": dict(counts),
            "failures": [row.to_dict() for row in rows],
            "relation_dates": [[*key, date] for key, date in stream.relation_dates.items()],
        }
        await self.bridge.run_blocking(state.write_meta, stream.folder, stream.meta)

    def extraction_prompt(self, batch: Batch) -> str:
        """mem0's fact-extraction prompt for one add: "Today's date" is the batch's session date
        (`extraction_date: session`) or the library's own (`today`)."""
        when = batch.session_date if self.extraction_date == "session" else None
        return library.extraction_prompt(when, self.harness_instructions)

    def render(
        self,
        speakers: list[str],
        memories: list[list[dict[str, Any]]],
        relations: Any,
        streams: list[_Stream],
    ) -> str:
        """The answer context. relation_dates=none: relations undated, as the library gives them (its Kuzu
        store keeps the machine's clock only); first_seen: the session date the adapter kept (our help)."""
        dates = [s.relation_dates for s in streams] if self.relation_dates == "first_seen" else None
        return render_sections(speakers, memories, relations, dates)

    def _count_results(self, value: Any, batch: Batch, stream: _Stream, counts: Counter[str]) -> None:
        if not isinstance(value, dict):
            return
        for item in value.get("results") or []:
            if isinstance(item, dict):
                counts[f"ops.{item.get('event', 'UNKNOWN')}"] += 1
        relations = value.get("relations")
        if isinstance(relations, dict):
            for group in relations.get("added_entities") or []:
                for rel in group if isinstance(group, list) else []:
                    if isinstance(rel, dict):
                        counts["relations.added"] += 1
                        stream.relation_dates.setdefault(relation_key(rel), batch.session_date_text)
            counts["relations.deleted"] += sum(
                len(g) if isinstance(g, list) else 0 for g in relations.get("deleted_entities") or []
            )

    def _failures(self, sid: str, spec: StreamSpec, batch: Batch, outcome: _Outcome) -> list[StepFailure]:
        """One row per WARNING+ record mem0 logged during the add, and one for an exception it raised."""
        found: list[tuple[str, FailureKind, str]] = []
        for record in outcome.records:
            step, kind = libfail.classify(record)
            found.append((step, kind, record.message))
        if outcome.error is not None:
            error = outcome.error
            found.append(("add", failure_kind(error), f"{type(error).__name__}: {error}"))
        rows = [
            StepFailure(
                system=self.name,
                sample_id=sid,
                stage=step,
                kind=kind,
                message=one_line(message)[:2000],
                speaker=spec.user,
                pair_index=batch.index,
                dia_ids=batch.dia_ids,
            )
            for step, kind, message in found
        ]
        self.failures.extend(rows)
        return rows

    async def _all_memories(self, stream: _Stream) -> list[dict[str, Any]]:
        memory, user = stream.memory, stream.spec.user

        async def get_all() -> Any:
            return await memory.get_all(user_id=user, limit=ALL_MEMORIES)

        outcome = await self.bridge.run_blocking(_call_library, get_all)
        if outcome.error is not None:
            raise RuntimeError(
                f"{self.name}: mem0 get_all failed for {user}: {outcome.error}"
            ) from outcome.error
        value = outcome.value
        items = value.get("results", []) if isinstance(value, dict) else value
        return [m for m in items or [] if isinstance(m, dict)]

    async def _report(self, sid: str, streams: list[_Stream], *, restored: bool) -> IngestReport:
        details: Counter[str] = Counter()
        failures = 0
        everyone: list[list[dict[str, Any]]] = []
        for position, stream in enumerate(streams):
            for key, n in (stream.meta.get("counts") or {}).items():
                details[key] += int(n)
            for row in stream.meta.get("failures") or []:
                details[f"failures.{row.get('stage', 'unknown')}"] += 1
                failures += 1
            memories = await self._all_memories(stream)
            details[f"memories.speaker_{'ab'[position]}"] = len(memories)
            everyone.append(memories)
        details["memories"] = sum(len(m) for m in everyone)
        text = render_sections([s.spec.user for s in streams], everyone)
        return IngestReport(
            sample_id=sid,
            memory_tokens=count_tokens(text),
            failures=failures,
            details=dict(sorted(details.items())),
            restored=restored,
        )

    # ---- retrieve -----------------------------------------------------------------------------------

    async def _ensure_open(self, conversation: Conversation) -> list[_Stream]:
        sid = conversation.sample_id
        if sid in self._streams:
            return self._streams[sid]
        await self.bridge.start()
        async with self._locks(sid):
            if sid not in self._streams:
                stamp = conversation.fingerprint(self._settings())
                streams = []
                for spec in stream_specs(conversation, True):
                    folder = self.state_dir / sid / spec.slug
                    if not state.is_done(folder, stamp):
                        raise RuntimeError(
                            f"{self.name}: {sid} is not ingested (no finished state in {folder})"
                        )
                    streams.append(await self._reopen(spec, folder, f"{sid}.{spec.slug}"))
                self._streams[sid] = streams
        return self._streams[sid]

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """Each speaker's top_k memories (and, with the graph, top_k relations), searched concurrently.

        A speaker's mem0 instance serves the searches of several questions at once (each request names
        its question's bridge scope); the two speakers' searches run side by side (latency: the longer)."""
        streams = await self._ensure_open(conversation)
        results = await asyncio.gather(*(self._search(s, conversation, question) for s in streams))
        with timing.measure() as rendering:
            memories = [r[0] for r in results]
            relations = [r[1] for r in results] if self.graph else None
            text = self.render([s.spec.user for s in streams], memories, relations, streams)
        dia_ids = dict.fromkeys(d for items in memories for m in items for d in memory_dia_ids(m))
        n_items = sum(len(m) for m in memories) + sum(len(r) for r in relations or [])
        return RetrievedContext(
            kind="graph_memories" if self.graph else "memories",
            text=text,
            tokens=count_tokens(text),
            source_dia_ids=tuple(dia_ids),
            search_latency_s=max(r[2].latency_s for r in results) + rendering.latency_s,
            local_search_s=max(r[2].local_s for r in results) + rendering.local_s,
            items=n_items,
        )

    async def _search(
        self, stream: _Stream, conversation: Conversation, question: Question
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], timing.CallTiming]:
        memory, user, limit = stream.memory, stream.spec.user, self.top_k

        async def search() -> Any:
            return await memory.search(question.question, user_id=user, limit=limit)

        with timing.measure() as measured:
            async with self.bridge.scope(stream.route, stage=SEARCH_STAGE, stamped=True):
                outcome = await self.bridge.run_blocking(_call_library, search)
            for record in outcome.records:
                step, kind = libfail.classify(record)
                self._search_failure(conversation, question, f"search_{step}", kind, record.message)
            if outcome.error is not None:
                error = outcome.error
                message = f"{type(error).__name__}: {error}"
                self._search_failure(conversation, question, "search", failure_kind(error), message)
                return [], [], measured
            value = outcome.value if isinstance(outcome.value, dict) else {}
            found = [m for m in value.get("results") or [] if isinstance(m, dict)]
            # mem0's order (score, best first); memories of equal score by text, so that the context
            # (and its cached answer) does not depend on the order the store happened to hold them in.
            # Scores are compared to 6 places, as the store's tie-break does: a speaker's searches run at
            # once, and the same search then comes back with scores that differ in the last bits.
            found.sort(key=lambda m: (-round(memory_score(m), 6), str(m.get("memory", ""))))
            relations = [r for r in value.get("relations") or [] if isinstance(r, dict)]
        return found, relations, measured

    def _search_failure(
        self, conversation: Conversation, question: Question, stage: str, kind: FailureKind, msg: str
    ) -> None:
        self.failures.append(
            StepFailure(
                system=self.name,
                sample_id=conversation.sample_id,
                stage=stage,
                kind=kind,
                message=one_line(msg)[:2000],
                qid=question.qid,
            )
        )

    # ---- closing ------------------------------------------------------------------------------------

    async def _close_conversation(self, sid: str) -> None:
        for stream in self._streams.pop(sid, []):
            await self.bridge.run_blocking(library.close_memory, stream.memory)

    async def aclose(self) -> None:
        for sid in list(self._streams):
            with contextlib.suppress(Exception):
                await self._close_conversation(sid)
        await self.bridge.aclose()


def _add_call(memory: Any, user: str, batch: Batch) -> Callable[[], Coroutine[Any, Any, Any]]:
    """The harness's add: the batch's messages, the speaker's user id, the session date as metadata (and
    the batch's dia_ids, bookkeeping for evidence recall: mem0 never shows metadata to its LLM)."""
    metadata = {"timestamp": batch.session_date_text, "dia_ids": list(batch.dia_ids)}

    async def add() -> Any:
        return await memory.add(
            [dict(m) for m in batch.messages], user_id=user, metadata=metadata, infer=True
        )

    return add


def _dates_from_meta(meta: dict[str, Any]) -> dict[RelationKey, str]:
    dates: dict[RelationKey, str] = {}
    for row in meta.get("relation_dates") or []:
        if isinstance(row, list) and len(row) == 4:
            dates[(str(row[0]), str(row[1]), str(row[2]))] = str(row[3])
    return dates
