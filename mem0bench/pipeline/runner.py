"""Run one experiment end to end: ingest, answer, judge, aggregate, in one run directory.

Everything independent overlaps: conversations ingest at once (each system runs its own streams in
parallel), and a conversation's questions are answered and judged as soon as its ingestion is done. The
LLM client's concurrency limit is the throttle; conversations in flight are bounded too (`in_flight`, twice
the client's concurrency up to 64: all of LOCOMO's ten at once), and a conversation's in-memory store is released
once its questions are judged, so a run over 500 LongMemEval haystacks holds a few dozen stores, not 500.

Crash safety (a kill at any moment loses nothing that was paid for):

* Rows are appended as they complete (one `write(2)` per row; a torn last line is cut off on resume), and
  every LLM reply is in the response cache before the code that asked for it sees it. A rerun of the same
  command in the same folder reuses every finished row (`resume`) and replays the rest through the cache.
* Ingestion is all or nothing per conversation, as far as the record goes: the runner trusts a system's
  saved state for a conversation only when ingest.jsonl says its ingestion finished with nothing left to
  retry. Otherwise it clears `state/<sample_id>/` and ingests the conversation again from its start (free
  from the cache), so the ingest row always accounts for the whole conversation, never for the part that
  happened to run after a kill.
* Every paid reply is appended to usage.jsonl as it comes, and usage.json (what each process paid) is
  saved every few seconds and at the end (`rundir.usage`): the next command rebuilds a killed process's
  spend from the journal, so it is not forgotten, even mid-ingestion.

Failures never stop the run unless run.strict=true; how they are recorded and counted is in `failures`.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import os
import shutil
from collections import Counter
from dataclasses import replace

from mem0bench.common.errors import ConfigurationError, exception_line, leading_error
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.reachability import ServerUnreachable
from mem0bench.llm.slots import ingest_priority
from mem0bench.llm.timing import measure
from mem0bench.llm.types import TRANSIENT_KINDS, FailureKind, LLMCallError
from mem0bench.memory.base import (
    MemorySystem,
    StepFailure,
    expects_empty_context,
    ingest_units_of,
    release_conversation,
)
from mem0bench.memory.ingest_progress import listening, timing_chains
from mem0bench.pipeline.answer import answer_question
from mem0bench.pipeline.attempt import Attempt, RunOptions
from mem0bench.pipeline.failures import (
    RunAborted,
    SystemCrashed,
    SystemFailures,
    ingest_step_failure,
    search_step_failure,
)
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.latency import LATENCY_FILE, PassItem, latency_plan, run_pass, standing_latency
from mem0bench.pipeline.outcome import RunOutcome
from mem0bench.pipeline.stage_timing import StageTimes
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.records import AnswerRecord, FailureRecord, IngestRecord, LatencyRecord
from mem0bench.rundir.resume import answer_stands
from mem0bench.rundir.storage import storage_error_in
from mem0bench.systems.external.failure_kinds import bridged_kind
from mem0bench.tokens import encoding

__all__ = ["RunAborted", "RunOptions", "RunOutcome", "Runner"]

# Which of several errors raised at once a run reports: the one that says why it stopped.
_STOPPING = (RunAborted, ServerUnreachable, ConfigurationError, SystemCrashed)
MIN_IN_FLIGHT = 8
"""Conversations in flight at least; else twice the client's concurrency (every slot busy with a stream)."""
MAX_IN_FLIGHT = 64
"""Conversations in flight at most, whatever `llm.max_concurrency` is: the memory a run holds is the stores
in flight (issue 37's growth figures were measured at 64), and the concurrency is a speed setting that must
not raise it. 64 conversations keep 64 or more slots busy (each has two speaker streams, and runs ahead)."""


def in_flight(max_concurrency: int) -> int:
    """How many conversations ingest and answer at once: enough to keep every request slot busy (a
    conversation's streams wait on each other's calls), few enough that the memory a run holds does not
    grow with the number of conversations, nor with the client's concurrency (`MAX_IN_FLIGHT`)."""
    return min(MAX_IN_FLIGHT, max(MIN_IN_FLIGHT, 2 * max_concurrency))


