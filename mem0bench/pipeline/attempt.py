"""One process's attempt at a run directory: what earlier attempts left there, this attempt's id, usage,
failure log and progress; judging one answer; and the aggregate written at the end.

Both a full run (`runner.Runner`) and re-judging an existing run (`rejudge.Rejudger`) work through one
attempt. (In run files an attempt's id is stored under the key "session" for compatibility; in the code a
"session" is only ever a LOCOMO conversation session.)
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import yaml
from hydra.utils import get_class

from mem0bench.data.model import Question
from mem0bench.llm.batch import BATCH_FILE
from mem0bench.llm.client import LLMClient
from mem0bench.llm.types import as_failure_kind
from mem0bench.memory.base import expects_empty_context
from mem0bench.pipeline.failures import FailureLog, count_failures, settle_failures_file
from mem0bench.pipeline.judge import JudgeSettings, judge_once
from mem0bench.pipeline.latency import LatencyMode, standing_latency
from mem0bench.pipeline.outcome import RunOutcome
from mem0bench.pipeline.progress import ProgressMode, StageProgress
from mem0bench.pipeline.statistics import BootstrapSettings, add_statistics, imported_judge_block
from mem0bench.prompts.answer import AnswerPrompt
from mem0bench.prompts.files import PromptFile
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.records import AnswerRecord, FailureRecord
from mem0bench.rundir.resume import PreviousWork, current_judgements, read_judgements
from mem0bench.rundir.schema import write_results
from mem0bench.rundir.usage import (
    UsageFile,
    cached_prompt_by_stage,
    paid_cost_usd,
    read_usage_sessions,
    sum_usage,
)
from mem0bench.systems.aliases import current_target

if TYPE_CHECKING:  # the aggregate (and what it imports) loads when a run finishes
    from mem0bench.pipeline.aggregate import MissingAnswers

__all__ = ["Attempt", "RunOptions", "new_attempt_id", "recorded_empty_context"]


@dataclass(frozen=True)
class RunOptions:
    strict: bool = False
    max_failure_rate: float = 0.05
    progress: ProgressMode = True
    answer_prompt: AnswerPrompt = "default"
    """`answer.prompt`: the wording of the answer prompt (see mem0bench.prompts.answer)."""
    answer_file: PromptFile | None = None
    """`answer.prompt_file`: a prompt file in place of `answer_prompt` (mem0bench.prompts.files)."""
    bootstrap: BootstrapSettings = BootstrapSettings()
    retry_failed: bool = False
    """Also retry what a rerun would otherwise get back the same from the cache (see `advice`)."""
    context_tokens_max: int | None = None
    """`eval.context_tokens_max`: every system's retrieved context cut to this many tokens (None: not)."""
    latency: LatencyMode = "inline"
    """`eval.latency`: isolated runs the isolated latency pass after the answers (`pipeline.latency`);
    the config's default is isolated, this one inline so that a runner built in code makes no extra call."""
    latency_questions: int | None = None
    """`eval.latency_questions`: how many questions the isolated pass times (a stratified sample); None: all."""
    latency_seed: int = 0
    """`eval.seed`: the isolated pass's sample is drawn with it."""
    remeasure_latency: bool = False
    """`run.remeasure_latency`: time every question of the isolated pass again, measured or not."""
    missing_answers: MissingAnswers = "wrong"
    """`eval.missing_answers`: how a suite's own figures (the per-run metrics: LongMemEval's three) count a
    question with no answer: WRONG (as J does), or skipped (LongMemEval's authors' script)."""


def recorded_empty_context(rundir: RunDirectory) -> bool:
    """Whether the run's system declared its contexts empty by design, from the run's own record, never
    from its name: run.json's `empty_context_expected` (written by runs since the declaration exists),
    else, for an older folder, the declaration of the class its config.yaml names (`method._target_`,
    through the moved-class table). A class that cannot be imported declares nothing."""
    recorded = rundir.manifest().get("empty_context_expected")
    if recorded is not None:
        return recorded is True
    try:
        config = yaml.safe_load(rundir.file("config.yaml").read_text(encoding="utf-8"))
        target = current_target(str(config["method"]["_target_"]))
        return expects_empty_context(get_class(target))
    except Exception:  # no config, no target, or a system this machine cannot import: not declared
        return False


