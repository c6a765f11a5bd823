"""Mem0 (Chhikara et al. 2025, arXiv 2504.19413): extraction plus Algorithm 1 over a vector store.

Per message pair (m_{t-1}, m_t) of a stream, extraction sees the summary S, the previous m messages with their
session dates, the pair and its session date, and returns candidate facts. Each fact, in order, is compared
with the s most similar memories of the *current* store and the LLM picks ADD, UPDATE, DELETE or NOOP.

Decisions this implementation makes where the paper is silent or an LLM can misbehave:

* **Streams.** With ``per_speaker`` (the paper's harness) each conversation is ingested once per speaker,
  that speaker's turns as 'user', the other's as 'assistant'; each speaker gets a store. Otherwise one shared
  store is built from one stream in which facts about both speakers are extracted. Streams run concurrently;
  a stream processes its pairs strictly in order.
* **UPDATE information guard.** The paper replaces a memory "only if the new fact carries more information".
  We accept an UPDATE's text only if its content words (lowercased, punctuation and stopwords dropped) are
  not a subset of the old memory's content words, i.e. it says something the old memory does not. Otherwise
  the op is logged as UPDATE_REJECTED and the old memory is kept unchanged. A cheap, deterministic check
  that stops the classic failure of an LLM "updating" a detailed memory with a vaguer paraphrase.
* **Short ids.** The update prompt shows memories as "0", "1", ...; the code maps them back. An id the model
  invents (not shown): UPDATE becomes an ADD of its text, DELETE becomes a NOOP; both are logged as
  INVENTED_ID. ADD without text stores the candidate fact.
* **DELETE** removes the memory (Mem0 deletes; only Mem0^g keeps invalidated relations). The op log keeps
  the text it had.
* **Summary schedule.** Deterministic and lagged one period, so timing never changes what a pair sees.
  S_0 = ''. When pair p with p % summary_every == 0 and p > 0 is reached, refresh k = p // summary_every
  starts in the background from S_{k-1} and the turns of pairs [(k-1)*every, k*every). Pair p is given
  S_{max(p // every - 1, 0)}, awaiting that refresh only if it has not finished. A refresh no pair will
  ever see is not started. A failed refresh keeps the previous summary.
* **Failures.** An LLMCallError in extraction, embedding or an update decision is recorded (``self.failures``,
  counts in ``IngestReport.details``) and that pair or fact is skipped; the stream goes on.
* **Resume.** Each stream logs its ops to ``<sample>/<slug>.ops.jsonl.partial`` (renamed to ``.ops.jsonl``
  at the end), then saves its store to ``<sample>/<slug>/`` and writes ``done`` last. A stream with a
  ``done`` marker is loaded, not re-run. A stream that saw a *transient* failure (rate limit, timeout,
  connection, server error) gets no marker, so the next ingest replays it from the start: the response
  cache makes the successful calls free and the failed ones are retried. Deterministic failures
  (malformed output, bad request) would fail again, so they do not block the marker.
* **Timestamps.** Every memory keeps the session date text of the pair that created it (``created_at``) and
  of its last accepted update (``updated_at``, shown to the answer model), and the dia_ids of its sources.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from mem0bench.data.model import Conversation, Question, Turn
from mem0bench.llm import timing
from mem0bench.llm.types import LLMCallError
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemContext
from mem0bench.memory.records import MemoryOp, MemoryRecord, OpKind
from mem0bench.memory.stream import PairContext, message_pairs
from mem0bench.memory.vector_store import FaissVectorStore
from mem0bench.prompts.extraction import EXTRACTION_SPEC, build_extraction_messages, parse_facts
from mem0bench.prompts.summary import build_summary_messages
from mem0bench.prompts.update import EVENTS, UPDATE_SPEC, build_update_messages
from mem0bench.tokens import count_tokens

__all__ = ["Mem0", "adds_information", "content_words", "render_memories", "speaker_slug"]

SHARED = "shared"
DONE_MARKER = "done"
META_FILE = "meta.json"
TRANSIENT_FAILURES = frozenset({"rate_limit", "server_error", "timeout", "connection"})

# ---- the UPDATE information guard ------------------------------------------------------------------

# Function words: they never make a memory more informative. (Negations are kept: "not" is news.)
_STOPWORD_TEXT = """
a an the and or but if then than so of to in on at by for with from into onto about as is are was
were be been being am has have had do does did will would shall should can could may might must it
its it's this that these those there here he she they them his her hers their theirs him i me my
mine we us our you your yours who whom whose which what when where why how also too very just
really some any all each both more most other such own same only again further once up down out over
under s t
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def content_words(text: str) -> frozenset[str]:
    """Lowercased words of `text` minus punctuation and stopwords."""
    words = (w.removesuffix("'s") for w in _WORD.findall(text.lower().replace("\u2019", "'")))
    return frozenset(w for w in words if w not in _STOPWORDS)


