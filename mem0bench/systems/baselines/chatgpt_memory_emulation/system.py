"""An EMULATION of ChatGPT's saved memories, not OpenAI's product (ChatGPT's memory has no API).

The Mem0 paper's OpenAI baseline fed LOCOMO's sessions to ChatGPT and copied the saved memories it made by
hand. Three ways to stand in for it (`style`, `memories_file`):

- `style=reference` (default), the paper's procedure with the harness's answer model in ChatGPT's part:
  after each session, the whole session (both speakers, '(date) Speaker: text' lines) goes out with one
  fixed request to write memory entries for each user with the timestamp; one memory list per
  conversation; at question time every entry goes into one block. No dates added by the harness, no date
  rule, no cap (the paper's 4,437 tokens is what its memories came to, not a limit).
- `style=dated`, our earlier variant (an option, labelled): one call per speaker per session with our own
  prompt (absolute dates demanded, at most `max_notes_per_session` notes), the session date attached to
  every note by the harness, the context capped at `max_context_tokens` (4,437), oldest dropped first.
- `memories_file=DIR`: memories exported from real ChatGPT, one text file per conversation read whole
  (as the paper's openai/predict.py did); no LLM call at ingest. This is the paper's actual method.

What it cannot reproduce: ChatGPT's own memory policy (which facts it chose to save, how it merged or
forgot them), its model, and its prompt. Every result row carries the system's name,
`chatgpt_memory_emulation`, so it is never read as a figure of OpenAI's product.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mem0bench.common.text import one_line
from mem0bench.data.model import Conversation, Dataset, Question, Session
from mem0bench.llm.types import TRANSIENT_KINDS, LLMCallError, ReplyShapeError
from mem0bench.memory.base import (
    IngestReport,
    RetrievedContext,
    SavedStore,
    StepFailure,
    SystemBase,
    SystemContext,
)
from mem0bench.memory.costs import INSTRUCTION_TOKENS, CostPlan, MethodConfig, PlanLine
from mem0bench.memory.ingest_progress import report_ingested
from mem0bench.memory.saved_state import ConversationLocks
from mem0bench.memory.stream import message_pairs
from mem0bench.prompts.saved_notes import (
    MEMORIES_SPEC,
    NOTES_SPEC,
    build_memory_messages,
    build_notes_messages,
    parse_memories,
    parse_notes,
    session_lines,
)
from mem0bench.systems.baselines.chatgpt_memory_emulation.exported import exported_memories, memories_folder
from mem0bench.systems.baselines.chatgpt_memory_emulation.notes import (
    CappedNotes,
    Note,
    cap_notes,
    newest_within,
    render_memories,
    render_notes,
)
from mem0bench.systems.baselines.chatgpt_memory_emulation.store import NoteStore, SavedState
from mem0bench.tokens import count_tokens

__all__ = ["PAPER_OPENAI_CONTEXT_TOKENS", "STYLES", "ChatGPTMemoryEmulation"]

PAPER_OPENAI_CONTEXT_TOKENS = 4437
"""The Mem0 paper's context size for its OpenAI (ChatGPT memory) baseline, in tokens per question."""
STEP = "saved_notes"
"""The ingestion step's name in failures.jsonl."""
STYLES = ("reference", "dated")
"""`reference`: the paper's procedure (default); `dated`: our per-speaker dated notes under a cap."""
DATED_MAX_NOTES = 8

# The dry run's round figures for what the replies decide (stated in its plan lines).
NOTES_PER_CALL = 4.0
NOTE_TOKENS = 25


@dataclass(frozen=True)
class _Context:
    capped: CappedNotes
    dia_ids: tuple[str, ...]
    items: int


