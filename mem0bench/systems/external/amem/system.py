"""A-Mem (agentic memory: one note per turn with keywords, context and tags, links and memory evolution)
as a MemorySystem, the way the A-Mem authors' LOCOMO harness ran it.

Ingest: one A-Mem instance per conversation; every turn, in order, becomes one `add_note` call with
content "Speaker <name> says : <text>" and the session's date as written in LOCOMO as the note's time (the
library analyses the note, then evolves it against its 5 nearest notes). Retrieve: the library's
`find_related_memories_raw` walk (k nearest notes, each followed by the notes it links to) with the
question's LLM keywords as the query (`method.query`), rendered as dated notes. The library is sync and
runs in the adapter's own worker threads; its chat and embedding calls go through the harness's client via the bridge.
State: ChromaDB under `state_dir/<sample_id>/amem/`, a `done.json` marker written last.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mem0bench.common.files import atomic_write
from mem0bench.common.jsonl import read_jsonl
from mem0bench.data.model import Conversation, Dataset, Question, Turn
from mem0bench.llm import timing
from mem0bench.llm.timing import measure
from mem0bench.llm.types import FailureKind
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
from mem0bench.memory.records import MemoryRecord
from mem0bench.memory.saved_state import ConversationLocks, DoneMarker, conversation_folder
from mem0bench.systems.external.amem.costs import amem_cost_plan
from mem0bench.systems.external.amem.failures import LIBRARY_LOG, CallEvent, RecordingLLM
from mem0bench.systems.external.amem.library import BridgeEndpoints, LibraryHandle, note_ids, open_library
from mem0bench.systems.external.amem.notes import (
    Note,
    note_from_metadata,
    note_tokens_text,
    render_notes,
    walk_related,
)
from mem0bench.systems.external.amem.query import KEYWORDS_FORMAT, keywords_prompt, parse_keywords
from mem0bench.systems.external.bridge import LLMBridge
from mem0bench.systems.external.failure_kinds import failure_kind
from mem0bench.tokens import count_tokens

__all__ = ["AMem", "note_content"]

_T = TypeVar("_T")
_WORKERS = 16  # library threads (one conversation uses one at a time); more conversations wait for one
_FORMAT = 1  # bump when the state layout or the note content changes
_QUERIES = ("keywords", "question")
_NOTES = "notes.jsonl"
"""The conversation's notes, written beside the library's store for `saved_memories` (not for resume)."""


def _folder(state_dir: Path, sample_id: str) -> Path:
    return conversation_folder(state_dir, sample_id, "amem")


def _marker_in(folder: Path) -> DoneMarker:
    return DoneMarker(folder / "done.json", _FORMAT)


def note_content(turn: Turn) -> str:
    """What the authors' harness stored per turn ("Speaker " + speaker + "says : " + text), with the space
    their string concatenation lost ("Speaker Carolinesays : ...") put back."""
    return f"Speaker {turn.speaker} says : {turn.text}"


@dataclass
class _Conversation:
    """One conversation's library instance and what its ingestion found."""

    handle: LibraryHandle
    recorder: RecordingLLM
    details: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _TurnOutcome:
    events: list[CallEvent]
    log: list[tuple[str, str]]
    crash: BaseException | None