def new_attempt_id() -> str:
    """Time and process id: attempts at the same run directory never share one."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{os.getpid()}"


class Attempt:
    def __init__(
        self,
        *,
        rundir: RunDirectory,
        client: LLMClient,
        judge: JudgeSettings,
        options: RunOptions,
        method_name: str,
        questions: dict[str, list[Question]],
        ingest_units: int = 0,
        results_subdir: str = "",
    ) -> None:
        """`questions` (by conversation) are the run's scope; empty when re-judging, where the scope is
        the answers already in the run directory. `ingest_units`: what the ingest bar counts (message
        pairs per stream, see `memory.ingest_progress`). `results_subdir`: where predictions.jsonl and
        metrics.json go: the run folder, or (another judge re-judging the run) judges/<name>/, so that
        each judge's figures stay apart."""
        self.rundir = rundir
        self.options = options
        self.results_subdir = results_subdir
        self.client = client
        self.judge = judge
        self.method_name = method_name
        self.questions = questions
        self.id = new_attempt_id()
        previous = PreviousWork.read(rundir)
        self.answers = dict(previous.answers)
        self.ingests = dict(previous.ingests)
        # The order of predictions.jsonl: the dataset's, or (re-judging) the answers file's.
        self.order = [q.qid for qs in questions.values() for q in qs] or list(self.answers)
        self.judges = [judge, *judge.panel_judges()]  # judge.panel: more judges, each kept apart
        signatures = {j.signature for j in self.judges}
        self.judged = {
            (j.signature, j.qid, j.run, j.answer_session)
            for j in previous.judgements
            if j.signature in signatures and j.label
        }
        self.usage = UsageFile(rundir, self.id, client.ledger, previous.usage_sessions)
        self.failures = FailureLog(rundir, self.id, strict=options.strict)
        self.progress = StageProgress(
            client.ledger,
            totals={
                "ingest": ingest_units,
                "answer": len(self.order),
                "judge": len(self.order) * self.labels_per_answer,
            },
            enabled=options.progress,
        )
        if options.strict:
            client.on_failure = self.failures.abort_on_call_failure
        if client.settings.batch and client.batch is None:
            # llm.batch=true: the answer and judge requests go through the Batch API; the folder's
            # batches.jsonl records each batch as it is created, so a later command picks up the open ones.
            client.use_batches(
                rundir.appender(BATCH_FILE).append,
                rundir.rows(BATCH_FILE),
                progress=options.progress is not False,
            )

    @property
    def labels_per_answer(self) -> int:
        """Judge calls one answer needs: every run of every judge (the panel's included)."""
        return sum(j.runs for j in self.judges)

    async def judge_all(self, answer: AnswerRecord) -> None:
        """Every judge's runs of one answer."""
        await asyncio.gather(
            *(self.judge_answer(answer, run, j) for j in self.judges for run in range(j.runs))
        )

    async def judge_answer(self, answer: AnswerRecord, run: int, judge: JudgeSettings | None = None) -> None:
        """Judge run `run` of one answer, unless a label of this judge for this very answer stands."""
        judge = judge or self.judge
        if (judge.signature, answer.qid, run, answer.session) not in self.judged:
            judgement = await judge_once(self.client, judge, answer, run)
            judgement = replace(judgement, session=self.id, answer_session=answer.session)
            self.rundir.appender("judgements.jsonl").append(judgement.to_dict())
            self.usage.save_if_due()
            if judgement.label is not None:
                self.judged.add((judge.signature, answer.qid, run, answer.session))
            else:
                kind = as_failure_kind((judgement.failure or "").split(":", 1)[0])
                self.failures.record(
                    FailureRecord(
                        "judge", kind, judgement.failure or "", answer.conversation, answer.qid, run=run
                    )
                )
        self.progress.advance("judge")

    def close(self) -> None:
        """Stop the progress display and save this attempt's usage (also after an error)."""
        self.progress.close()
        self.usage.save()

    def finish(self) -> RunOutcome:
        """Write predictions.jsonl and metrics.json from the rows that stand, and settle failures.jsonl."""
        # Imported here: the scorers pull in NLTK (1.5 s of imports), which no earlier step needs; a run that
        # stops at a configuration error, or is killed before the end, never waits for it.
        from mem0bench.pipeline import aggregate
        from mem0bench.pipeline.panel import panel_block

        runs = self.judge.runs
        answers = [self.answers[qid] for qid in self.order if qid in self.answers]
        judgements = read_judgements(self.rundir)  # every judge's labels, read once for the blocks below
        standing = current_judgements(judgements, self.judge.signature, runs, {a.qid: a for a in answers})
        labels = aggregate.judge_labels(standing.values(), self.judge.signature, runs)
        rows = aggregate.prediction_rows(answers, labels, runs)
        ingests = {sid: row for sid, row in self.ingests.items() if self._in_scope(sid)}
        # Tokens the results needed (cached replies included): the standing record of every item, each once.
        answered = {a.qid for a in answers}
        usage_rows = [row.usage for row in ingests.values()]
        usage_rows += [a.usage for a in answers]
        usage_rows += [j.usage for (qid, _), j in standing.items() if qid in answered]
        tally = count_failures(answers, rows, ingests, runs)
        paid = read_usage_sessions(self.rundir)  # usage.json and its journal, read once for both sums
        metrics = aggregate.metrics(
            rows,
            method=self.method_name,
            runs=runs,
            memory_tokens={sid: row.memory_tokens for sid, row in ingests.items() if not row.failed},
            llm_usage=sum_usage(usage_rows),
            cost_usd=paid_cost_usd(paid),
            failures=tally.counts,
            empty_context_expected=recorded_empty_context(self.rundir),
            missing_answers=self.options.missing_answers,
        )
        # Paid prompt tokens per stage and how many the server served from its prompt cache (cached rate):
        # only when the server cached any, so a run without prompt caching writes the file it always did.
        prompt_cache = cached_prompt_by_stage(paid)
        if any(entry["cached_prompt"] for entry in prompt_cache.values()):
            metrics["tokens"]["prompt_cache"] = prompt_cache
        metrics["sampling"] = self.usage.sampling()  # what each stage's chat requests set, per stage
        decided = [row.details for row in ingests.values() if not row.failed]
        metrics["deletes_without_replacement"] = aggregate.deletes_without_replacement(decided)
        metrics.update(aggregate.memory_decision_counts(decided))
        evidence = aggregate.evidence_id_counts(decided)
        if evidence is not None:
            metrics["evidence_ids"] = evidence
        measured = standing_latency(self.rundir, {a.qid: a for a in answers})
        if measured:
            metrics["latency_isolated_s"] = aggregate.isolated_latency_summary(list(measured.values()))
        metrics = add_statistics(metrics, rows, self.options.bootstrap, judge_name=self.judge.name)
        imported = imported_judge_block(judgements, rows)
        if imported is not None:
            metrics["imported_judge"] = imported
        if len(self.judges) > 1:
            metrics["judge_panel"] = panel_block(self.judges, judgements, answers, rows)
        metrics = write_results(self.rundir, rows, metrics, self.results_subdir).to_dict()
        current = settle_failures_file(
            self.rundir, answers=answers, labels=labels, ingests=ingests, runs=runs, attempt=self.id
        )
        return RunOutcome(metrics, tally.rates, current)

    def _in_scope(self, sample_id: str) -> bool:
        return not self.questions or sample_id in self.questions
