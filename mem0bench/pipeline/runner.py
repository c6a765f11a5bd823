"""Run one experiment end to end: ingest, answer, judge, aggregate, in one run directory.

Everything independent overlaps: all conversations ingest at once (each system runs its own streams in
parallel), and a conversation's questions are answered and judged as soon as its ingestion is done. The
LLM client's concurrency limit is the only throttle.

Crash safety (a kill at any moment loses nothing that was paid for):

* Rows are appended as they complete (one `write(2)` per row; a torn last line is cut off on resume), and
  every LLM reply is in the response cache before the code that asked for it sees it. A rerun of the same
  command in the same folder reuses every finished row (`resume`) and replays the rest through the cache.
* Ingestion is all or nothing per conversation, as far as the record goes: the runner trusts a system's
  saved state for a conversation only when ingest.jsonl says its ingestion finished with nothing left to
  retry. Otherwise it clears `state/<sample_id>/` and ingests the conversation again from its start (free
  from the cache), so the ingest row always accounts for the whole conversation, never for the part that
  happened to run after a kill.
* usage.json (what each process paid) is saved every few seconds as well as at the end (`usage`), so the
  cost of a killed process is not forgotten.

Failures never stop the run unless run.strict=true; how they are recorded and counted is in `failures`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.timing import measure
from mem0bench.llm.types import LLMCallError
from mem0bench.memory.base import MemorySystem
from mem0bench.pipeline.answer import answer_question
from mem0bench.pipeline.failures import (
    TRANSIENT_KINDS,
    FailureLog,
    RunAborted,
    SystemFailures,
    count_failures,
    ingest_step_failure,
    search_step_failure,
    settle_failures_file,
)
from mem0bench.pipeline.judge import JudgeSettings, judge_once
from mem0bench.pipeline.outcome import RunOutcome
from mem0bench.pipeline.progress import ProgressMode, StageProgress
from mem0bench.pipeline.records import AnswerRecord, FailureRecord, IngestRecord
from mem0bench.pipeline.resume import PreviousWork, current_judgements, read_judgements
from mem0bench.pipeline.rundir import RunDirectory, write_json
from mem0bench.pipeline.usage import UsageFile, paid_cost_usd, sum_usage

__all__ = ["RunAborted", "RunOptions", "RunOutcome", "Runner"]


@dataclass(frozen=True)
class RunOptions:
    strict: bool = False
    max_failure_rate: float = 0.05
    progress: ProgressMode = True


def _new_session_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{os.getpid()}"


class Runner:
    def __init__(
        self,
        *,
        dataset: Dataset | None,
        questions: dict[str, list[Question]],
        system: MemorySystem | None,
        client: LLMClient,
        rundir: RunDirectory,
        judge: JudgeSettings,
        options: RunOptions,
        method_name: str,
    ):
        self.method_name = method_name
        self.dataset = dataset
        self.questions = questions
        self.system = system
        self.client = client
        self.rundir = rundir
        self.judge = judge
        self.session = _new_session_id()
        previous = PreviousWork.read(rundir)
        self.answers = dict(previous.answers)
        self.ingests = dict(previous.ingests)
        # The order of predictions.jsonl: the dataset's, or (re-judging) the answers file's.
        self.order = [q.qid for qs in questions.values() for q in qs] or list(self.answers)
        self.judged = {
            (j.qid, j.run, j.answer_session)
            for j in previous.judgements
            if j.signature == judge.signature and j.label
        }
        self.usage = UsageFile(rundir, self.session, client.ledger, previous.usage_sessions)
        self.failures = FailureLog(rundir, self.session, strict=options.strict)
        self.system_failures = SystemFailures(system)
        self.progress = StageProgress(
            client.ledger,
            totals={
                "ingest": len(questions),
                "answer": len(self.order),
                "judge": len(self.order) * judge.runs,
            },
            enabled=options.progress,
        )
        if options.strict:
            client.on_failure = self.failures.abort_on_call_failure

    # -- stages --------------------------------------------------------------------------------------
    async def _ingest(self, conversation: Conversation) -> str | None:
        """Ingest (or restore) one conversation; None when done, else why it could not be ingested."""
        sid = conversation.sample_id
        previous = self.ingests.get(sid)
        final = previous is not None and previous.is_final
        if not final:
            # No record that this conversation's ingestion finished cleanly: whatever state a killed or
            # failed attempt left is not trusted; ingestion starts over (the cache makes it free).
            self._clear_state(sid)
        assert self.system is not None, "ingestion needs a memory system"
        try:
            with measure() as scope:
                report = await self.system.ingest(conversation)
        except LLMCallError as exc:
            f = exc.failure
            reason = f"ingest:{f.kind}: conversation {sid} could not be ingested: {f.message}"
            self._append_ingest(IngestRecord(sid, session=self.session, failed=reason, kind=f.kind))
            self.failures.record(FailureRecord("ingest", f.kind, f.message, conversation=sid))
            self.progress.advance("ingest")
            return reason
        steps = self.system_failures.take(lambda r: r.get("sample_id") == sid and not r.get("qid"))
        for row in steps:
            self.failures.record(ingest_step_failure(row, sid))
        if not final or scope.usage:
            # This attempt is the record: it ingested the whole conversation (or the system chose to).
            kinds = Counter(str(r.get("kind", "unknown")) for r in steps)
            self._append_ingest(
                IngestRecord(
                    sid,
                    session=self.session,
                    memory_tokens=report.memory_tokens,
                    failures=report.failures,
                    failure_kinds=dict(kinds),
                    retry=any(k in TRANSIENT_KINDS for k in kinds),
                    details=report.details,
                    usage=scope.usage,
                )
            )
            self.usage.save_if_due()
        self.progress.advance("ingest")
        return None

    def _append_ingest(self, record: IngestRecord) -> None:
        self.rundir.appender("ingest.jsonl").append(record.to_dict())
        self.ingests[record.sample_id] = record

    def _clear_state(self, sample_id: str) -> None:
        if not sample_id or sample_id in (".", "..") or "/" in sample_id or os.sep in sample_id:
            return
        shutil.rmtree(self.rundir.state_dir / sample_id, ignore_errors=True)

    def _ingest_session(self, sample_id: str) -> str | None:
        """The session of the ingest row that stands for a conversation (its memory answers questions)."""
        ingest = self.ingests.get(sample_id)
        return ingest.session if ingest is not None else None

    def _needs_answer(self, done: AnswerRecord | None, sample_id: str) -> bool:
        if done is None or done.failure is not None:
            return True
        if done.ingest_session != self._ingest_session(sample_id):
            return True  # answered from a memory that has since been built again
        # A prediction made from a context degraded by a transient failure is made again.
        return any(d.split(":", 1)[0].strip() in TRANSIENT_KINDS for d in done.degraded)

    async def _answer(
        self, conversation: Conversation, question: Question, not_ingested: str | None
    ) -> AnswerRecord:
        sid = conversation.sample_id
        done = self.answers.get(question.qid)
        if done is not None and not self._needs_answer(done, sid):
            self.progress.advance("answer")
            return done
        ingest_session = self._ingest_session(sid)
        if not_ingested is not None:
            record = _failed_answer(conversation, question, not_ingested, self.session, ingest_session)
            self._append_answer(record)
            self.progress.advance("answer")
            return record
        assert self.system is not None, "answering needs a memory system"
        record = await answer_question(self.system, self.client, conversation, question)
        degraded = self.system_failures.take(lambda r: r.get("qid") == question.qid)
        record = replace(
            record,
            session=self.session,
            ingest_session=ingest_session,
            degraded=tuple(f"{r.get('kind', 'unknown')}: {r.get('message', '')}" for r in degraded),
        )
        self._append_answer(record)
        self.usage.save_if_due()
        self.progress.advance("answer")
        for row in degraded:
            self.failures.record(search_step_failure(row, sid, question.qid))
        if record.failure:
            self.failures.record(
                FailureRecord(
                    record.failed_stage or "answer", record.failure_kind, record.failure, sid, question.qid
                )
            )
        return record

    def _append_answer(self, record: AnswerRecord) -> None:
        self.rundir.appender("answers.jsonl").append(record.to_dict())
        self.answers[record.qid] = record

    async def _judge(self, answer: AnswerRecord, run: int) -> None:
        if (answer.qid, run, answer.session) not in self.judged:
            judgement = await judge_once(self.client, self.judge, answer, run)
            judgement = replace(judgement, session=self.session, answer_session=answer.session)
            self.rundir.appender("judgements.jsonl").append(judgement.to_dict())
            self.usage.save_if_due()
            if judgement.label is not None:
                self.judged.add((answer.qid, run, answer.session))
            else:
                kind = (judgement.failure or "unknown").split(":", 1)[0]
                self.failures.record(
                    FailureRecord(
                        "judge", kind, judgement.failure or "", answer.conversation, answer.qid, run=run
                    )
                )
        self.progress.advance("judge")

    async def _question(
        self, conversation: Conversation, question: Question, not_ingested: str | None
    ) -> None:
        answer = await self._answer(conversation, question, not_ingested)
        if answer.failure:
            # No prediction: nothing to judge. It scores as WRONG and is counted under failures.
            self.progress.advance("judge", self.judge.runs)
            return
        await asyncio.gather(*(self._judge(answer, run) for run in range(self.judge.runs)))

    async def _conversation(self, conversation: Conversation) -> None:
        not_ingested = await self._ingest(conversation)
        qs = self.questions[conversation.sample_id]
        await asyncio.gather(*(self._question(conversation, q, not_ingested) for q in qs))

    async def run(self) -> RunOutcome:
        assert self.dataset is not None, "a run needs its dataset"
        try:
            async with asyncio.TaskGroup() as group:
                for conversation in self.dataset.conversations:
                    group.create_task(self._conversation(conversation))
        except* RunAborted as aborted:
            raise aborted.exceptions[0] from None
        finally:
            self.progress.close()
            self.usage.save()
        return self.finish()

    async def judge_existing(self) -> RunOutcome:
        """Judge the answers already in the run directory (missing runs only); no ingestion, no answers."""
        answers = [a for qid in self.order if (a := self.answers[qid]).failure is None]
        try:
            await asyncio.gather(*(self._judge(a, run) for a in answers for run in range(self.judge.runs)))
        finally:
            self.progress.close()
            self.usage.save()
        return self.finish()

    # -- aggregate -----------------------------------------------------------------------------------
    def finish(self) -> RunOutcome:
        """Write predictions.jsonl and metrics.json from the rows that stand, and settle failures.jsonl."""
        # Imported here: the scorers pull in NLTK (1.5 s of imports), which no earlier step needs; a run that
        # stops at a configuration error, or is killed before the end, never waits for it.
        from mem0bench.pipeline import aggregate

        runs = self.judge.runs
        answers = [self.answers[qid] for qid in self.order if qid in self.answers]
        standing = current_judgements(
            read_judgements(self.rundir), self.judge.signature, runs, {a.qid: a for a in answers}
        )
        labels = aggregate.judge_labels(standing.values(), self.judge.signature, runs)
        rows = aggregate.prediction_rows(answers, labels, runs)
        ingests = {sid: row for sid, row in self.ingests.items() if self._in_scope(sid)}
        # Tokens the results needed (cached replies included): the standing record of every item, each once.
        answered = {a.qid for a in answers}
        usage_rows = [row.usage for row in ingests.values()]
        usage_rows += [a.usage for a in answers]
        usage_rows += [j.usage for (qid, _), j in standing.items() if qid in answered]
        tally = count_failures(answers, rows, ingests, runs)
        metrics = aggregate.metrics(
            rows,
            method=self.method_name,
            runs=runs,
            memory_tokens={sid: row.memory_tokens for sid, row in ingests.items() if not row.failed},
            llm_usage=sum_usage(usage_rows),
            cost_usd=paid_cost_usd(self.rundir),
            failures=tally.counts,
        )
        self.rundir.rewrite("predictions.jsonl", rows)
        write_json(self.rundir.file("metrics.json"), metrics)
        current = settle_failures_file(
            self.rundir, answers=answers, labels=labels, ingests=ingests, runs=runs, session=self.session
        )
        return RunOutcome(metrics, tally.rates, current)

    def _in_scope(self, sample_id: str) -> bool:
        return not self.questions or sample_id in self.questions


def _failed_answer(
    conversation: Conversation, question: Question, reason: str, session: str, ingest_session: str | None
) -> AnswerRecord:
    return AnswerRecord(
        qid=question.qid, conversation=conversation.sample_id, question=question.question,
        gold=question.answer, category=question.category.label, category_id=int(question.category),
        evidence=question.evidence, prediction="", context_tokens=None, search_latency_s=None,
        total_latency_s=None, failure=reason, session=session, ingest_session=ingest_session,
    )  # fmt: skip
