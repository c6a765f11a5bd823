"""Mem0 as a MemorySystem: streams of message pairs through extraction and Algorithm 1, with resume.

Per message pair (m_{t-1}, m_t) of a stream, extraction sees the summary S, the previous m messages with
their session dates, the pair and its session date, and returns candidate facts (`extraction`). Each fact, in
order, is compared with the s most similar memories of the current store and the LLM picks ADD, UPDATE,
REPLACE, DELETE or NOOP (`update`; ``update=batched`` decides a pair's facts in one call). S is refreshed on a deterministic schedule (`summary`). Streams (one per speaker,
see `streams`) run concurrently; a stream applies its pairs' update decisions strictly in order (its chain),
while the work that depends on the conversation alone (summaries, extraction, fact embeddings) runs up to
``lookahead`` pairs ahead; the requests are the same at any lookahead. A stream is saved with a done
marker when it ends (`persistence`), unless a transient failure asks for a replay (`failures`). Every
memory keeps the session date of the pair that created it (``created_at``) and of its last accepted update
(``updated_at``, shown to the answer model), and the dia_ids of its sources.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from mem0bench.data.model import Conversation, Dataset, Question, Turn
from mem0bench.llm import timing
from mem0bench.llm.slots import ingest_ahead
from mem0bench.llm.types import FailureKind, LLMCallError
from mem0bench.memory.base import (
    IngestReport,
    RetrievedContext,
    SavedStore,
    StepFailure,
    SystemBase,
    SystemContext,
)
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.memory.ingest_progress import report_chain, report_ingested
from mem0bench.memory.records import MemoryRecord
from mem0bench.memory.stream import PairContext, message_pairs
from mem0bench.memory.vector_store import FaissVectorStore
from mem0bench.prompts.extraction import EXTRACTION_SOURCES, MEMORY_STYLES, ExtractionSource, MemoryStyle
from mem0bench.prompts.files import EXTRACTION_FIELDS, UPDATE_FIELDS, load_prompt_file
from mem0bench.systems.methods.mem0.costs import mem0_cost_plan
from mem0bench.systems.methods.mem0.extraction import extract_facts
from mem0bench.systems.methods.mem0.failures import DeferredFailures, describe, failure_row, has_transient
from mem0bench.systems.methods.mem0.persistence import (
    OpsLog,
    is_done,
    load_store,
    mark_done,
    ops_log_path,
    read_meta,
    save_snapshot,
    saved_stores,
    withdraw_done,
)
from mem0bench.systems.methods.mem0.retrieval import (
    MEMORY_DATES,
    MemoryDate,
    Section,
    dia_ids_of,
    render_hits,
    render_memories,
    search_sections,
)
from mem0bench.systems.methods.mem0.streams import SHARED, StreamSpec, StreamState, speaker_slug, stream_specs
from mem0bench.systems.methods.mem0.summary import PairLines, SummarySchedule, refresh_summary
from mem0bench.systems.methods.mem0.update import MemoryUpdater
from mem0bench.tokens import count_tokens

__all__ = ["Mem0"]


@dataclass(frozen=True)
class _Prepared:
    """What runs ahead for one pair: its context, the extraction (facts with their embeddings) and the
    subclass's extra work, as tasks started ahead (or, at lookahead 0, coroutines the chain runs inline)."""

    ctx: PairContext
    held: DeferredFailures
    facts: Awaitable[list[tuple[str, np.ndarray]]]
    extra: Awaitable[Any]