class Runner:
    """A full run of one experiment: ingest, answer and judge every question in scope, then aggregate."""

    def __init__(
        self,
        *,
        dataset: Dataset,
        questions: dict[str, list[Question]],
        system: MemorySystem,
        client: LLMClient,
        rundir: RunDirectory,
        judge: JudgeSettings,
        options: RunOptions,
        method_name: str,
    ):
        self.dataset = dataset
        self.system = system
        self.options = options
        # Ingest progress counts the units a system reports (message pairs per stream), not conversations.
        self.ingest_units = {c.sample_id: ingest_units_of(system, c) for c in dataset.conversations}
        self.attempt = Attempt(
            rundir=rundir, client=client, judge=judge, options=options, method_name=method_name,
            questions=questions, ingest_units=sum(self.ingest_units.values()),
        )  # fmt: skip
        self.system_failures = SystemFailures(system)
        self.times = StageTimes()
        """Each stage's wall time and calls in this process (run.json `timing`)."""

    # -- stages --------------------------------------------------------------------------------------
    def _ingest_failed(self, sid: str, kind: FailureKind, message: str, units_left: int) -> str:
        """A conversation whose ingestion stopped on a failed call: recorded, and why (for its questions)."""
        reason = f"ingest:{kind}: conversation {sid} could not be ingested: {message}"
        self._append_ingest(IngestRecord(sid, session=self.attempt.id, failed=reason, kind=kind))
        self.attempt.failures.record(FailureRecord("ingest", kind, message, conversation=sid))
        self.attempt.progress.advance("ingest", units_left)
        return reason

    async def _ingest(self, conversation: Conversation) -> str | None:
        """Ingest (or restore) one conversation; None when done, else why it could not be ingested."""
        sid = conversation.sample_id
        previous = self.attempt.ingests.get(sid)
        final = previous is not None and previous.is_final
        if final and self.options.retry_failed and previous is not None and previous.has_failures:
            final = False  # run.retry_failed=true: ingest again; the failed steps are asked afresh
        if not final:
            # No record that this conversation's ingestion finished cleanly: whatever state a killed or
            # failed attempt left is not trusted; ingestion starts over (the cache makes it free).
            self._clear_state(sid)
        units = self.ingest_units.get(sid, 1)
        reported = [0]

        def on_units(n: int) -> None:
            n = min(n, units - reported[0])  # a system reporting more than it announced is capped
            reported[0] += n
            self.attempt.progress.advance("ingest", n)

        try:
            # Its calls queue for a slot ahead of answers and judgements, the most ingest left first (llm.slots).
            chains = timing_chains(self.times.chain)
            with (
                self.times.stage("ingest"),
                chains,
                measure() as scope,
                listening(on_units),
                ingest_priority(lambda: units - reported[0]),
            ):
                report = await self.system.ingest(conversation)
        except LLMCallError as exc:
            return self._ingest_failed(sid, exc.failure.kind, exc.failure.message, units - reported[0])
        except (ConfigurationError, ServerUnreachable, RunAborted):
            raise
        except Exception as exc:
            if (isinstance(exc, OSError) and exc.filename) or storage_error_in(exc) is not None:
                raise  # a file the run could not write (a full disk): not the system's code
            kind = bridged_kind(exc)
            if kind is not None:  # a library's SDK error over a call our client failed for good
                return self._ingest_failed(sid, kind, exception_line(exc), units - reported[0])
            where = exception_line(exc)
            raise SystemCrashed(
                f"the {self.attempt.method_name} system raised {where} while ingesting conversation {sid}: "
                "a bug in the system or its library, not a failed LLM call"
            ) from exc
        steps = self.system_failures.take(lambda r: r.sample_id == sid and not r.qid)
        for row in steps:
            self.attempt.failures.record(ingest_step_failure(row, sid))
        if not final or (scope.usage and not report.restored):
            # This attempt is the record: it ingested the whole conversation (or the system chose to). A
            # restore is not, even when reopening made (cached) calls: the attempt that built the state
            # keeps its record, and with it its open failures.
            kinds = Counter(r.kind for r in steps)
            self._append_ingest(
                IngestRecord(
                    sid,
                    session=self.attempt.id,
                    memory_tokens=report.memory_tokens,
                    failures=report.failures,
                    failure_kinds=dict(kinds),
                    retry=any(k in TRANSIENT_KINDS for k in kinds),
                    details=report.details,
                    usage=scope.usage,
                )
            )
            self.attempt.usage.save_if_due()
        # What the system did not report (restored streams, systems that report nothing) is done now.
        self.attempt.progress.advance("ingest", units - reported[0])
        return None

    def _append_ingest(self, record: IngestRecord) -> None:
        self.attempt.rundir.appender("ingest.jsonl").append(record.to_dict())
        self.attempt.ingests[record.sample_id] = record

    def _clear_state(self, sample_id: str) -> None:
        if not sample_id or sample_id in (".", "..") or "/" in sample_id or os.sep in sample_id:
            return
        shutil.rmtree(self.attempt.rundir.state_dir / sample_id, ignore_errors=True)

    def _ingest_attempt(self, sample_id: str) -> str | None:
        """The attempt of the ingest row that stands for a conversation (its memory answers questions)."""
        ingest = self.attempt.ingests.get(sample_id)
        return ingest.session if ingest is not None else None

    def _needs_answer(self, done: AnswerRecord | None, sample_id: str) -> bool:
        ingest = self.attempt.ingests.get(sample_id)
        return not answer_stands(done, ingest, retry_failed=self.options.retry_failed)

    async def _answer(
        self, conversation: Conversation, question: Question, not_ingested: str | None
    ) -> AnswerRecord:
        sid = conversation.sample_id
        done = self.attempt.answers.get(question.qid)
        if done is not None and not self._needs_answer(done, sid):
            self.attempt.progress.advance("answer")
            return done
        ingest_attempt = self._ingest_attempt(sid)
        if not_ingested is not None:
            record = _failed_answer(conversation, question, not_ingested, self.attempt.id, ingest_attempt)
            self._append_answer(record)
            self.attempt.progress.advance("answer")
            return record
        with self.times.stage("answer"):
            record = await answer_question(
                self.system,
                self.attempt.client,
                conversation,
                question,
                prompt=self.options.answer_prompt,
                template=self.options.answer_file,
                context_tokens_max=self.options.context_tokens_max,
            )
        degraded = self.system_failures.take(lambda r: r.qid == question.qid)
        record = replace(
            record,
            session=self.attempt.id,
            ingest_session=ingest_attempt,
            degraded=tuple(f"{r.kind}: {r.message}" for r in degraded),
        )
        self._append_answer(record)
        self.attempt.usage.save_if_due()
        self.attempt.progress.advance("answer")
        for row in degraded:
            self.attempt.failures.record(search_step_failure(row, sid, question.qid))
        if record.failure:
            self.attempt.failures.record(
                FailureRecord(
                    record.failed_stage or "answer", record.failure_kind, record.failure, sid, question.qid
                )
            )
        return record

    def _append_answer(self, record: AnswerRecord) -> None:
        self.attempt.rundir.appender("answers.jsonl").append(record.to_dict())
        self.attempt.answers[record.qid] = record

    async def _question(
        self, conversation: Conversation, question: Question, not_ingested: str | None
    ) -> None:
        answer = await self._answer(conversation, question, not_ingested)
        if answer.failure:
            # No prediction: nothing to judge. It scores as WRONG and is counted under failures.
            self.attempt.progress.advance("judge", self.attempt.labels_per_answer)
            return
        with self.times.stage("judge"):
            await self.attempt.judge_all(answer)

    async def _conversation(self, conversation: Conversation) -> None:
        not_ingested = await self._ingest(conversation)
        # The run's first token count loads tiktoken's encoding (~0.27 s with the event loop blocked). Made
        # here, before the first question's search of the process, it never lands inside a timed search
        # (the inline ones of every conversation, and the isolated pass after them), even when this
        # process's ingest counted nothing (a resumed run, a system whose ingest makes no embedding call).
        # Free once loaded; a system that retrieves nothing by design counts nothing, and never loads it.
        if not expects_empty_context(self.system):
            encoding()
        qs = self.attempt.questions[conversation.sample_id]
        await asyncio.gather(*(self._question(conversation, q, not_ingested) for q in qs))
        # Answered and judged: the store is on disk; the isolated latency pass loads it again if asked.
        release_conversation(self.system, conversation.sample_id)

    async def _bounded(self, window: asyncio.Semaphore, conversation: Conversation) -> None:
        async with window:
            await self._conversation(conversation)

    async def _latency_pass(self) -> None:
        """`eval.latency=isolated`: time the answered questions' retrievals again, live, a few at once
        (see `pipeline.latency`). Runs after every other call of the run has returned."""
        options = self.options
        if options.latency != "isolated":
            return
        answers = self.attempt.answers
        rundir = self.attempt.rundir
        questions = [
            q for c in self.dataset.conversations for q in self.attempt.questions.get(c.sample_id, [])
        ]
        plan = latency_plan(
            questions,
            answers,
            standing_latency(rundir, answers),
            limit=options.latency_questions,
            seed=options.latency_seed,
            remeasure=options.remeasure_latency,
        )
        conversations = {c.sample_id: c for c in self.dataset.conversations}
        order = {sid: n for n, sid in enumerate(dict.fromkeys(q.sample_id for q in plan))}
        # A conversation's questions one after another: each store is loaded once, then released.
        position = {sid: n for n, sid in enumerate(conversations)}
        plan.sort(key=lambda q: position[q.sample_id])
        progress = self.attempt.progress
        if plan:
            progress.add_stage("latency", len(plan))
        # One conversation after another (the plan's order within each), so few stores are loaded at once:
        # a conversation's store is released when its last question is timed.
        by_conversation = sorted(plan, key=lambda q: order[q.sample_id])
        left = collections.Counter(q.sample_id for q in by_conversation)
        conversation_of = {q.qid: q.sample_id for q in by_conversation}

        def keep(record: LatencyRecord) -> None:
            # A step the system got past is already on record for this question's answer.
            self.system_failures.take(functools.partial(_asked_by, record.qid))
            rundir.appender(LATENCY_FILE).append(record.to_dict())
            self.attempt.usage.save_if_due()
            progress.advance("latency")
            sid = conversation_of[record.qid]
            left[sid] -= 1
            if left[sid] == 0:
                release_conversation(self.system, sid)

        items = [PassItem(conversations[q.sample_id], q, answers[q.qid]) for q in by_conversation]
        # Nothing else of the run is in flight; a few questions at once only where no figure feels it.
        with self.times.stage("latency"):
            await run_pass(
                self.system, items, session=self.attempt.id,
                max_concurrency=self.attempt.client.settings.max_concurrency, record=keep,
            )  # fmt: skip

    async def run(self) -> RunOutcome:
        try:
            window = asyncio.Semaphore(in_flight(self.attempt.client.settings.max_concurrency))
            async with asyncio.TaskGroup() as group:
                for conversation in self.dataset.conversations:
                    group.create_task(self._bounded(window, conversation))
            await self._latency_pass()  # after every answer and judgement: nothing else in flight
        except BaseExceptionGroup as group:
            # The task group wraps whatever a conversation raised: hand on the error itself (one line
            # for the user), the errors that stop a run first.
            leading = leading_error(group, prefer=_STOPPING)
            raise leading from leading.__cause__
        finally:
            self.attempt.close()
        return self.attempt.finish()


def _asked_by(qid: str, row: StepFailure) -> bool:
    return row.qid == qid


def _failed_answer(
    conversation: Conversation, question: Question, reason: str, attempt: str, ingest_attempt: str | None
) -> AnswerRecord:
    return AnswerRecord(
        qid=question.qid, conversation=conversation.sample_id, question=question.question,
        gold=question.answer, category=question.category.label, category_id=int(question.category),
        evidence=question.evidence, evidence_sessions=question.evidence_sessions, question_type=question.question_type, prediction="",
        context_tokens=None, search_latency_s=None, total_latency_s=None, failure=reason, session=attempt, ingest_session=ingest_attempt,
    )  # fmt: skip
