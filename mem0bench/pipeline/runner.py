"""Run one experiment end to end: ingest, answer, judge, aggregate, in one run directory.

Everything independent overlaps: all conversations ingest at once (each system runs its own streams in
parallel), and a conversation's questions are answered and judged as soon as its ingestion is done. The
LLM client's concurrency limit is the only throttle. Rows are appended as they complete, so a rerun of the
same command in the same folder redoes nothing that finished (and the LLM cache makes the rest free).
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.timing import measure
from mem0bench.memory.base import MemorySystem
from mem0bench.pipeline import aggregate
from mem0bench.pipeline.answer import answer_question
from mem0bench.pipeline.judge import JudgeSettings, judge_once
from mem0bench.pipeline.progress import StageProgress
from mem0bench.pipeline.records import AnswerRecord, FailureRecord, Judgement
from mem0bench.pipeline.rundir import RunDirectory, write_atomic, write_json


class RunAborted(Exception):
    """run.strict=true and a call failed for good."""


@dataclass(frozen=True)
class RunOptions:
    strict: bool = False
    max_failure_rate: float = 0.05
    progress: bool = True


@dataclass
class RunOutcome:
    metrics: dict[str, Any]
    failed_answers: int
    failed_judgements: int
    n_questions: int
    judge_calls: int
    failure_rate: float = field(default=0.0)


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
        self.answers = _latest_answers(rundir)
        # The order of predictions.jsonl: the dataset's, or (re-judging) the answers file's.
        self.order = [q.qid for qs in questions.values() for q in qs] or list(self.answers)
        self.judged = {
            (j.qid, j.run) for j in _judgements(rundir) if j.signature == judge.signature and j.label
        }
        self.ingested = {row["sample_id"]: row for row in rundir.rows("ingest.jsonl")}
        self._previous_usage = _usage_sessions(rundir)
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

    # -- failures ------------------------------------------------------------------------------------
    def _record_failure(self, failure: FailureRecord) -> None:
        self.rundir.appender("failures.jsonl").append(failure.to_dict())
        if self.options.strict:
            raise RunAborted(f"{failure.stage} failed ({failure.kind}): {failure.message}")

    # -- stages --------------------------------------------------------------------------------------
    async def _ingest(self, conversation: Conversation) -> None:
        with measure() as scope:
            report = await self.system.ingest(conversation)
        for failure in getattr(self.system, "failures", [])[:]:
            if failure.get("sample") == conversation.sample_id and not failure.get("_recorded"):
                failure["_recorded"] = True
                self._record_failure(
                    FailureRecord(
                        stage="ingest",
                        kind=str(failure.get("kind", "unknown")),
                        message=str(failure.get("message", "")),
                        conversation=conversation.sample_id,
                    )
                )
        if conversation.sample_id not in self.ingested or not self.ingested[conversation.sample_id]["usage"]:
            # The first complete ingestion is the record; a later reload from the snapshot makes no calls.
            row = {
                "sample_id": conversation.sample_id,
                "memory_tokens": report.memory_tokens,
                "failures": report.failures,
                "details": report.details,
                "usage": scope.usage,
            }
            self.rundir.appender("ingest.jsonl").append(row)
            self.ingested[conversation.sample_id] = row
        self.progress.advance("ingest")

    async def _answer(self, conversation: Conversation, question: Question) -> AnswerRecord:
        done = self.answers.get(question.qid)
        if done is not None and done.failure is None:
            self.progress.advance("answer")
            return done
        record = await answer_question(self.system, self.client, conversation, question)
        self.rundir.appender("answers.jsonl").append(record.to_dict())
        self.answers[question.qid] = record
        self.progress.advance("answer")
        if record.failure:
            kind = record.failure.split(":", 2)[1] if record.failure.count(":") >= 2 else "unknown"
            self._record_failure(
                FailureRecord("answer", kind, record.failure, conversation.sample_id, question.qid)
            )
        return record

    async def _judge(self, answer: AnswerRecord, run: int) -> None:
        if (answer.qid, run) not in self.judged:
            judgement = await judge_once(self.client, self.judge, answer, run)
            self.rundir.appender("judgements.jsonl").append(judgement.to_dict())
            if judgement.label is not None:
                self.judged.add((answer.qid, run))
            else:
                kind = (judgement.failure or "unknown").split(":", 1)[0]
                self._record_failure(
                    FailureRecord("judge", kind, judgement.failure or "", answer.conversation, answer.qid)
                )
        self.progress.advance("judge")

    async def _question(self, conversation: Conversation, question: Question) -> None:
        answer = await self._answer(conversation, question)
        if answer.failure:
            # No prediction: nothing to judge. It scores as WRONG and is counted under failures.
            self.progress.advance("judge", self.judge.runs)
            return
        await asyncio.gather(*(self._judge(answer, run) for run in range(self.judge.runs)))

    async def _conversation(self, conversation: Conversation) -> None:
        await self._ingest(conversation)
        qs = self.questions[conversation.sample_id]
        await asyncio.gather(*(self._question(conversation, q) for q in qs))

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

    # -- aggregate -----------------------------------------------------------------------------------
    def _save_usage(self) -> None:
        """What this process paid, after what earlier processes on this run paid (one entry each)."""
        sessions = [*self._previous_usage, self.client.ledger.snapshot()]
        write_json(self.rundir.file("usage.json"), {"sessions": sessions})

    async def judge_existing(self) -> RunOutcome:
        """Judge the answers already in the run directory (missing runs only); no ingestion, no answers."""
        answers = [a for qid in self.order if (a := self.answers[qid]).failure is None]
        try:
            await asyncio.gather(*(self._judge(a, run) for a in answers for run in range(self.judge.runs)))
        finally:
            self.progress.close()
            self._save_usage()
        return self.finish()

    def finish(self) -> RunOutcome:
        answers = [self.answers[qid] for qid in self.order if qid in self.answers]
        labels = aggregate.judge_labels(_judgements(self.rundir), self.judge.signature, self.judge.runs)
        rows = aggregate.prediction_rows(answers, labels, self.judge.runs)
        memory_tokens = {sid: row.get("memory_tokens") for sid, row in self.ingested.items()}
        usage_rows = [row.get("usage") for row in self.ingested.values()]
        usage_rows += [a.usage for a in answers]
        usage_rows += [j.usage for j in _judgements(self.rundir) if j.signature == self.judge.signature]
        llm_usage = sum_usage(usage_rows)
        failed_answers = sum(1 for a in answers if a.failure)
        failed_judgements = sum(1 for r in rows for v in r["judge"] if v is None)
        stages = self.client.ledger.snapshot().get("stages", {})
        failures = {f"{stage}_calls_failed": v.get("failures", 0) for stage, v in stages.items()}
        metrics = aggregate.metrics(
            rows,
            method=self.method_name,
            runs=self.judge.runs,
            memory_tokens=memory_tokens,
            llm_usage=llm_usage,
            cost_usd=_cost_from_usage_file(self.rundir),
            failures={
                **failures,
                "answers_without_prediction": failed_answers,
                "judge_labels_missing": failed_judgements,
            },
        )
        write_atomic(
            self.rundir.file("predictions.jsonl"),
            "".join(_json_line(r) for r in rows),
        )
        write_json(self.rundir.file("metrics.json"), metrics)
        judge_calls = len(rows) * self.judge.runs
        rate = (failed_answers + failed_judgements / max(self.judge.runs, 1)) / max(len(rows), 1)
        return RunOutcome(metrics, failed_answers, failed_judgements, len(rows), judge_calls, rate)


def sum_usage(rows: list[dict[str, list[int]] | None]) -> dict[str, dict[str, int]]:
    """Add up per-stage [calls, prompt, completion] triples into {stage: {calls, prompt, completion}}."""
    total: dict[str, dict[str, int]] = {}
    for usage in rows:
        for stage, (calls, prompt, completion) in (usage or {}).items():
            entry = total.setdefault(stage, {"calls": 0, "prompt": 0, "completion": 0})
            entry["calls"] += calls
            entry["prompt"] += prompt
            entry["completion"] += completion
    return total


def _usage_sessions(rundir: RunDirectory) -> list[dict[str, Any]]:
    path = rundir.file("usage.json")
    return json.loads(path.read_text(encoding="utf-8")).get("sessions", []) if path.exists() else []


def _cost_from_usage_file(rundir: RunDirectory) -> float:
    """USD actually paid for this run, over every process that worked on it (cache hits cost nothing)."""
    return round(sum(float(s.get("cost_usd", 0.0)) for s in _usage_sessions(rundir)), 6)


def _json_line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"


def print_summary(outcome: RunOutcome, rundir: RunDirectory, file=sys.stderr) -> None:
    """A few lines on the console: where the run is and its headline numbers."""
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
        print("failures: " + ", ".join(f"{k} {v}" for k, v in sorted(failures.items())), file=file)
    print(f"run directory: {rundir.path}", file=file)