class AMem(SystemBase):
    """A-Mem behind the MemorySystem protocol (`a-mem` on PyPI; see docs/systems/amem.md)."""

    packages = ("a-mem", "chromadb", "openai")

    def __init__(
        self,
        *,
        name: str = "amem",
        k: int = 10,
        query: str = "keywords",
        temperature: float | None = 0.0,
        context: SystemContext,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"amem: k (notes retrieved per question) must be an integer >= 1, got {k!r}")
        if query not in _QUERIES:
            raise ValueError(f"amem: query must be one of {', '.join(_QUERIES)}, not {query!r}")
        if temperature is not None and (
            isinstance(temperature, bool) or not isinstance(temperature, int | float)
        ):
            raise ValueError(f"amem: temperature must be a number or null, got {temperature!r}")
        super().__init__()
        self.name = name
        self.temperature = None if temperature is None else float(temperature)
        """Every library call's temperature: 0 as in the A-Mem* rerun of the Mem0 paper; None keeps the
        library's own 1.0 for its analysis, evolution and keyword prompts."""
        self.k = k
        self.query = query
        self.context = context
        self.bridge = LLMBridge(context.client, workers=_WORKERS)
        self._conversations: dict[str, _Conversation] = {}
        self._locks = ConversationLocks()

    @contextlib.asynccontextmanager
    async def _scope(self, sid: str, stage: str) -> AsyncIterator[None]:
        """The bridge scope of one library call; the wait for the route (another question of the same
        conversation holding it) is queueing, not search time."""
        queued = time.perf_counter()
        async with self.bridge.scope(sid, stage=stage):
            timing.add_wait(time.perf_counter() - queued)
            yield

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return amem_cost_plan(method, dataset, n_questions)

    def ingest_units(self, conversation: Conversation) -> int:
        """Progress is reported per turn (one note each)."""
        return len(conversation.turns)

    # ---- state --------------------------------------------------------------------------------------

    @classmethod
    def saved_memories(cls, state_dir: Path, sample_id: str) -> list[SavedStore] | None:
        """The conversation's notes (one shared store), from the notes.jsonl the ingest writes for reading."""
        folder = _folder(state_dir, sample_id)
        if not (folder / _NOTES).is_file():
            return []
        memories = tuple(
            MemoryRecord(str(r["id"]), str(r["content"]), "shared", str(r["timestamp"]), str(r["timestamp"]))
            for r in read_jsonl(folder / _NOTES)
        )
        return [SavedStore("shared", "amem", _marker_in(folder).written() is not None, memories)]

    def state_path(self, sample_id: str) -> Path:
        return _folder(self.context.state_dir, sample_id)

    def _marker(self, sample_id: str) -> DoneMarker:
        return _marker_in(self.state_path(sample_id))

    def _done(self, conversation: Conversation) -> dict[str, Any] | None:
        """The done marker's contents when it stands for this conversation as it is now."""
        return self._marker(conversation.sample_id).read(self._fingerprint(conversation))

    def _fingerprint(self, conversation: Conversation) -> str:
        return _fingerprint(conversation, self.temperature)

    def _endpoints(self, sample_id: str) -> BridgeEndpoints:
        return BridgeEndpoints(
            base_url=self.bridge.base_url(sample_id),
            api_key=self.bridge.api_key,
            model=self.bridge.model,
            embedding_model=self.bridge.embedding_model,
        )

    async def _open(self, conversation: Conversation, *, fresh: bool) -> _Conversation:
        sid = conversation.sample_id
        old = self._conversations.pop(sid, None)
        if old is not None:
            old.handle.close()
        recorder = RecordingLLM(temperature=self.temperature)
        handle = await self.bridge.run_blocking(
            open_library,
            self.state_path(sid),
            self._endpoints(sid),
            fresh=fresh,
            recorder=recorder,
        )
        state = _Conversation(handle=handle, recorder=recorder)
        self._conversations[sid] = state
        return state

    # ---- ingest -------------------------------------------------------------------------------------

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """One note per turn, in order; or, if a done marker stands for this conversation, its notes as
        they were stored (nothing is asked again)."""
        await self.bridge.start()
        sid = conversation.sample_id
        async with self._locks(sid):
            done = self._done(conversation)
            if done is not None:
                state = self._conversations.get(sid) or await self._open(conversation, fresh=False)
                state.details = {k: int(v) for k, v in (done.get("details") or {}).items()}
                return IngestReport(
                    sid, memory_tokens=done.get("memory_tokens"), failures=state.details.get("failed_steps", 0),
                    details=state.details, restored=True,
                )  # fmt: skip
            self._marker(sid).withdraw()
            state = await self._open(conversation, fresh=True)
            failures = 0
            lost: Counter[str] = Counter()
            dated = [(t, s.date_text) for s in conversation.sessions for t in s.turns]
            ids = note_ids([t.dia_id for t, _ in dated])
            async with self._scope(sid, "amem_ingest"):
                for index, ((turn, date), note_id) in enumerate(zip(dated, ids, strict=True)):
                    outcome = await self.bridge.run_blocking(
                        _add_note, state, note_id, note_content(turn), date
                    )
                    rows = self._turn_failures(sid, index, turn, outcome)
                    failures += len(rows)
                    self.failures.extend(rows)
                    if outcome.crash is not None:
                        lost[turn.speaker] += 1
                    report_ingested(1)
            notes = await self.bridge.run_blocking(_all_notes, state.handle)
            memory_tokens = count_tokens(note_tokens_text(notes))
            evolutions = int(getattr(state.handle.system, "evo_cnt", 0))
            state.details = _details(conversation, notes, state.recorder, lost, failures, evolutions)
            self._save(conversation, notes, memory_tokens, state.details)
        return IngestReport(sid, memory_tokens=memory_tokens, failures=failures, details=state.details)

    def _turn_failures(self, sid: str, index: int, turn: Turn, outcome: _TurnOutcome) -> list[StepFailure]:
        """The failed steps of one `add_note`: each failed LLM or embedding call once; when no failed call
        explains what went wrong, the library's own WARNING+ log lines and a crash of `add_note` (the note
        lost)."""

        def row(stage: str, kind: FailureKind, message: str) -> StepFailure:
            return StepFailure(
                system=self.name, sample_id=sid, stage=stage, kind=kind, message=message,
                speaker=turn.speaker, pair_index=index, dia_ids=(turn.dia_id,),
            )  # fmt: skip

        lost = " (add_note failed: the note was not stored)" if outcome.crash is not None else ""
        called = [e for e in outcome.events if e.kind is not None]
        rows = [row(e.step, e.kind or "unknown", e.message + lost) for e in called]
        if not called:
            for level, message in outcome.log:
                rows.append(row(_log_stage(message), "library_error", f"{level}: {message}"[:500]))
            if outcome.crash is not None:
                exc = outcome.crash
                rows.append(row("add_note", failure_kind(exc), f"{type(exc).__name__}: {exc}{lost}"[:500]))
        return rows

    def _save(
        self, conversation: Conversation, notes: list[Note], memory_tokens: int, details: dict[str, int]
    ) -> None:
        folder = self.state_path(conversation.sample_id)
        rows = [json.dumps(n.__dict__, ensure_ascii=False) for n in sorted(notes, key=lambda n: n.id)]
        atomic_write(folder / _NOTES, "".join(r + "\n" for r in rows))  # for reading, not for resume
        meta = {"memory_tokens": memory_tokens, "details": details}
        self._marker(conversation.sample_id).write(self._fingerprint(conversation), meta)  # last

    # ---- retrieve -----------------------------------------------------------------------------------

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """The library's related-notes walk over the question's keywords (or the question), as notes."""
        await self.bridge.start()
        sid = conversation.sample_id
        state = self._conversations.get(sid)
        if state is None:
            async with self._locks(sid):
                state = self._conversations.get(sid)
                if state is None:
                    if self._done(conversation) is None:
                        raise RuntimeError(f"amem: conversation {sid} was not ingested")
                    state = await self._open(conversation, fresh=False)
        with measure() as t:
            async with self._scope(sid, "amem_search"):
                notes, events = await self.bridge.run_blocking(
                    _search, state, question.question, self.k, self.query
                )
        for event in events:
            if event.kind is not None:
                self.failures.append(
                    StepFailure(
                        system=self.name,
                        sample_id=sid,
                        stage=event.step,
                        kind=event.kind,
                        message=event.message,
                        qid=question.qid,
                    )  # fmt: skip
                )
        text = render_notes(notes)
        dia_ids = tuple(dict.fromkeys(n.id.split("#", 1)[0] for n in notes))
        return RetrievedContext(
            kind="notes",
            text=text,
            tokens=count_tokens(text),
            source_dia_ids=dia_ids,
            search_latency_s=t.latency_s,
            local_search_s=t.local_s,
            items=len(notes),
        )

    async def aclose(self) -> None:
        for state in self._conversations.values():
            state.handle.close()
        self._conversations.clear()
        await self.bridge.aclose()