class Mem0(SystemBase):
    """Mem0 as a MemorySystem.

    Extension points for subclasses (Mem0^g):
      * ``async prepare_pair_extra(ctx)``: the extra work of a pair that reads the conversation alone (it
        may run up to ``lookahead`` pairs ahead); its result goes to ``apply_pair_extra``.
      * ``async apply_pair_extra(ctx, prepared)``: the extra work that reads or changes the stream's own
        state, on the chain, concurrently with the pair's update decisions (default: ``ingest_pair_extra``).
      * ``async ingest_pair_extra(ctx)``: the whole extra work of a pair, on the chain.
      * ``async begin_stream_extra(sample_id, key)``: a stream starts from scratch (reset any state).
      * ``async finish_stream_extra(sample_id, key, stream_dir)``: a stream ended; save extra state
        (before the ``done`` marker is written).
      * ``stream_complete_extra(sample_id, key)``: False withholds the ``done`` marker (a transient
        failure of the extra work), so the next ingest replays the stream.
      * ``async load_stream_extra(sample_id, key, stream_dir)``: a finished stream is restored.
      * ``stream_key(speaker)``, ``stream_keys(sample_id)``, ``stream_title(...)``, ``stream_dir(...)``,
        ``search_memories(...)``, ``render_all_memories(...)``, ``record_failure(...)`` for reuse.
    ``key`` is the speaker's name, or 'shared' when ``per_speaker`` is false.
    """

    def __init__(
        self,
        *,
        name: str = "mem0",
        m: int = 10,
        s: int = 10,
        top_k: int = 30,
        summary_every: int = 5,
        summary_lag: int = 1,
        per_speaker: bool = True,
        update: str = "per_fact",
        ops: str = "replace",
        extraction_source: str = "both",
        memory_style: str = "short",
        memory_date: str = "updated",
        extraction_prompt_file: str | None = None,
        update_prompt_file: str | None = None,
        lookahead: int = 8,
        context: SystemContext,
    ) -> None:
        for label, value, low in (
            ("m", m, 0),
            ("s", s, 1),
            ("top_k", top_k, 1),
            ("summary_every", summary_every, 1),
            ("summary_lag", summary_lag, 1),
            ("lookahead", lookahead, 0),
        ):
            if int(value) < low:
                raise ValueError(f"{label} must be >= {low}, got {value}")
        choices: tuple[tuple[str, str, tuple[str, ...]], ...] = (
            ("extraction_source", extraction_source, EXTRACTION_SOURCES),
            ("memory_style", memory_style, MEMORY_STYLES),
            ("memory_date", memory_date, MEMORY_DATES),
        )
        for setting, choice, allowed in choices:
            if choice not in allowed:
                raise ValueError(f"{setting} must be one of {', '.join(allowed)}, got {choice!r}")
        if extraction_source == "owner" and not per_speaker:
            raise ValueError("extraction_source=owner needs per_speaker=true (a shared store has no owner)")
        super().__init__()
        self.name = name
        self.m = int(m)
        self.s = int(s)
        self.top_k = int(top_k)
        self.summary_every = int(summary_every)
        self.summary_lag = int(summary_lag)
        self.per_speaker = bool(per_speaker)
        self.lookahead = int(lookahead)
        """How many pairs ahead of the update chain a stream's extraction may run (0: pair by pair)."""
        self.client = context.client
        self.state_dir = Path(context.state_dir)
        self._stores: dict[str, dict[str, FaissVectorStore[MemoryRecord]]] = {}
        self._specs: dict[str, dict[str, StreamSpec]] = {}
        """Per conversation, the streams' specs by key, speaker_a first once retrieval has run."""
        self.extraction_template = (
            None
            if extraction_prompt_file is None
            else load_prompt_file(
                "method.extraction_prompt_file",
                str(extraction_prompt_file),
                EXTRACTION_FIELDS,
                frozenset({"new"}),
            )
        )
        update_template = (
            None
            if update_prompt_file is None
            else load_prompt_file(
                "method.update_prompt_file",
                str(update_prompt_file),
                UPDATE_FIELDS,
                frozenset({"memories", "facts" if update == "batched" else "fact"}),
            )
        )
        self.prompt_files = tuple(f for f in (self.extraction_template, update_template) if f is not None)
        self._updater = MemoryUpdater(
            self.client, self.s, self.record_failure, str(update), str(ops), update_template
        )
        self.update = self._updater.mode
        self.ops = self._updater.ops
        self.extraction_source: ExtractionSource = extraction_source  # type: ignore[assignment]
        self.memory_style: MemoryStyle = memory_style  # type: ignore[assignment]
        self.memory_date: MemoryDate = memory_date  # type: ignore[assignment]

    # ---- layout -------------------------------------------------------------------------------------

    def stream_key(self, speaker: str) -> str:
        """The store key of the stream a PairContext belongs to (ctx.speaker -> key)."""
        return speaker if self.per_speaker else SHARED

    def stream_keys(self, sample_id: str) -> list[str]:
        """The keys of the conversation's stores in this process, in section order (speaker_a first)."""
        stores = self._stores.get(sample_id, {})
        return [key for key in self._specs.get(sample_id, {}) if key in stores]

    def stream_title(self, sample_id: str, key: str) -> str:
        """Whose memories a stream holds, as the answer context names them."""
        spec = self._specs.get(sample_id, {}).get(key)
        if spec is None:
            raise KeyError(f"{sample_id}: no stream {key!r}")
        return spec.title

    def stream_dir(self, sample_id: str, key: str) -> Path:
        """Where a stream's snapshot lives: state_dir/<sample_id>/<speaker slug>/."""
        spec = self._specs.get(sample_id, {}).get(key)
        slug = spec.slug if spec else (SHARED if key == SHARED else speaker_slug(key))
        return self.state_dir / sample_id / slug

    # ---- hooks for subclasses -----------------------------------------------------------------------

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return mem0_cost_plan(method, dataset, n_questions, graph=False)

    async def prepare_pair_extra(self, ctx: PairContext) -> Any:
        """Extra per-pair work that depends on the conversation alone (runs ahead). None here."""
        return None

    async def apply_pair_extra(self, ctx: PairContext, prepared: Any) -> None:
        """Extra per-pair work on the stream's chain, concurrently with the update decisions."""
        await self.ingest_pair_extra(ctx)

    async def ingest_pair_extra(self, ctx: PairContext) -> None:
        """Extra per-pair work, run on the chain concurrently with the memory step. No-op here."""

    async def begin_stream_extra(self, sample_id: str, key: str) -> None:
        """A stream (re)starts from its first pair."""

    async def finish_stream_extra(self, sample_id: str, key: str, stream_dir: Path) -> None:
        """A stream ended; save extra state into `stream_dir` (the done marker comes after)."""

    def stream_complete_extra(self, sample_id: str, key: str) -> bool:
        """False if the extra work of a finished stream should be replayed (no done marker)."""
        return True

    async def load_stream_extra(self, sample_id: str, key: str, stream_dir: Path) -> None:
        """A finished stream was restored from `stream_dir`."""

    # ---- ingest -------------------------------------------------------------------------------------

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Build (or restore) every stream of the conversation; streams run concurrently."""
        sid = conversation.sample_id
        specs = stream_specs(conversation, self.per_speaker)
        self._stores.setdefault(sid, {})
        self._specs.setdefault(sid, {}).update({spec.key: spec for spec in specs})
        metas = await asyncio.gather(*(self._restore_or_run(conversation, spec) for spec in specs))
        return self._report(sid, specs, metas)

    @classmethod
    def saved_memories(cls, state_dir: Path, sample_id: str) -> list[SavedStore] | None:
        """Each stream's snapshot and operation log, as `persistence` saved them."""
        return saved_stores(state_dir, sample_id)

    def ingest_units(self, conversation: Conversation) -> int:
        """Progress units of a conversation's ingestion: its message pairs, once per stream."""
        return len(message_pairs(conversation)) * len(stream_specs(conversation, self.per_speaker))

    async def _restore_or_run(self, conversation: Conversation, spec: StreamSpec) -> dict[str, Any]:
        sid = conversation.sample_id
        directory = self.stream_dir(sid, spec.key)
        if is_done(directory):
            meta = self._load_stream(sid, spec.key, directory)
            await self.load_stream_extra(sid, spec.key, directory)
            return meta
        return await self._run_stream(conversation, spec)

    def _load_stream(self, sample_id: str, key: str, directory: Path) -> dict[str, Any]:
        self._stores.setdefault(sample_id, {})[key] = load_store(directory)
        meta = read_meta(directory)
        self._specs.setdefault(sample_id, {})[key] = StreamSpec.from_meta(key, meta)
        return meta

    async def _run_stream(self, conversation: Conversation, spec: StreamSpec) -> dict[str, Any]:
        """Every pair of the stream, in order, from an empty store; then the snapshot.

        Each pair has a part that depends on the conversation alone (its summary, extraction and fact
        embeddings; Mem0^g's entities and relations: `prepare_pair_extra`) and a part that reads and
        changes the store (the update decisions; Mem0^g's graph updates: `apply_pair_extra`). The first
        part of up to `lookahead` pairs ahead runs while the chain applies the current pair; the chain
        applies the pairs strictly in order, so every request is the one the sequential order
        (lookahead 0) sends.
        """
        sid = conversation.sample_id
        state = StreamState(sid, spec, FaissVectorStore())
        self._stores[sid][spec.key] = state.store
        await self.begin_stream_extra(sid, spec.key)

        dates = {s.index: s for s in conversation.sessions}
        pairs = message_pairs(conversation)
        pair_lines = PairLines(pairs, dates)  # rendered per summary period, not all up front
        schedule = SummarySchedule(
            self.summary_every,
            self.summary_lag,
            pair_lines,
            partial(self._refresh_summary, state, conversation),
            state.summaries,
        )
        history: list[tuple[Turn, str]] = []  # every turn of the stream with its session date text
        seen_before: list[int] = []  # how many turns come before pair p
        for session_index, pair in pairs:
            seen_before.append(len(history))
            history.extend((t, dates[session_index].date_text) for t in pair)

        def context(p: int, summary: str) -> PairContext:
            session_index, pair = pairs[p]
            session = dates[session_index]
            previous = history[max(seen_before[p] - self.m, 0) : seen_before[p]] if self.m > 0 else []
            return PairContext(
                sample_id=sid,
                speaker=spec.user,
                other=spec.other,
                index=p,
                session_index=session_index,
                session_date=session.date_time,
                session_date_text=session.date_text,
                pair=pair,
                previous=tuple(t for t, _ in previous),
                previous_dates=tuple(d for _, d in previous),
                summary=summary,
            )

        tasks: set[asyncio.Task[Any]] = set()  # everything started ahead: cancelled if the stream fails

        def spawn(coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
            task = asyncio.create_task(coro)
            tasks.add(task)
            return task

        def prepared_for(p: int, summary: str, *, ahead: bool) -> _Prepared:
            ctx = context(p, summary)
            held = DeferredFailures(self.record_failure, self.name)
            facts = self._extract(ctx, state, held)
            extra = self.prepare_pair_extra(ctx)
            if ahead:  # started now; otherwise awaited inline by the chain, exactly the sequential order
                return _Prepared(ctx, held, spawn(facts), spawn(extra))
            return _Prepared(ctx, held, facts, extra)

        async def prepare_ahead(p: int) -> _Prepared:
            # The tasks it starts inherit the key: work run ahead never takes a slot a chain's call waits for.
            with ingest_ahead():
                return prepared_for(p, await schedule.visible(p), ahead=True)

        ahead: dict[int, asyncio.Task[Any]] = {}
        launched = 0
        stream_label = f"{sid}/{spec.slug}"
        ops_log = OpsLog(ops_log_path(self.state_dir, sid, spec.slug))
        try:
            with ops_log:
                state.ops_log = ops_log
                for p in range(len(pairs)):
                    if self.lookahead == 0:
                        prepared = prepared_for(p, await schedule.summary_for(p), ahead=False)
                    else:
                        while launched < len(pairs) and launched <= p + self.lookahead:
                            schedule.start(launched)  # in pair order: the summaries are their own chain
                            ahead[launched] = spawn(prepare_ahead(launched))
                            launched += 1
                        prepared = await ahead.pop(p)
                    with timing.measure() as chain:
                        await asyncio.gather(self._apply_memory(prepared, state), self._apply_extra(prepared))
                    report_chain(stream_label, chain.server_s, len(chain.requests))
                    state.pairs += 1
                    report_ingested()
                state.ops_log = None
        finally:
            for task in tasks:
                task.cancel()
            schedule.cancel()
        ops_log.commit()
        return await self._finish_stream(state)

    async def _extract(
        self, ctx: PairContext, state: StreamState, held: DeferredFailures
    ) -> list[tuple[str, np.ndarray]]:
        """Extraction and the facts' embeddings: the conversation alone, so it may run ahead (its failures
        are held until the chain reaches the pair)."""
        return await extract_facts(
            self.client,
            ctx,
            state,
            held,
            source=self.extraction_source,
            style=self.memory_style,
            template=self.extraction_template,
        )

    async def _apply_memory(self, prepared: _Prepared, state: StreamState) -> None:
        """Algorithm 1 for the pair's facts (per fact, or batched), on the store as the chain left it."""
        facts = await prepared.facts
        prepared.held.replay()
        await self._updater.apply_pair(prepared.ctx, state, facts)

    async def _apply_extra(self, prepared: _Prepared) -> None:
        await self.apply_pair_extra(prepared.ctx, await prepared.extra)

    async def _refresh_summary(
        self, state: StreamState, conversation: Conversation, previous: str, lines: list[str], pair_index: int
    ) -> str:
        """One summary refresh; on failure the previous summary (recorded)."""
        speakers = (conversation.speaker_a, conversation.speaker_b)
        try:
            return await refresh_summary(self.client, speakers, previous, lines)
        except LLMCallError as error:
            kind, message = describe(error)
            self.record_failure(
                state.spec.key, None, "summary", kind, message, state=state, pair_index=pair_index
            )
            return previous

    async def _finish_stream(self, state: StreamState) -> dict[str, Any]:
        sid, key = state.sample_id, state.spec.key
        directory = self.stream_dir(sid, key)
        directory.mkdir(parents=True, exist_ok=True)
        withdraw_done(directory)
        await self.finish_stream_extra(sid, key, directory)
        meta = save_snapshot(directory, state)
        # A transient failure anywhere in the stream withholds the marker: the next ingest replays it.
        if not has_transient(state.failures) and self.stream_complete_extra(sid, key):
            mark_done(directory, key)
        return meta

    def _report(self, sample_id: str, specs: list[StreamSpec], metas: list[dict[str, Any]]) -> IngestReport:
        details: Counter[str] = Counter()
        failures = 0
        for meta in metas:
            details["pairs"] += int(meta.get("pairs", 0))
            for kind, n in meta.get("op_counts", {}).items():
                details[f"ops.{kind}"] += int(n)
            for failure in meta.get("failures", []):
                details[f"failures.{failure['stage']}"] += 1
                failures += 1
        details["memories"] = sum(len(self._stores[sample_id][spec.key]) for spec in specs)
        return IngestReport(
            sample_id=sample_id,
            memory_tokens=count_tokens(self.render_all_memories(sample_id)),
            failures=failures,
            details=dict(sorted(details.items())),
        )

    def render_all_memories(self, sample_id: str) -> str:
        """Every final memory, rendered as in the answer context (the memory store's size)."""
        stores = self._stores[sample_id]
        keys = self.stream_keys(sample_id)
        return render_memories(
            [(self.stream_title(sample_id, key), stores[key].records()) for key in keys],
            date=self.memory_date,
        )

    # ---- failures -----------------------------------------------------------------------------------

    def record_failure(
        self,
        key: str,
        ctx: PairContext | None,
        stage: str,
        kind: FailureKind,
        message: str,
        *,
        fact: str | None = None,
        state: StreamState | None = None,
        pair_index: int | None = None,
    ) -> StepFailure:
        """Record one failed step on `self.failures` (and in the stream's meta)."""
        row = failure_row(
            system=self.name,
            sample_id=state.sample_id if state else "",
            speaker=key,
            ctx=ctx,
            stage=stage,
            kind=kind,
            message=message,
            fact=fact,
            pair_index=pair_index,
        )
        self.failures.append(row)
        if state is not None:
            state.failures.append(row)
        return row

    # ---- retrieval ----------------------------------------------------------------------------------

    def _ensure_loaded(self, conversation: Conversation) -> dict[str, FaissVectorStore[MemoryRecord]]:
        """The conversation's stores, loaded from their snapshots if this process lacks them."""
        sid = conversation.sample_id
        specs = stream_specs(conversation, self.per_speaker)
        for spec in specs:
            if spec.key in self._stores.get(sid, {}):
                continue
            directory = self.state_dir / sid / spec.slug
            if not is_done(directory):
                raise RuntimeError(f"{self.name}: {sid} is not ingested (no snapshot at {directory})")
            self._load_stream(sid, spec.key, directory)
        # Sections always come in speaker_a, speaker_b order, however the stores were loaded.
        known = self._specs[sid]
        ordered = {spec.key: known[spec.key] for spec in specs}
        self._specs[sid] = ordered | {k: v for k, v in known.items() if k not in ordered}
        return self._stores[sid]

    def search_memories(self, sample_id: str, vector: np.ndarray, k: int | None = None) -> list[Section]:
        """(section title, top-k hits best first) for each store of an ingested conversation."""
        stores = self._stores[sample_id]
        titled = [(self.stream_title(sample_id, key), stores[key]) for key in self.stream_keys(sample_id)]
        return search_sections(titled, vector, self.top_k if k is None else k)

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """Top_k memories of each speaker's store, rendered with their timestamps."""
        self._ensure_loaded(conversation)
        with timing.measure() as measured:
            vector = (await self.client.embed([question.question], stage="search"))[0]
            results = self.search_memories(conversation.sample_id, np.asarray(vector, dtype=np.float32))
            text = render_hits(results, date=self.memory_date)
        return RetrievedContext(
            kind="memories",
            text=text,
            tokens=count_tokens(text),
            source_dia_ids=dia_ids_of(record.source_dia_ids for _, hits in results for record, _ in hits),
            search_latency_s=measured.latency_s,
            local_search_s=measured.local_s,
            items=sum(len(hits) for _, hits in results),
        )

    def release(self, sample_id: str) -> None:
        """Forget the conversation's stores (their snapshots stay on disk; `retrieve` loads them again).
        A conversation with a stream that has no done snapshot (an ingestion step failed) is kept: nothing
        could load it again, and the latency pass still times its retrievals."""
        streams = self._specs.get(sample_id, {}).values()
        if not all(is_done(self.state_dir / sample_id / spec.slug) for spec in streams):
            return
        self._stores.pop(sample_id, None)
        self._specs.pop(sample_id, None)

    def snapshot(self, sample_id: str) -> dict[str, list[MemoryRecord]]:
        """The current memories of each store of a conversation (key: speaker name, or 'shared')."""
        if sample_id not in self._stores:
            self._load_from_disk(sample_id)
        return {key: store.records() for key, store in self._stores.get(sample_id, {}).items()}

    def _load_from_disk(self, sample_id: str) -> None:
        root = self.state_dir / sample_id
        if not root.is_dir():
            return
        for directory in sorted(p for p in root.iterdir() if is_done(p)):
            self._load_stream(sample_id, read_meta(directory)["key"], directory)