def adds_information(new: str, old: str) -> bool:
    """The UPDATE guard: True if `new` has a content word that `old` lacks."""
    return bool(content_words(new) - content_words(old))


# ---- helpers ---------------------------------------------------------------------------------------


def speaker_slug(name: str) -> str:
    """A file-name-safe form of a speaker name ('Caroline' -> 'caroline')."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "speaker"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_memories(sections: Sequence[tuple[str, Sequence[MemoryRecord]]]) -> str:
    """The answer-context rendering: per section a header naming the speaker, then
    '- [<session date>] <memory>' lines in the given order."""
    blocks = []
    for title, records in sections:
        lines = [f"Memories of {title}:"]
        lines += [f"- [{r.updated_at}] {_one_line(r.text)}" for r in records] or ["(no memories)"]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


@dataclass(frozen=True)
class _StreamSpec:
    key: str
    """The store key: the speaker's name, or 'shared'."""
    user: str
    other: str
    slug: str
    shared: bool

    @property
    def title(self) -> str:
        return f"{self.user} and {self.other}" if self.shared else self.user


@dataclass
class _StreamState:
    sample_id: str
    spec: _StreamSpec
    store: FaissVectorStore[MemoryRecord]
    ops_file: IO[str] | None = None
    next_id: int = 0
    summaries: dict[int, str] = field(default_factory=lambda: {0: ""})
    failures: list[dict[str, Any]] = field(default_factory=list)
    op_counts: Counter[str] = field(default_factory=Counter)
    pairs: int = 0

    def new_id(self) -> str:
        # Deterministic ids (not uuids), so the same replies give the same store, ids included.
        self.next_id += 1
        return f"{self.spec.slug}-{self.next_id:04d}"


# ---- the system ------------------------------------------------------------------------------------