# ---- worker-thread functions (the library is sync) ---------------------------------------------------


def _add_note(state: _Conversation, note_id: str, content: str, timestamp: str) -> _TurnOutcome:
    crash: BaseException | None = None
    with LIBRARY_LOG.capture() as log:
        try:
            state.handle.system.add_note(content, time=timestamp, id=note_id)
        except Exception as exc:  # the library let one through: the note is lost, the ingestion goes on
            crash = exc
    records = [(logging.getLevelName(r.level), r.message) for r in log]
    return _TurnOutcome(events=state.recorder.drain(), log=records, crash=crash)


def _search(
    state: _Conversation, question: str, k: int, query_mode: str
) -> tuple[list[Note], list[CallEvent]]:
    query = question
    events: list[CallEvent] = []
    if query_mode == "keywords":
        recorder = state.recorder
        try:
            reply = recorder.get_completion(keywords_prompt(question), response_format=KEYWORDS_FORMAT)
        except Exception:  # recorded by the recorder: search with the question, as nothing else is left
            reply = None
        events = recorder.drain()
        if reply is not None:
            parsed, _ok = parse_keywords(reply)
            query = parsed or question
    notes = walk_related(state.handle.system, query, k)
    return notes, events + state.recorder.drain()


def _all_notes(handle: LibraryHandle) -> list[Note]:
    return [note_from_metadata(m) for m in handle.all_notes()]


def _log_stage(message: str) -> str:
    lowered = message.lower()
    if "evolution" in lowered or "neighbor" in lowered:
        return "evolution"
    return "library"


def _details(
    conversation: Conversation,
    notes: list[Note],
    recorder: RecordingLLM,
    lost: Counter[str],
    failures: int,
    evolutions: int,
) -> dict[str, int]:
    """Counts for ingest.jsonl: notes stored (in all and per speaker), their links, the library's calls."""
    speaker_of = {t.dia_id: t.speaker for t in conversation.turns}
    per_speaker = Counter(speaker_of.get(n.id.split("#", 1)[0], "?") for n in notes)
    details: dict[str, int] = {
        "turns": len(conversation.turns),
        "notes": len(notes),
        "notes_lost": sum(lost.values()),
        "notes_with_keywords": sum(1 for n in notes if n.keywords),
        "links": sum(len(n.links) for n in notes),
        "evolutions": evolutions,
        "failed_steps": failures,
    }
    for speaker in conversation.speakers:
        details[f"notes.{speaker}"] = per_speaker.get(speaker, 0)
    for step, calls in sorted(recorder.calls.items()):
        details[f"calls.{step}"] = calls
    return details


def _fingerprint(conversation: Conversation, temperature: float | None) -> str:
    settings: dict[str, object] = {"note_format": note_content.__name__}
    if temperature is not None:  # notes written at the library's own temperature keep their old print
        settings["temperature"] = temperature
    return conversation.fingerprint(settings)
