"""Run one experiment end to end: ingest, answer, judge, aggregate, in one run directory.

Everything independent overlaps: all conversations ingest at once (each system runs its own streams in
parallel), and a conversation's questions are answered and judged as soon as its ingestion is done. The
LLM client's concurrency limit is the only throttle.

Crash safety (a kill at any moment loses nothing that was paid for):

* Rows are appended as they complete (one `write(2)` per row; a torn last line is cut off on resume), and
  every LLM reply is in the response cache before the code that asked for it sees it. A rerun of the same
  command in the same folder reuses every finished row and replays the rest through the cache.
* Ingestion is all or nothing per conversation, as far as the record goes: the runner trusts a system's
  saved state for a conversation only when ingest.jsonl says its ingestion finished with nothing left to
  retry. Otherwise it clears `state/<sample_id>/` and ingests the conversation again from its start (free
  from the cache), so the ingest row always accounts for the whole conversation, never for the part that
  happened to run after a kill.
* usage.json (what each process paid) is saved every few seconds as well as at the end, so the cost of a
  killed process is not forgotten.

Failures: a call that fails for good (after the client's bounded retries) never stops the run; the item is
recorded in failures.jsonl, scored as failed, and retried by the next run of the same command. metrics.json
counts the items that are failed *now*: an earlier failure that a later attempt fixed is kept in
failures.jsonl as history (`resolved: true`) and counted nowhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.timing import measure
from mem0bench.llm.types import CallFailure, LLMCallError
from mem0bench.memory.base import MemorySystem
from mem0bench.pipeline.answer import answer_question
from mem0bench.pipeline.judge import JudgeSettings, judge_once
from mem0bench.pipeline.progress import ProgressMode, StageProgress
from mem0bench.pipeline.records import AnswerRecord, FailureRecord, Judgement
from mem0bench.pipeline.rundir import RunDirectory, write_atomic, write_json

TRANSIENT_KINDS = frozenset({"rate_limit", "server_error", "timeout", "connection"})
"""Failure kinds that a later attempt may get past (the others would fail the same way again)."""

FAILURE_STAGES = ("ingest", "search", "answer", "judge")
USAGE_SAVE_EVERY_S = 2.0


class RunAborted(Exception):
    """run.strict=true and a call failed for good."""


@dataclass(frozen=True)
class RunOptions:
    strict: bool = False
    max_failure_rate: float = 0.05
    progress: ProgressMode = True


@dataclass
class RunOutcome:
    metrics: dict[str, Any]
    failed_answers: int
    failed_judgements: int
    n_questions: int
    judge_calls: int
    failure_rate: float = field(default=0.0)
    failure_rates: dict[str, float] = field(default_factory=dict)
    current_failures: list[dict[str, Any]] = field(default_factory=list)


def select_questions(
    conversation: Conversation, *, include_adversarial: bool, max_questions: int | None
) -> list[Question]:
    """LOCOMO categories 1-4 (the paper's scope), plus 5 on request; optionally the first N."""
    chosen = [q for q in conversation.questions if include_adversarial or int(q.category) != 5]
    return chosen if max_questions is None else chosen[:max_questions]


def _latest_answers(rundir: RunDirectory) -> dict[str, AnswerRecord]:
    latest: dict[str, AnswerRecord] = {}
    for row in rundir.rows("answers.jsonl"):
        latest[row["qid"]] = AnswerRecord.from_dict(row)
    return latest


def _judgements(rundir: RunDirectory) -> list[Judgement]:
    return [Judgement.from_dict(row) for row in rundir.rows("judgements.jsonl")]


def current_judgements(
    judgements: list[Judgement], signature: str, runs: int, answers: dict[str, AnswerRecord]
) -> dict[tuple[str, int], Judgement]:
    """(qid, run) -> the judgement that stands: a label if any attempt gave one, else the latest failure;
    only judgements of the answer that stands (an answer made again needs new labels)."""
    chosen: dict[tuple[str, int], Judgement] = {}
    for j in judgements:
        if j.signature != signature or not 0 <= j.run < runs:
            continue
        answer = answers.get(j.qid)
        if answer is None or j.answer_session != answer.session:
            continue
        key = (j.qid, j.run)
        held = chosen.get(key)
        if held is None or held.label is None:
            chosen[key] = j
    return chosen


def _latest_ingest_rows(rundir: RunDirectory) -> dict[str, dict[str, Any]]:
    latest: dict[str, dict[str, Any]] = {}
    for row in rundir.rows("ingest.jsonl"):
        latest[row["sample_id"]] = row
    return latest


def _ingest_is_final(row: dict[str, Any] | None) -> bool:
    """True when an ingest row closes the conversation's ingestion: done, nothing a retry could fix."""
    if row is None or row.get("failed"):
        return False
    if "retry" in row:
        return not row["retry"]
    return not row.get("failures")  # rows written before `retry` existed: any failure is retried


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
        self.options = options
        self.session = _new_session_id()
        self.answers = _latest_answers(rundir)
        # The order of predictions.jsonl: the dataset's, or (re-judging) the answers file's.
        self.order = [q.qid for qs in questions.values() for q in qs] or list(self.answers)
        self.judged = {
            (j.qid, j.run, j.answer_session)
            for j in _judgements(rundir)
            if j.signature == judge.signature and j.label
        }
        self.ingested = _latest_ingest_rows(rundir)
        self._previous_usage = _usage_sessions(rundir)
        self._last_usage_save = time.monotonic()
        self._seen_system_failures: set[int] = set()
        total_questions = len(self.order)
        self.progress = StageProgress(
            client.ledger,
            totals={
                "ingest": len(questions),
                "answer": total_questions,
                "judge": total_questions * judge.runs,
            },
            enabled=options.progress,
        )
        self._aborting = False
        if options.strict:
            client.on_failure = self._strict_abort

    # -- failures ------------------------------------------------------------------------------------
    def _strict_abort(self, failure: CallFailure) -> None:
        """run.strict=true: the first call that fails for good ends the run, wherever it happened.
        (Only the first raises: calls failing while the run is torn down fail as usual.)"""
        if self._aborting:
            return
        self._aborting = True
        self.rundir.appender("failures.jsonl").append(
            FailureRecord(failure.stage, failure.kind, failure.message, session=self.session).to_dict()
        )
        raise RunAborted(f"a {failure.stage} call failed ({failure.kind}): {failure.message}")

    def _record_failure(self, failure: FailureRecord) -> None:
        self.rundir.appender("failures.jsonl").append(replace(failure, session=self.session).to_dict())
        if self.options.strict and not self._aborting:
            self._aborting = True
            where = failure.qid or failure.conversation or ""
            raise RunAborted(f"{failure.stage} failed ({failure.kind}) {where}: {failure.message}".strip())

    def _take_system_failures(self, match) -> list[dict[str, Any]]:
        """Failure rows the system recorded (its `failures` list) that match and were not taken yet."""
        taken = []
        for row in list(getattr(self.system, "failures", None) or []):
            if id(row) in self._seen_system_failures or not isinstance(row, dict) or not match(row):
                continue
            self._seen_system_failures.add(id(row))
            taken.append(row)
        return taken

    # -- persistence ---------------------------------------------------------------------------------
    def _row_written(self) -> None:
        """After each row: keep usage.json current, so a kill does not lose what this process paid."""
        now = time.monotonic()
        if now - self._last_usage_save >= USAGE_SAVE_EVERY_S:
            self._last_usage_save = now
            self._save_usage()

    def _save_usage(self) -> None:
        """What this process paid, after what earlier processes on this run paid (one entry each)."""
        snapshot = {"session": self.session, **self.client.ledger.snapshot()}
        write_json(self.rundir.file("usage.json"), {"sessions": [*self._previous_usage, snapshot]})

    def _clear_state(self, sample_id: str) -> None:
        if not sample_id or sample_id in (".", "..") or "/" in sample_id or os.sep in sample_id:
            return
        shutil.rmtree(self.rundir.state_dir / sample_id, ignore_errors=True)

    # -- stages --------------------------------------------------------------------------------------
    async def _ingest(self, conversation: Conversation) -> str | None:
        """Ingest (or restore) one conversation; None when done, else why it could not be ingested."""
        sid = conversation.sample_id
        previous = self.ingested.get(sid)
        final = _ingest_is_final(previous)
        if not final:
            # No record that this conversation's ingestion finished cleanly: whatever state a killed or
            # failed attempt left is not trusted; ingestion starts over (the cache makes it free).
            self._clear_state(sid)
        try:
            with measure() as scope:
                report = await self.system.ingest(conversation)
        except LLMCallError as exc:
            f = exc.failure
            reason = f"ingest:{f.kind}: conversation {sid} could not be ingested: {f.message}"
            row = {"sample_id": sid, "failed": reason, "kind": f.kind, "session": self.session}
            self.rundir.appender("ingest.jsonl").append(row)
            self.ingested[sid] = row
            self._record_failure(FailureRecord("ingest", f.kind, f.message, conversation=sid))
            self.progress.advance("ingest")
            return reason
        rows = self._take_system_failures(lambda r: r.get("sample_id") == sid and not r.get("qid"))
        for row in rows:
            self._record_failure(
                FailureRecord(
                    stage="ingest",
                    kind=str(row.get("kind", "unknown")),
                    message=str(row.get("message", "")),
                    conversation=sid,
                    step=row.get("stage"),
                    detail={
                        k: v for k, v in row.items() if k not in ("kind", "message", "stage", "sample_id")
                    },
                )
            )
        if not final or scope.usage:
            # This attempt is the record: it ingested the whole conversation (or the system chose to).
            kinds = Counter(str(r.get("kind", "unknown")) for r in rows)
            row = {
                "sample_id": sid,
                "memory_tokens": report.memory_tokens,
                "failures": report.failures,
                "failure_kinds": dict(kinds),
                "retry": any(k in TRANSIENT_KINDS for k in kinds),
                "details": report.details,
                "usage": scope.usage,
                "session": self.session,
            }
            self.rundir.appender("ingest.jsonl").append(row)
            self.ingested[sid] = row
            self._row_written()
        self.progress.advance("ingest")
        return None

    def _needs_answer(self, done: AnswerRecord | None, sample_id: str) -> bool:
        if done is None or done.failure is not None:
            return True
        if done.ingest_session != (self.ingested.get(sample_id) or {}).get("session"):
            return True  # answered from a memory that has since been built again
        # A prediction made from a context degraded by a transient failure is made again.
        return any(d.split(":", 1)[0].strip() in TRANSIENT_KINDS for d in done.degraded)

    async def _answer(
        self, conversation: Conversation, question: Question, not_ingested: str | None
    ) -> AnswerRecord:
        sid = conversation.sample_id
        done = self.answers.get(question.qid)
        if not self._needs_answer(done, sid):
            self.progress.advance("answer")
            return done
        ingest_session = (self.ingested.get(sid) or {}).get("session")
        if not_ingested is not None:
            record = _failed_answer(conversation, question, not_ingested, self.session, ingest_session)
            self.rundir.appender("answers.jsonl").append(record.to_dict())
            self.answers[question.qid] = record
            self.progress.advance("answer")
            return record
        record = await answer_question(self.system, self.client, conversation, question)
        degraded = self._take_system_failures(lambda r: r.get("qid") == question.qid)
        record = replace(
            record,
            session=self.session,
            ingest_session=ingest_session,
            degraded=tuple(f"{r.get('kind', 'unknown')}: {r.get('message', '')}" for r in degraded),
        )
        self.rundir.appender("answers.jsonl").append(record.to_dict())
        self.answers[question.qid] = record
        self._row_written()
        self.progress.advance("answer")
        for row in degraded:
            self._record_failure(
                FailureRecord(
                    "search", str(row.get("kind", "unknown")), str(row.get("message", "")),
                    conversation.sample_id, question.qid, step=row.get("stage"),
                )
            )  # fmt: skip
        if record.failure:
            self._record_failure(
                FailureRecord(
                    record.failed_stage or "answer", record.failure_kind, record.failure,
                    conversation.sample_id, question.qid,
                )
            )  # fmt: skip
        return record

    async def _judge(self, answer: AnswerRecord, run: int) -> None:
        if (answer.qid, run, answer.session) not in self.judged:
            judgement = await judge_once(self.client, self.judge, answer, run)
            judgement = replace(judgement, session=self.session, answer_session=answer.session)
            self.rundir.appender("judgements.jsonl").append(judgement.to_dict())
            self._row_written()
            if judgement.label is not None:
                self.judged.add((answer.qid, run, answer.session))
            else:
                kind = (judgement.failure or "unknown").split(":", 1)[0]
                self._record_failure(
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
        try:
            async with asyncio.TaskGroup() as group:
                for conversation in self.dataset.conversations:
                    group.create_task(self._conversation(conversation))
        except* RunAborted as aborted:
            raise aborted.exceptions[0] from None
        finally:
            self.progress.close()
            self._save_usage()
        return self.finish()

    async def judge_existing(self) -> RunOutcome:
        """Judge the answers already in the run directory (missing runs only); no ingestion, no answers."""
        answers = [a for qid in self.order if (a := self.answers[qid]).failure is None]
        try:
            await asyncio.gather(*(self._judge(a, run) for a in answers for run in range(self.judge.runs)))
        finally:
            self.progress.close()
            self._save_usage()
        return self.finish()

    # -- aggregate -----------------------------------------------------------------------------------
    def finish(self) -> RunOutcome:
        # Imported here: the scorers pull in NLTK (1.5 s of imports), which no earlier step needs; a run that
        # stops at a configuration error, or is killed before the end, never waits for it.
        from mem0bench.pipeline import aggregate

        answers = [self.answers[qid] for qid in self.order if qid in self.answers]
        standing = current_judgements(
            _judgements(self.rundir), self.judge.signature, self.judge.runs, {a.qid: a for a in answers}
        )
        labels = aggregate.judge_labels(standing.values(), self.judge.signature, self.judge.runs)
        rows = aggregate.prediction_rows(answers, labels, self.judge.runs)
        ingest_rows = {sid: row for sid, row in self.ingested.items() if self._in_scope(sid)}
        memory_tokens = {
            sid: row.get("memory_tokens") for sid, row in ingest_rows.items() if not row.get("failed")
        }
        # Tokens the results needed (cached replies included): the standing record of every item, each once.
        answered = {a.qid for a in answers}
        usage_rows = [row.get("usage") for row in ingest_rows.values()]
        usage_rows += [a.usage for a in answers]
        usage_rows += [j.usage for (qid, _), j in standing.items() if qid in answered]
        failures, rates = self._failure_counts(answers, rows, ingest_rows)
        metrics = aggregate.metrics(
            rows,
            method=self.method_name,
            runs=self.judge.runs,
            memory_tokens=memory_tokens,
            llm_usage=sum_usage(usage_rows),
            cost_usd=_cost_from_usage_file(self.rundir),
            failures=failures,
        )
        write_atomic(self.rundir.file("predictions.jsonl"), "".join(_json_line(r) for r in rows))
        write_json(self.rundir.file("metrics.json"), metrics)
        current = self._settle_failures_file(answers, labels, ingest_rows)
        failed_answers = sum(1 for a in answers if a.failure)
        failed_judgements = failures["judge"]
        rate = max(rates.values(), default=0.0)
        return RunOutcome(
            metrics,
            failed_answers,
            failed_judgements,
            len(rows),
            len(rows) * self.judge.runs,
            rate,
            rates,
            current,
        )

    def _in_scope(self, sample_id: str) -> bool:
        return not self.questions or sample_id in self.questions

    def _failure_counts(
        self, answers: list[AnswerRecord], rows: list[dict[str, Any]], ingest_rows: dict[str, dict[str, Any]]
    ) -> tuple[dict[str, int], dict[str, float]]:
        """Items failed now, per stage, and the failure rate of each stage."""
        failed_conversations = sum(1 for row in ingest_rows.values() if row.get("failed"))
        ingest_steps = sum(
            int(row.get("failures") or 0) for row in ingest_rows.values() if not row.get("failed")
        )
        stage_of = Counter(a.failed_stage for a in answers if a.failure)
        degraded = sum(len(a.degraded) for a in answers if not a.failure)
        missing_labels = sum(1 for r in rows if not r.get("failure") for v in r["judge"] if v is None)
        failures = {
            "ingest": ingest_steps + failed_conversations,
            "search": stage_of.get("search", 0) + degraded,
            "answer": stage_of.get("answer", 0),
            "judge": missing_labels,
            "questions_without_prediction": sum(stage_of.values()),
        }
        n = max(len(answers), 1)
        answered = sum(1 for a in answers if not a.failure)
        ingest_calls = 0
        for row in ingest_rows.values():
            for stage, (calls, _, _) in (row.get("usage") or {}).items():
                if stage.startswith("ingest"):
                    ingest_calls += calls
        rates = {
            "ingest": ingest_steps / max(ingest_calls + ingest_steps, 1) if ingest_steps else 0.0,
            "answer": failures["questions_without_prediction"] / n,
            "judge": missing_labels / max(answered * self.judge.runs, 1),
        }
        return failures, rates

    def _settle_failures_file(
        self,
        answers: list[AnswerRecord],
        labels: dict[str, list[bool | None]],
        ingest_rows: dict[str, dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """Mark every failures.jsonl row resolved or not (the file is rewritten whole); -> the unresolved."""
        path = self.rundir.file("failures.jsonl")
        if not path.exists():
            return []
        by_qid = {a.qid: a for a in answers}
        history = self.rundir.rows("failures.jsonl")
        latest_for_item: dict[tuple[Any, ...], int] = {}
        for i, row in enumerate(history):
            if row.get("stage") in ("search", "answer", "judge") and row.get("qid"):
                latest_for_item[(row["stage"], row["qid"], row.get("run"))] = i
        settled = []
        for i, row in enumerate(history):
            stage = row.get("stage")
            current = False
            if stage == "ingest" and row.get("conversation") in ingest_rows:
                standing = ingest_rows[row["conversation"]]
                current = bool(standing.get("failed") or standing.get("failures")) and (
                    standing.get("session") == row.get("session")
                )
            elif stage in ("search", "answer") and row.get("qid") in by_qid:
                a = by_qid[row["qid"]]
                latest = latest_for_item.get((stage, row["qid"], row.get("run"))) == i
                current = latest and a.session == row.get("session") and bool(a.failure or a.degraded)
            elif stage == "judge" and row.get("qid") in by_qid and row.get("run") is not None:
                a = by_qid[row["qid"]]
                run = int(row["run"])
                label = labels.get(row["qid"], [None] * self.judge.runs)
                latest = latest_for_item.get(("judge", row["qid"], row.get("run"))) == i
                current = latest and not a.failure and run < len(label) and label[run] is None
            elif stage not in ("ingest", "search", "answer", "judge"):
                current = row.get("session") == self.session  # e.g. the call that stopped a strict run
            settled.append({**row, "resolved": not current})
        self.rundir.rewrite("failures.jsonl", settled)
        return [row for row in settled if not row["resolved"]]


def _failed_answer(
    conversation: Conversation, question: Question, reason: str, session: str, ingest_session: str | None
) -> AnswerRecord:
    return AnswerRecord(
        qid=question.qid, conversation=conversation.sample_id, question=question.question,
        gold=question.answer, category=question.category.label, category_id=int(question.category),
        evidence=question.evidence, prediction="", context_tokens=None, search_latency_s=None,
        total_latency_s=None, failure=reason, session=session, ingest_session=ingest_session,
    )  # fmt: skip


def sum_usage(rows: list[dict[str, list[int]] | None]) -> dict[str, dict[str, int]]:
    """Add up per-stage [calls, prompt, completion] triples into {stage: {calls, prompt, completion}}."""
    total: dict[str, dict[str, int]] = {}
    for usage in rows:
        for stage, (calls, prompt, completion) in (usage or {}).items():
            entry = total.setdefault(stage, {"calls": 0, "prompt": 0, "completion": 0})
            entry["calls"] += calls
            entry["prompt"] += prompt
            entry["completion"] += completion
    return dict(sorted(total.items()))


def _usage_sessions(rundir: RunDirectory) -> list[dict[str, Any]]:
    path = rundir.file("usage.json")
    if not path.exists():
        return []
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("sessions", [])
    except (OSError, ValueError):
        return []


def _cost_from_usage_file(rundir: RunDirectory) -> float:
    """USD actually paid for this run, over every process that worked on it (cache hits cost nothing)."""
    return round(sum(float(s.get("cost_usd", 0.0)) for s in _usage_sessions(rundir)), 6)


def _json_line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def print_summary(outcome: RunOutcome, rundir: RunDirectory, file=sys.stderr, examples: int = 5) -> None:
    """A few lines on the console: the headline numbers, what is still failed (and where), the folder."""
    m = outcome.metrics
    judge = (m.get("overall") or {}).get("judge") or {}

    def pct(v: float | None) -> str:
        return "n/a" if v is None else f"{100 * v:.2f}"

    print(
        f"{m['method']}: {outcome.n_questions} questions, J {pct(judge.get('mean'))} ± "
        f"{pct(judge.get('std'))} over {judge.get('runs')} runs, F1 {pct(m['overall']['f1'])}, "
        f"BLEU-1 {pct(m['overall']['bleu1'])}, cost ${m['cost_usd']:.4f}",
        file=file,
    )
    failures = {k: v for k, v in (m.get("failures") or {}).items() if v}
    if failures:
        counts = ", ".join(f"{stage} {failures[stage]}" for stage in FAILURE_STAGES if stage in failures)
        extra = failures.get("questions_without_prediction")
        tail = f" ({extra} questions without a prediction)" if extra else ""
        print(f"failures: {counts}{tail}; rerun the same command to retry them", file=file)
        for row in outcome.current_failures[:examples]:
            where = row.get("qid") or row.get("conversation") or ""
            if row.get("run") is not None:
                where += f" run {row['run']}"
            step = f"/{row['step']}" if row.get("step") else ""
            print(f"  {row['stage']}{step} {where}: {row['kind']}: {_short(row['message'])}", file=file)
        more = len(outcome.current_failures) - examples
        if more > 0:
            print(f"  ... and {more} more in {rundir.file('failures.jsonl')}", file=file)
    print(f"run directory: {rundir.path}", file=file)
