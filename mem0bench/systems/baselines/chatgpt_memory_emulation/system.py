"""An EMULATION of ChatGPT's saved memories, not OpenAI's product (ChatGPT's memory has no API).

The Mem0 paper's OpenAI baseline fed LOCOMO's sessions to ChatGPT and copied the saved memories it made by
hand. Here the harness's own answer model plays ChatGPT's part: after each session it writes short dated
notes about each speaker (third-person facts, as saved memories read), seeing the notes that speaker
already has; the notes are kept across sessions. At question time every note goes into the context,
with no ranking and no search, capped at `max_context_tokens` (default 4,437: the context size the paper
reports for its OpenAI baseline), oldest notes dropped first and counted.

What it cannot reproduce: ChatGPT's own memory policy (which facts it chose to save, how it merged or
forgot them), its model, and its prompt. Every result row carries the system's name,
`chatgpt_memory_emulation`, so it is never read as a figure of OpenAI's product.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mem0bench.common.text import one_line
from mem0bench.data.model import Conversation, Dataset, Question, Session
from mem0bench.llm.types import TRANSIENT_KINDS, LLMCallError, ReplyShapeError
from mem0bench.memory.base import IngestReport, RetrievedContext, StepFailure, SystemBase, SystemContext
from mem0bench.memory.costs import INSTRUCTION_TOKENS, CostPlan, MethodConfig, PlanLine
from mem0bench.memory.ingest_progress import report_ingested
from mem0bench.memory.saved_state import ConversationLocks
from mem0bench.memory.stream import message_pairs
from mem0bench.prompts.saved_notes import NOTES_SPEC, build_notes_messages, parse_notes
from mem0bench.systems.baselines.chatgpt_memory_emulation.notes import (
    CappedNotes,
    Note,
    cap_notes,
    newest_within,
    render_notes,
)
from mem0bench.systems.baselines.chatgpt_memory_emulation.store import NoteStore, SavedState
from mem0bench.tokens import count_tokens

__all__ = ["PAPER_OPENAI_CONTEXT_TOKENS", "ChatGPTMemoryEmulation"]

PAPER_OPENAI_CONTEXT_TOKENS = 4437
"""The Mem0 paper's context size for its OpenAI (ChatGPT memory) baseline, in tokens per question."""
STEP = "saved_notes"
"""The ingestion step's name in failures.jsonl."""

# The dry run's round figures for what the replies decide (stated in its plan lines).
NOTES_PER_CALL = 4.0
NOTE_TOKENS = 25


@dataclass(frozen=True)
class _Context:
    capped: CappedNotes
    dia_ids: tuple[str, ...]


class ChatGPTMemoryEmulation(SystemBase):
    """ChatGPT-style saved notes per speaker, written by the answer model after each session (an emulation)."""

    packages: tuple[str, ...] = ()
    """No third-party library: the notes are written through the harness's own LLM client."""

    def __init__(
        self,
        *,
        name: str = "chatgpt_memory_emulation",
        max_context_tokens: int | None = PAPER_OPENAI_CONTEXT_TOKENS,
        max_notes_per_session: int = 8,
        context: SystemContext,
    ) -> None:
        if max_context_tokens is not None and (
            isinstance(max_context_tokens, bool)
            or not isinstance(max_context_tokens, int)
            or max_context_tokens < 0
        ):
            raise ValueError(
                "chatgpt_memory_emulation: max_context_tokens must be an integer >= 0 (0 or null: no cap), "
                f"got {max_context_tokens!r}"
            )
        if isinstance(max_notes_per_session, bool) or not isinstance(max_notes_per_session, int):
            raise ValueError(
                f"chatgpt_memory_emulation: max_notes_per_session must be an integer, got {max_notes_per_session!r}"
            )
        if max_notes_per_session < 1:
            raise ValueError(
                f"chatgpt_memory_emulation: max_notes_per_session must be >= 1, got {max_notes_per_session}"
            )
        super().__init__()
        self.name = name
        self.max_context_tokens = max_context_tokens or None
        self.max_notes_per_session = max_notes_per_session
        self.context = context
        self.store = NoteStore(context.state_dir)
        self._contexts: dict[str, _Context] = {}
        self._locks = ConversationLocks()

    # ------------------------------------------------------------------ plan

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """One call per session per speaker; each shows the session, the speaker's notes so far (capped)
        and returns ~4 notes of ~25 tokens (assumed; the real figures are in ingest.jsonl's details)."""
        cap = method.get("max_context_tokens", PAPER_OPENAI_CONTEXT_TOKENS) or None
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

    def ingest_units(self, conversation: Conversation) -> int:
        """Message pairs x speakers: each speaker's stream reports a session's pairs when its notes are in."""
        return len(message_pairs(conversation)) * len(conversation.speakers)

    # ------------------------------------------------------------------ ingest

    def _settings(self) -> dict[str, object]:
        return {
            "max_context_tokens": self.max_context_tokens,
            "max_notes_per_session": self.max_notes_per_session,
        }

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Write the notes session by session (both speakers' streams at once), or load finished ones."""
        sid = conversation.sample_id
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
        all_text = render_notes(state.notes, conversation.speakers)
        details: Counter[str] = Counter(state.counts)
        details["sessions"] = sum(1 for s in conversation.sessions if s.turns)
        details["notes"] = len(state.notes)
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

    def _context_of(self, conversation: Conversation, state: SavedState) -> _Context:
        capped = cap_notes(state.notes, conversation.speakers, self.max_context_tokens)
        if not capped.kept:  # an empty context is empty (the run counts those), not two empty headers
            capped = CappedNotes((), capped.dropped, "", 0)
        sessions = {n.session for n in capped.kept}
        dia_ids = tuple(t.dia_id for s in conversation.sessions if s.index in sessions for t in s.turns)
        return _Context(capped=capped, dia_ids=dia_ids)

    async def _write_notes(self, conversation: Conversation) -> tuple[SavedState, list[StepFailure]]:
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
        self, conversation: Conversation, session: Session, person: str, error: Exception
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
            items=len(ctx.capped.kept),
        )