class Mem0:
    """Mem0 as a MemorySystem.

    Extension points for subclasses (Mem0^g):
      * ``async ingest_pair_extra(ctx)``: runs concurrently with the memory step of every pair.
      * ``async begin_stream_extra(sample_id, key)``: a stream starts from scratch (reset any state).
      * ``async finish_stream_extra(sample_id, key, stream_dir)``: a stream ended; save extra state
        (before the ``done`` marker is written).
      * ``async load_stream_extra(sample_id, key, stream_dir)``: a finished stream is restored.
      * ``stream_key(speaker)``, ``stream_dir(sample_id, key)``, ``search_memories(...)``,
        ``record_failure(...)`` for reuse.
    ``key`` is the speaker's name, or 'shared' when ``per_speaker`` is false.
    """

    def __init__(
        self,
        *,
        name: str = "mem0",
        m: int = 10,
        s: int = 10,
        top_k: int = 30,
        summary_every: int = 10,
        per_speaker: bool = True,
        context: SystemContext,
    ) -> None:
        for label, value, low in (
            ("m", m, 0),
            ("s", s, 1),
            ("top_k", top_k, 1),
            ("summary_every", summary_every, 1),
        ):
            if int(value) < low:
                raise ValueError(f"{label} must be >= {low}, got {value}")
        self.name = name
        self.m = int(m)
        self.s = int(s)
        self.top_k = int(top_k)
        self.summary_every = int(summary_every)
        self.per_speaker = bool(per_speaker)
        self.client = context.client
        self.state_dir = Path(context.state_dir)
        self.failures: list[dict[str, Any]] = []
        """Failures of this process, one dict per failed call (failures.jsonl rows)."""
        self._stores: dict[str, dict[str, FaissVectorStore[MemoryRecord]]] = {}
        self._meta: dict[str, dict[str, dict[str, Any]]] = {}

    # ---- layout -------------------------------------------------------------------------------------

    def _specs(self, conversation: Conversation) -> list[_StreamSpec]:
        a, b = conversation.speaker_a, conversation.speaker_b
        if not self.per_speaker:
            return [_StreamSpec(SHARED, a, b, SHARED, True)]
        slug_a, slug_b = speaker_slug(a), speaker_slug(b)
        if slug_b == slug_a:
            slug_b += "-2"
        return [_StreamSpec(a, a, b, slug_a, False), _StreamSpec(b, b, a, slug_b, False)]

    def stream_key(self, speaker: str) -> str:
        """The store key of the stream a PairContext belongs to (ctx.speaker -> key)."""
        return speaker if self.per_speaker else SHARED

    def _spec(self, sample_id: str, key: str) -> _StreamSpec:
        meta = self._meta.get(sample_id, {}).get(key)
        if meta is None:
            raise KeyError(f"{sample_id}: no stream {key!r}")
        return _StreamSpec(key, meta["user"], meta["other"], meta["slug"], meta["shared"])

    def stream_dir(self, sample_id: str, key: str) -> Path:
        """Where a stream's snapshot lives: state_dir/<sample_id>/<speaker slug>/."""
        slug = self._meta.get(sample_id, {}).get(key, {}).get("slug") or (
            SHARED if key == SHARED else speaker_slug(key)
        )
        return self.state_dir / sample_id / slug

    def _ops_path(self, sample_id: str, spec: _StreamSpec) -> Path:
        return self.state_dir / sample_id / f"{spec.slug}.ops.jsonl"

    # ---- hooks for subclasses -----------------------------------------------------------------------

    async def ingest_pair_extra(self, ctx: PairContext) -> None:
        """Extra per-pair work, run concurrently with the memory step (Mem0^g's graph). No-op here."""

    async def begin_stream_extra(self, sample_id: str, key: str) -> None:
        """A stream (re)starts from its first pair."""

    async def finish_stream_extra(self, sample_id: str, key: str, stream_dir: Path) -> None:
        """A stream ended; save extra state into `stream_dir` (the done marker comes after)."""

    async def load_stream_extra(self, sample_id: str, key: str, stream_dir: Path) -> None:
        """A finished stream was restored from `stream_dir`."""

    # ---- ingest -------------------------------------------------------------------------------------

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Build (or restore) every stream of the conversation; streams run concurrently."""
        sid = conversation.sample_id
        specs = self._specs(conversation)
        self._stores.setdefault(sid, {})
        self._meta.setdefault(sid, {})
        for spec in specs:
            self._meta[sid][spec.key] = {
                "user": spec.user,
                "other": spec.other,
                "slug": spec.slug,
                "shared": spec.shared,
            }
        metas = await asyncio.gather(*(self._restore_or_run(conversation, spec) for spec in specs))
        return self._report(sid, specs, metas)

    async def _restore_or_run(self, conversation: Conversation, spec: _StreamSpec) -> dict[str, Any]:
        sid = conversation.sample_id
        directory = self.stream_dir(sid, spec.key)
        if (directory / DONE_MARKER).is_file():
            meta = self._load_stream(sid, spec.key, directory)
            await self.load_stream_extra(sid, spec.key, directory)
            return meta
        return await self._run_stream(conversation, spec)

    def _load_stream(self, sample_id: str, key: str, directory: Path) -> dict[str, Any]:
        self._stores.setdefault(sample_id, {})[key] = FaissVectorStore.load(directory)
        meta = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
        self._meta.setdefault(sample_id, {})[key] = {
            "user": meta["user"],
            "other": meta["other"],
            "slug": meta["slug"],
            "shared": meta["shared"],
        }
        return meta

    async def _run_stream(self, conversation: Conversation, spec: _StreamSpec) -> dict[str, Any]:
        sid = conversation.sample_id
        state = _StreamState(sid, spec, FaissVectorStore())
        self._stores[sid][spec.key] = state.store
        await self.begin_stream_extra(sid, spec.key)

        ops_path = self._ops_path(sid, spec)
        partial = ops_path.with_name(ops_path.name + ".partial")
        partial.parent.mkdir(parents=True, exist_ok=True)
        dates = {s.index: s for s in conversation.sessions}
        pairs = message_pairs(conversation)
        history: list[tuple[Turn, str]] = []  # every turn seen so far with its session date text
        refreshes: dict[int, asyncio.Task[str]] = {}
        every = self.summary_every

        async def summary(k: int) -> str:
            if k not in state.summaries:
                state.summaries[k] = await refreshes[k]
            return state.summaries[k]

        try:
            with open(partial, "w", encoding="utf-8") as ops_file:  # "w": a re-ingest truncates
                state.ops_file = ops_file
                for p, (session_index, pair) in enumerate(pairs):
                    if p > 0 and p % every == 0:
                        k = p // every
                        # Refresh k is first seen by pair (k + 1) * every: skip it if no such pair exists.
                        if (k + 1) * every < len(pairs):
                            window = [
                                f"[{dates[si].date_text}] {t.speaker}: {t.text}"
                                for si, pr in pairs[(k - 1) * every : k * every]
                                for t in pr
                            ]
                            previous_summary = await summary(k - 1)
                            refreshes[k] = asyncio.create_task(
                                self._refresh_summary(state, conversation, k, previous_summary, window, p)
                            )
                    session = dates[session_index]
                    previous = history[-self.m :] if self.m > 0 else []
                    ctx = PairContext(
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
                        summary=await summary(max(p // every - 1, 0)),
                    )
                    await asyncio.gather(self._memory_step(ctx, state), self.ingest_pair_extra(ctx))
                    history.extend((t, session.date_text) for t in pair)
                    state.pairs += 1
                state.ops_file = None
        finally:
            for task in refreshes.values():
                task.cancel()
        os.replace(partial, ops_path)
        return await self._finish_stream(state)

    async def _finish_stream(self, state: _StreamState) -> dict[str, Any]:
        directory = self.stream_dir(state.sample_id, state.spec.key)
        directory.mkdir(parents=True, exist_ok=True)
        stale = directory / DONE_MARKER
        stale.unlink(missing_ok=True)
        await self.finish_stream_extra(state.sample_id, state.spec.key, directory)
        state.store.save(directory)
        meta = {
            "user": state.spec.user,
            "other": state.spec.other,
            "slug": state.spec.slug,
            "shared": state.spec.shared,
            "key": state.spec.key,
            "pairs": state.pairs,
            "next_id": state.next_id,
            "summaries": [state.summaries[k] for k in sorted(state.summaries)],
            "op_counts": dict(sorted(state.op_counts.items())),
            "failures": state.failures,
        }
        tmp = directory / (META_FILE + ".tmp")
        tmp.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, directory / META_FILE)
        if not any(f["kind"] in TRANSIENT_FAILURES for f in state.failures):
            (directory / DONE_MARKER).write_text(
                "ok\n", encoding="utf-8"
            )  # last: everything above is complete
        return meta

    def _report(self, sample_id: str, specs: list[_StreamSpec], metas: list[dict[str, Any]]) -> IngestReport:
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
            memory_tokens=count_tokens(self._render_all(sample_id)),
            failures=failures,
            details=dict(sorted(details.items())),
        )

    def _render_all(self, sample_id: str) -> str:
        """Every final memory, rendered as in the answer context (for memory_tokens)."""
        stores = self._stores[sample_id]
        keys = [key for key in self._meta.get(sample_id, {}) if key in stores]
        return render_memories([(self._title(sample_id, key), stores[key].records()) for key in keys])

    def _title(self, sample_id: str, key: str) -> str:
        spec = self._spec(sample_id, key)
        return spec.title

    # ---- one pair -----------------------------------------------------------------------------------

    async def _memory_step(self, ctx: PairContext, state: _StreamState) -> None:
        """Extraction, one embedding call for all facts, then Algorithm 1 fact by fact."""
        messages = build_extraction_messages(
            user=ctx.speaker,
            other=ctx.other,
            summary=ctx.summary,
            previous=ctx.previous,
            previous_dates=ctx.previous_dates,
            pair=ctx.pair,
            session_date=ctx.session_date_text,
            shared=state.spec.shared,
        )
        try:
            reply = await self.client.structured(messages, EXTRACTION_SPEC, stage="ingest")
        except LLMCallError as error:
            self._record_call_error(state, ctx, "extraction", error)
            return
        try:
            facts = parse_facts(reply.data)
        except (TypeError, ValueError, AttributeError) as error:  # a reply the client let through unshaped
            self.record_failure(state.spec.key, ctx, "extraction", "malformed", str(error), state=state)
            return
        if not facts:
            return
        try:
            vectors = await self.client.embed(facts, stage="ingest")
        except LLMCallError as error:
            self._record_call_error(state, ctx, "embed", error)
            return
        for fact, vector in zip(facts, vectors):
            await self._decide(ctx, state, fact, np.asarray(vector, dtype=np.float32))

    async def _decide(self, ctx: PairContext, state: _StreamState, fact: str, vector: np.ndarray) -> None:
        """Algorithm 1 for one fact against the current store."""
        hits = state.store.search(vector, self.s)
        shown = {str(i): record for i, (record, _) in enumerate(hits)}
        messages = build_update_messages(
            fact=fact,
            fact_date=ctx.session_date_text,
            memories=[(sid, r.text, r.updated_at) for sid, r in shown.items()],
        )
        try:
            reply = await self.client.structured(messages, UPDATE_SPEC, stage="ingest")
        except LLMCallError as error:
            self._record_call_error(state, ctx, "update", error, fact=fact)
            return
        data = reply.data if isinstance(reply.data, dict) else {}
        event = str(data.get("event") or "").strip().upper()
        if event not in EVENTS:
            self.record_failure(
                state.spec.key, ctx, "update", "malformed", f"event {event!r}", fact=fact, state=state
            )
            return
        raw_id = data.get("id")
        short_id = None if raw_id is None else str(raw_id).strip().strip("\"'[]")
        text = _one_line(str(data.get("text") or "")) or fact
        dia_ids = tuple(t.dia_id for t in ctx.pair)
        base = {
            "source_dia_ids": dia_ids,
            "session_date": ctx.session_date_text,
            "pair_index": ctx.index,
            "fact": fact,
        }

        if event == "NOOP":
            self._log(state, MemoryOp(OpKind.NOOP, None, None, None, **base))
            return
        if event == "ADD":
            record = await self._add(ctx, state, text, fact, vector)
            if record is not None:
                self._log(state, MemoryOp(OpKind.ADD, record.id, None, record.text, **base))
            return

        target = shown.get(short_id) if short_id is not None else None
        if target is None:
            # The model named a memory it was not shown: never guess which one it meant.
            if event == "UPDATE":
                record = await self._add(ctx, state, text, fact, vector)
                after = record.text if record else None
                op = MemoryOp(OpKind.INVENTED_ID, record.id if record else None, None, after, **base)
            else:
                op = MemoryOp(OpKind.INVENTED_ID, None, None, None, **base)
            self._log(state, _with_request(op, event, short_id))
            return

        if event == "DELETE":
            state.store.delete(target.id)
            self._log(
                state,
                _with_request(MemoryOp(OpKind.DELETE, target.id, target.text, None, **base), None, short_id),
            )
            return

        # UPDATE. The information guard (see the module docstring): the new text must add a content word.
        if not adds_information(text, target.text):
            op = MemoryOp(OpKind.UPDATE_REJECTED, target.id, target.text, text, **base)
            self._log(state, _with_request(op, event, short_id))
            return
        new_vector = await self._vector_for(ctx, state, text, fact, vector)
        if new_vector is None:
            return
        merged_ids = target.source_dia_ids + tuple(d for d in dia_ids if d not in target.source_dia_ids)
        updated = MemoryRecord(
            id=target.id,
            text=text,
            speaker=target.speaker,
            created_at=target.created_at,
            updated_at=ctx.session_date_text,
            source_dia_ids=merged_ids,
        )
        state.store.update(target.id, new_vector, updated)
        self._log(
            state,
            _with_request(MemoryOp(OpKind.UPDATE, target.id, target.text, text, **base), None, short_id),
        )

    async def _vector_for(
        self, ctx: PairContext, state: _StreamState, text: str, fact: str, fact_vector: np.ndarray
    ) -> np.ndarray | None:
        """The embedding of `text`: the fact's own when the text is the fact, else one embed call."""
        if text == fact:
            return fact_vector
        try:
            return np.asarray((await self.client.embed([text], stage="ingest"))[0], dtype=np.float32)
        except LLMCallError as error:
            self._record_call_error(state, ctx, "embed", error, fact=fact)
            return None

    async def _add(
        self, ctx: PairContext, state: _StreamState, text: str, fact: str, fact_vector: np.ndarray
    ) -> MemoryRecord | None:
        vector = await self._vector_for(ctx, state, text, fact, fact_vector)
        if vector is None:
            return None
        record = MemoryRecord(
            id=state.new_id(),
            text=text,
            speaker=ctx.speaker,
            created_at=ctx.session_date_text,
            updated_at=ctx.session_date_text,
            source_dia_ids=tuple(t.dia_id for t in ctx.pair),
        )
        state.store.add(record.id, vector, record)
        return record

    def _log(self, state: _StreamState, op: MemoryOp) -> None:
        state.op_counts[op.kind.value] += 1
        if state.ops_file is not None:
            state.ops_file.write(json.dumps(op.to_dict(), ensure_ascii=False) + "\n")
            state.ops_file.flush()  # a crash keeps every op logged so far

    # ---- summary ------------------------------------------------------------------------------------

    async def _refresh_summary(
        self,
        state: _StreamState,
        conversation: Conversation,
        k: int,
        previous: str,
        lines: list[str],
        pair_index: int,
    ) -> str:
        """S_k from S_{k-1} and the lines of period k; on failure S_{k-1} (recorded)."""
        messages = build_summary_messages(
            speakers=(conversation.speaker_a, conversation.speaker_b), previous_summary=previous, lines=lines
        )
        try:
            reply = await self.client.chat(messages, stage="ingest")
        except LLMCallError as error:
            failure = error.failure
            self.record_failure(
                state.spec.key,
                None,
                "summary",
                failure.kind,
                failure.message,
                state=state,
                pair_index=pair_index,
            )
            return previous
        return reply.text.strip() or previous

    # ---- failures -----------------------------------------------------------------------------------

    def _record_call_error(
        self, state: _StreamState, ctx: PairContext, stage: str, error: LLMCallError, fact: str | None = None
    ) -> None:
        failure = getattr(error, "failure", None)
        kind = getattr(failure, "kind", "unknown")
        message = getattr(failure, "message", str(error))
        self.record_failure(state.spec.key, ctx, stage, kind, message, fact=fact, state=state)

    def record_failure(
        self,
        key: str,
        ctx: PairContext | None,
        stage: str,
        kind: str,
        message: str,
        *,
        fact: str | None = None,
        state: _StreamState | None = None,
        pair_index: int | None = None,
    ) -> dict[str, Any]:
        """Record one failed step: a failures.jsonl row on `self.failures` (and in the stream's meta)."""
        row: dict[str, Any] = {
            "system": self.name,
            "sample_id": ctx.sample_id if ctx else (state.sample_id if state else ""),
            "speaker": key,
            "pair_index": ctx.index if ctx else pair_index,
            "dia_ids": [t.dia_id for t in ctx.pair] if ctx else [],
            "stage": stage,
            "kind": kind,
            "message": message,
        }
        if fact is not None:
            row["fact"] = fact
        self.failures.append(row)
        if state is not None:
            state.failures.append(row)
        return row

    # ---- retrieval ----------------------------------------------------------------------------------

    def _ensure_loaded(self, conversation: Conversation) -> dict[str, FaissVectorStore[MemoryRecord]]:
        sid = conversation.sample_id
        specs = self._specs(conversation)
        for spec in specs:
            if spec.key in self._stores.get(sid, {}):
                continue
            directory = self.state_dir / sid / spec.slug
            if not (directory / DONE_MARKER).is_file():
                raise RuntimeError(f"{self.name}: {sid} is not ingested (no snapshot at {directory})")
            self._load_stream(sid, spec.key, directory)
        # Sections always come in speaker_a, speaker_b order, however the stores were loaded.
        meta = self._meta[sid]
        self._meta[sid] = {spec.key: meta[spec.key] for spec in specs} | {
            k: v for k, v in meta.items() if k not in {spec.key for spec in specs}
        }
        return self._stores[sid]

    def search_memories(
        self, sample_id: str, vector: np.ndarray, k: int | None = None
    ) -> list[tuple[str, list[tuple[MemoryRecord, float]]]]:
        """(section title, top-k hits best first) for each store of an ingested conversation."""
        k = self.top_k if k is None else k
        stores = self._stores[sample_id]
        keys = [key for key in self._meta.get(sample_id, {}) if key in stores]  # speaker_a first
        return [(self._title(sample_id, key), stores[key].search(vector, k)) for key in keys]

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """Top_k memories of each speaker's store, rendered with their timestamps."""
        self._ensure_loaded(conversation)
        with timing.measure() as measured:
            vector = (await self.client.embed([question.question], stage="search"))[0]
            results = self.search_memories(conversation.sample_id, np.asarray(vector, dtype=np.float32))
            text = render_memories([(title, [r for r, _ in hits]) for title, hits in results])
        dia_ids: dict[str, None] = {}
        for _, hits in results:
            for record, _ in hits:
                dia_ids.update(dict.fromkeys(record.source_dia_ids))
        return RetrievedContext(
            kind="memories",
            text=text,
            tokens=count_tokens(text),
            source_dia_ids=tuple(dia_ids),
            search_latency_s=measured.latency_s,
            local_search_s=measured.local_s,
        )

    def snapshot(self, sample_id: str) -> dict[str, list[MemoryRecord]]:
        """The current memories of each store of a conversation (key: speaker name, or 'shared')."""
        if sample_id not in self._stores:
            self._load_from_disk(sample_id)
        return {key: store.records() for key, store in self._stores.get(sample_id, {}).items()}

    def _load_from_disk(self, sample_id: str) -> None:
        root = self.state_dir / sample_id
        if not root.is_dir():
            return
        for directory in sorted(p for p in root.iterdir() if (p / DONE_MARKER).is_file()):
            meta = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
            self._load_stream(sample_id, meta["key"], directory)


def _with_request(op: MemoryOp, requested: str | None, short_id: str | None) -> MemoryOp:
    return MemoryOp(
        kind=op.kind,
        memory_id=op.memory_id,
        before=op.before,
        after=op.after,
        source_dia_ids=op.source_dia_ids,
        session_date=op.session_date,
        pair_index=op.pair_index,
        fact=op.fact,
        requested=requested,
        requested_id=short_id,
    )