class ChatGPTMemoryEmulation(SystemBase):
    """ChatGPT-style saved notes per speaker, written by the answer model after each session (an emulation)."""

    packages: tuple[str, ...] = ()
    """No third-party library: the notes are written through the harness's own LLM client."""

    @classmethod
    def saved_memories(cls, state_dir: Path, sample_id: str) -> list[SavedStore] | None:
        """The notes the system saved, one store per speaker they are about."""
        return NoteStore(state_dir).stores(sample_id)

    def __init__(
        self,
        *,
        name: str = "chatgpt_memory_emulation",
        style: str = "reference",
        max_context_tokens: int | None = None,
        max_notes_per_session: int | None = None,
        memories_file: str | None = None,
        context: SystemContext,
    ) -> None:
        if style not in STYLES:
            raise ValueError(
                f"chatgpt_memory_emulation: style must be one of {', '.join(STYLES)}, got {style!r}"
            )
        if style == "reference" and (max_context_tokens or max_notes_per_session is not None):
            raise ValueError(
                "chatgpt_memory_emulation: max_context_tokens and max_notes_per_session belong to style=dated "
                "(the reference has no cap; eval.context_tokens_max cuts any system's context)"
            )
        if style == "dated":
            max_context_tokens = (
                PAPER_OPENAI_CONTEXT_TOKENS if max_context_tokens is None else max_context_tokens
            )
            max_notes_per_session = (
                DATED_MAX_NOTES if max_notes_per_session is None else max_notes_per_session
            )
        if max_context_tokens is not None and (
            isinstance(max_context_tokens, bool)
            or not isinstance(max_context_tokens, int)
            or max_context_tokens < 0
        ):
            raise ValueError(
                "chatgpt_memory_emulation: max_context_tokens must be an integer >= 0 (0 or null: no cap), "
                f"got {max_context_tokens!r}"
            )
        if max_notes_per_session is None:
            max_notes_per_session = 0  # the reference: no limit (never asked, never cut)
        elif isinstance(max_notes_per_session, bool) or not isinstance(max_notes_per_session, int):
            raise ValueError(
                f"chatgpt_memory_emulation: max_notes_per_session must be an integer, got {max_notes_per_session!r}"
            )
        elif max_notes_per_session < 1:
            raise ValueError(
                f"chatgpt_memory_emulation: max_notes_per_session must be >= 1, got {max_notes_per_session}"
            )
        super().__init__()
        self.name = name
        self.style = style
        self.memories_dir = memories_folder(memories_file) if memories_file else None
        self.max_context_tokens = max_context_tokens or None
        self.max_notes_per_session = max_notes_per_session
        self.context = context
        self.store = NoteStore(context.state_dir)
        self._contexts: dict[str, _Context] = {}
        self._locks = ConversationLocks()

    # ------------------------------------------------------------------ plan

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """style=dated: one call per session per speaker; each shows the session, the speaker's notes so far
        (capped) and returns ~4 notes of ~25 tokens. style=reference: one call per session showing the
        session and every entry so far, returning ~4 entries per speaker. memories_file: no call. (The
        note figures are assumed; the real ones are in ingest.jsonl's details.)"""
        if method.get("memories_file"):
            return CostPlan(context_tokens=float(PAPER_OPENAI_CONTEXT_TOKENS), lines=[], embeds_queries=False)
        if method.get("style", "reference") == "reference":
            return cls._reference_plan(dataset)
        cap = method.get("max_context_tokens") or None
        if method.get("max_context_tokens") is None:
            cap = PAPER_OPENAI_CONTEXT_TOKENS
        calls = prompt = completion = 0.0
        context_tokens = 0.0
        for conversation in dataset.conversations:
            sessions = [s for s in conversation.sessions if s.turns]
            for i, session in enumerate(sessions):
                chat = count_tokens("\n".join(f"{t.speaker}: {t.text}" for t in session.turns))
                for _ in conversation.speakers:
                    shown = i * NOTES_PER_CALL * NOTE_TOKENS
                    shown = min(shown, cap) if cap else shown
                    calls += 1
                    prompt += INSTRUCTION_TOKENS + chat + shown
                    completion += NOTES_PER_CALL * NOTE_TOKENS + 10
            total = len(sessions) * len(conversation.speakers) * NOTES_PER_CALL * NOTE_TOKENS
            context_tokens += min(total, cap) if cap else total
        what = f"saved notes (1 call/session/speaker; assumes {NOTES_PER_CALL:g} notes x {NOTE_TOKENS} tok)"
        mean_context = context_tokens / max(len(dataset.conversations), 1)
        return CostPlan(
            context_tokens=mean_context,
            lines=[PlanLine("ingest", what, calls, prompt, completion)],
            embeds_queries=False,
        )

    @staticmethod
    def _reference_plan(dataset: Dataset) -> CostPlan:
        calls = prompt = completion = context_tokens = 0.0
        for conversation in dataset.conversations:
            sessions = [s for s in conversation.sessions if s.turns]
            per_session = len(conversation.speakers) * NOTES_PER_CALL * NOTE_TOKENS
            for i, session in enumerate(sessions):
                calls += 1
                prompt += INSTRUCTION_TOKENS + count_tokens(
                    "\n".join(session_lines(session.date_text, session.turns))
                )
                prompt += i * per_session
                completion += per_session + 10
            context_tokens += len(sessions) * per_session
        what = f"session memories (1 call/session; assumes {NOTES_PER_CALL:g} entries x {NOTE_TOKENS} tok/speaker)"
        return CostPlan(
            context_tokens=context_tokens / max(len(dataset.conversations), 1),
            lines=[PlanLine("ingest", what, calls, prompt, completion)],
            embeds_queries=False,
        )

    def ingest_units(self, conversation: Conversation) -> int:
        """Message pairs (x speakers for style=dated, whose two streams each report a session's pairs)."""
        pairs = len(message_pairs(conversation))
        return (
            pairs * len(conversation.speakers) if self.style == "dated" and not self.memories_dir else pairs
        )

    # ------------------------------------------------------------------ ingest

    def _settings(self) -> dict[str, object]:
        if self.style == "reference":
            return {"style": "reference"}
        return {  # the dated variant's settings as they always were, so its saved notes stay valid
            "max_context_tokens": self.max_context_tokens,
            "max_notes_per_session": self.max_notes_per_session,
        }

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Write the notes session by session, or load finished ones (or read the exported file)."""
        sid = conversation.sample_id
        if self.memories_dir is not None:
            return self._ingest_exported(conversation)
        async with self._locks(sid):
            print_ = conversation.fingerprint(self._settings())
            state = self.store.load(sid, print_)
            restored = state is not None
            if state is None:
                state, failures = await self._write_notes(conversation)
                transient = any(f.kind in TRANSIENT_KINDS for f in failures)
                self.store.save(sid, state, print_, done=not transient)
            ctx = self._context_of(conversation, state)
            self._contexts[sid] = ctx
        all_text = self._render(state.notes, conversation)
        details: Counter[str] = Counter(state.counts)
        details["sessions"] = sum(1 for s in conversation.sessions if s.turns)
        details["notes"] = len(state.notes)
        if self.style == "dated":
            for speaker in conversation.speakers:
                details[f"notes.{speaker}"] = sum(1 for n in state.notes if n.speaker == speaker)
        details["notes_in_context"] = len(ctx.capped.kept)
        details["dropped_notes"] = ctx.capped.dropped
        return IngestReport(
            sample_id=sid,
            memory_tokens=count_tokens(all_text),
            failures=state.failures,
            details=dict(sorted(details.items())),
            restored=restored,
        )

    def _ingest_exported(self, conversation: Conversation) -> IngestReport:
        assert self.memories_dir is not None
        text = exported_memories(self.memories_dir, conversation)
        tokens = count_tokens(text)
        entries = sum(1 for line in text.splitlines() if line.strip())
        capped = CappedNotes((), 0, text, tokens)
        # Which sessions an exported entry came from is not known: no source turns are claimed.
        self._contexts[conversation.sample_id] = _Context(capped=capped, dia_ids=(), items=entries)
        report_ingested(self.ingest_units(conversation))
        return IngestReport(
            sample_id=conversation.sample_id,
            memory_tokens=tokens,
            failures=0,
            details={"exported_lines": entries},
        )

    def _render(self, notes: Sequence[Note], conversation: Conversation) -> str:
        if self.style == "reference":
            return render_memories(notes)
        return render_notes(notes, conversation.speakers)

    def _context_of(self, conversation: Conversation, state: SavedState) -> _Context:
        if self.style == "reference":  # every entry, one block, no cap
            text = render_memories(state.notes)
            capped = CappedNotes(state.notes, 0, text, count_tokens(text) if text else 0)
        else:
            capped = cap_notes(state.notes, conversation.speakers, self.max_context_tokens)
        if not capped.kept:  # an empty context is empty (the run counts those), not two empty headers
            capped = CappedNotes((), capped.dropped, "", 0)
        sessions = {n.session for n in capped.kept}
        dia_ids = tuple(t.dia_id for s in conversation.sessions if s.index in sessions for t in s.turns)
        return _Context(capped=capped, dia_ids=dia_ids, items=len(capped.kept))

    async def _write_notes(self, conversation: Conversation) -> tuple[SavedState, list[StepFailure]]:
        if self.style == "reference":
            return await self._write_memories(conversation)
        speakers = conversation.speakers
        streams = await asyncio.gather(
            *(self._stream(conversation, person, speakers[1 - i]) for i, person in enumerate(speakers))
        )
        order = {speaker: i for i, speaker in enumerate(speakers)}
        # Oldest first: by session, then speaker order, then the order each note was written in.
        notes = sorted(
            (n for notes, _, _ in streams for n in notes), key=lambda n: (n.session, order[n.speaker])
        )
        failures = [f for _, rows, _ in streams for f in rows]
        counts: Counter[str] = Counter()
        counts["notes_truncated"] = sum(truncated for _, _, truncated in streams)
        for failure in failures:
            counts[f"failures.{failure.stage}"] += 1
        return SavedState(notes=tuple(notes), failures=len(failures), counts=dict(counts)), failures

    async def _write_memories(self, conversation: Conversation) -> tuple[SavedState, list[StepFailure]]:
        """The reference: one memory list, one call per session, each seeing every entry saved so far."""
        pairs = Counter(index for index, _ in message_pairs(conversation))
        notes: list[Note] = []
        failures: list[StepFailure] = []
        for session in conversation.sessions:
            if not session.turns:
                continue
            messages = build_memory_messages(
                lines=session_lines(session.date_text, session.turns), saved=[n.text for n in notes]
            )
            try:
                reply = await self.context.client.structured(messages, MEMORIES_SPEC, stage="ingest")
                new = parse_memories(reply.data)
            except (LLMCallError, ReplyShapeError) as error:
                failures.append(self._failure(conversation, session, None, error))
                self.failures.append(failures[-1])
                new = []
            known = {n.text.lower() for n in notes}
            # The session is kept for provenance only; the text is the model's own, with its own dates.
            notes += [Note("", session.index, session.date_text, t) for t in new if t.lower() not in known]
            report_ingested(pairs[session.index])
        counts: Counter[str] = Counter()
        for failure in failures:
            counts[f"failures.{failure.stage}"] += 1
        return SavedState(notes=tuple(notes), failures=len(failures), counts=dict(counts)), failures

    async def _stream(
        self, conversation: Conversation, person: str, other: str
    ) -> tuple[list[Note], list[StepFailure], int]:
        """One speaker's notes, session by session in order (each call sees the notes before it)."""
        pairs = Counter(index for index, _ in message_pairs(conversation))
        notes: list[Note] = []
        failures: list[StepFailure] = []
        truncated = 0
        for session in conversation.sessions:
            if not session.turns:
                continue
            try:
                new = await self._session_notes(session, person, other, notes)
            except (LLMCallError, ReplyShapeError) as error:
                failures.append(self._failure(conversation, session, person, error))
                self.failures.append(failures[-1])
                new = []
            known = {n.text.lower() for n in notes}
            fresh = [text for text in new if text.lower() not in known]
            truncated += max(len(fresh) - self.max_notes_per_session, 0)
            notes += [
                Note(person, session.index, session.date_text, t) for t in fresh[: self.max_notes_per_session]
            ]
            report_ingested(pairs[session.index])
        return notes, failures, truncated

    async def _session_notes(
        self, session: Session, person: str, other: str, notes: Sequence[Note]
    ) -> list[str]:
        """The new notes the model saves about `person` after `session` (raises when the call fails)."""
        shown = newest_within(notes, [person], self.max_context_tokens)  # what its memory would show
        messages = build_notes_messages(
            person=person,
            other=other,
            session_date=session.date_text,
            turns=session.turns,
            saved=[(n.date, n.text) for n in shown],
            max_notes=self.max_notes_per_session,
        )
        reply = await self.context.client.structured(messages, NOTES_SPEC, stage="ingest")
        return parse_notes(reply.data)

    def _failure(
        self, conversation: Conversation, session: Session, person: str | None, error: Exception
    ) -> StepFailure:
        if isinstance(error, LLMCallError):
            kind, message = error.failure.kind, error.failure.message
        else:  # a reply the client let through unshaped
            kind, message = "malformed", str(error)
        return StepFailure(
            system=self.name,
            sample_id=conversation.sample_id,
            stage=STEP,
            kind=kind,
            message=one_line(f"session {session.index}: {message}"),
            speaker=person,
            dia_ids=tuple(t.dia_id for t in session.turns),
        )

    # ------------------------------------------------------------------ retrieve

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """Every kept note (no search, no ranking: the same context for every question of a conversation)."""
        sid = conversation.sample_id
        ctx = self._contexts.get(sid)
        if ctx is None and self.memories_dir is not None:
            self._ingest_exported(conversation)
            ctx = self._contexts[sid]
        if ctx is None:
            state = self.store.load(sid, conversation.fingerprint(self._settings()))
            if state is None:
                raise RuntimeError(f"{self.name}: conversation {sid} was not ingested")
            ctx = self._contexts[sid] = self._context_of(conversation, state)
        return RetrievedContext(
            kind="notes",
            text=ctx.capped.text,
            tokens=ctx.capped.tokens,
            source_dia_ids=ctx.dia_ids,
            search_latency_s=None,
            items=ctx.items,
        )
