"""One judge check: load the run config's dataset, build the calibration items (with the stress items, a
second opinion's answers and a probe file when asked), price it (dry run) or judge every item with the
run config's judge, and gather the result that `render` writes as judge_check.json and .md.

An item's label is our judge's majority over `judge.runs` (ties WRONG; on a graded suite the most frequent
grade, ties to the lower). The command (`cli/judge_check.py`) composes the config, calls this, and prints.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.data.answer_key import apply_answer_key, read_answer_key
from mem0bench.data.model import Dataset, Question
from mem0bench.importing.imported import FieldMap, match_records, read_data, read_records
from mem0bench.importing.imported_suites import match_suite_records, suite_records
from mem0bench.judge_check.calibration import (
    FAMILIES,
    CalibrationItem,
    build_calibration_set,
    error_rates,
    probe_rates,
    second_opinion,
)
from mem0bench.judge_check.suite_calibration import not_applicable
from mem0bench.llm.client import LLMClient
from mem0bench.llm.ledger import batch_rates
from mem0bench.pipeline.experiment import build_client, dataset_request, dataset_suite, select_questions
from mem0bench.pipeline.judge import JudgeSettings, judge_once
from mem0bench.pipeline.plan import REPLY_TOKENS
from mem0bench.pipeline.spec import ExperimentSpec
from mem0bench.pipeline.statistics import IMPORTED_PREFIX
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.records import AnswerRecord, label_score
from mem0bench.rundir.resume import latest_answers, read_judgements
from mem0bench.suites import get_suite, suite_of
from mem0bench.tokens import count_tokens

__all__ = ["CheckRequest", "PreparedCheck", "Probe", "dry_run_line", "prepare", "run_check"]


@dataclass(frozen=True)
class CheckRequest:
    """What the command line asks for beyond the run config."""

    per_category: int
    """Questions per scored category (each gives several items)."""
    stress: bool
    second_opinion: Path | None = None
    """A run directory whose imported judge labels to set beside ours."""
    probe: Path | None = None
    """A published file of known-WRONG answers (any shape `import` reads)."""


@dataclass(frozen=True)
class Probe:
    """A file of known-WRONG answers matched to the dataset: what to judge, and the file's own labels."""

    file: Path
    records: list[AnswerRecord]
    """AnswerRecord per matched answer (qid suffixed '#probe')."""
    theirs: dict[str, tuple[bool | float | None, ...]]
    counts: dict[str, int]


@dataclass(frozen=True)
class PreparedCheck:
    """Everything to judge, read before any call is made (so a bad file fails before money is spent)."""

    suite: str
    items: list[CalibrationItem]
    opinion: Path | None
    """The second opinion's run directory (its imported labels are read after our judge's)."""
    opinion_answers: list[AnswerRecord]
    probe: Probe | None


def prepare(spec: ExperimentSpec, request: CheckRequest) -> PreparedCheck:
    """The run config's dataset (with its answer key), its calibration items and the files asked for."""
    scope = spec.scope
    suite = dataset_suite(scope)
    dataset = suite.load(dataset_request(scope))
    if scope.answer_key:
        key = read_answer_key(scope.answer_key, dataset)
        dataset = apply_answer_key(dataset, key, scope.answer_key_mode)  # type: ignore[arg-type]
    try:
        items = build_calibration_set(dataset, request.per_category, stress=request.stress)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    opinion = second_opinion_answers(request.second_opinion) if request.second_opinion else []
    probe = probe_answers(request.probe, dataset) if request.probe else None
    return PreparedCheck(suite.name, items, request.second_opinion, opinion, probe)


def dry_run_line(spec: ExperimentSpec, prepared: PreparedCheck) -> str:
    """What the check would cost at the config's list prices, in one line; no call is made."""
    judge, prices = spec.judge, spec.llm.prices
    answers = [*prepared.opinion_answers, *(prepared.probe.records if prepared.probe else [])]
    items = prepared.items
    texts = [(i.question.question, i.question.answer, i.prediction) for i in items]
    texts += [(a.question, a.gold, a.prediction) for a in answers]
    prompt = sum(
        count_tokens(m["content"])
        for q, gold, pred in texts
        for m in judge.messages(q, gold, pred, adversarial=False)
    )
    calls = len(texts) * judge.runs
    prompt *= judge.runs
    completion = calls * REPLY_TOKENS["judge"]
    price = prices.get(judge.model, {"prompt": 0.0, "completion": 0.0})
    usd = (prompt * price["prompt"] + completion * price["completion"]) / 1e6
    batch_prompt, batch_completion, _ = batch_rates(price)
    batched = (prompt * batch_prompt + completion * batch_completion) / 1e6
    return (
        f"dry run: judge-check with {judge.model} ({judge.prompt_name}), {len(items)} calibration items"
        + (f" + {len(answers)} second-opinion answers" if answers else "")
        + f" x {judge.runs} run(s) = {calls} calls, {prompt:,} prompt tokens, about {completion:,} completion "
        f"tokens, ${usd:.2f} online, ${batched:.2f} with llm.batch=true (no LLM call made; cached calls cost "
        "nothing)"
    )


async def run_check(spec: ExperimentSpec, prepared: PreparedCheck) -> dict[str, Any]:
    """Judge every item (and the second opinion's answers and the probe's) with the config's judge: the
    judge_check.json document."""
    judge = spec.judge
    client = build_client(spec)
    if spec.llm.batch:  # no run folder: the check's batches are not on record (see llm.batch)
        client.use_batches()
    try:
        await client.preflight(extra_models=[judge.model])
        result = await judge_all(client, judge, prepared.items, prepared.opinion_answers, prepared.opinion)
        if prepared.suite != "locomo":  # LOCOMO's file stays as it was
            result["suite"] = prepared.suite
            result["not_applicable"] = [dataclasses.asdict(n) for n in not_applicable(prepared.suite)]
        if prepared.probe is not None:
            result["probe"] = await judge_probe(client, judge, prepared.probe)
    finally:
        await client.aclose()
    return result


def second_opinion_answers(run_dir: Path) -> list[AnswerRecord]:
    """The run's latest answers that have a prediction (those another judge's labels can be set beside)."""
    if not (run_dir / "answers.jsonl").is_file():
        raise ConfigurationError(f"{run_dir}: no answers.jsonl: is it a mem0bench run directory?")
    return [a for a in latest_answers(RunDirectory(run_dir)).values() if a.failure is None]


def imported_labels(run_dir: Path) -> dict[str, bool]:
    """The imported judge's label of each answer: its majority over the file's judgments (ties WRONG)."""
    given: dict[str, list[bool]] = {}
    for j in read_judgements(RunDirectory(run_dir)):
        if j.signature.startswith(IMPORTED_PREFIX) and j.label is not None:
            given.setdefault(j.qid, []).append(j.label == "CORRECT")
    labels = {qid: sum(v) > len(v) / 2 for qid, v in given.items()}
    if not labels:
        raise ConfigurationError(f"{run_dir}: no imported judge labels (make it with `mem0bench import`)")
    return labels


def probe_answers(path: Path, dataset: Dataset) -> Probe:
    """The file's answers matched to the dataset's questions, as `import` matches them."""
    suite = get_suite(dataset.suite)
    questions = {
        c.sample_id: select_questions(c, include_adversarial=False, max_questions=None, suite=suite)
        for c in dataset.conversations
    }
    if suite.name == "locomo":
        result = match_records(read_records(path, FieldMap()), dataset, FieldMap(), questions)
    else:  # the suite's own published shape, matched by its own identity (as `import` does)
        records = suite_records(str(path), read_data(path), suite.name, FieldMap())
        graded = suite.grading == "graded"
        result = match_suite_records(records, dataset, FieldMap(), questions, graded=graded)
    if not result.answers:
        raise ConfigurationError(
            f"{path}: --probe: no record matched a {suite.title} question ({result.counts})"
        )
    answers = [_record(f"{a.question.qid}#probe", a.question, a.prediction) for a in result.answers]
    theirs = {f"{a.question.qid}#probe": a.labels for a in result.answers}
    return Probe(path, answers, theirs, result.counts)


def _record(item_id: str, question: Question, prediction: str) -> AnswerRecord:
    return AnswerRecord(
        qid=item_id, conversation=question.sample_id, question=question.question, gold=question.answer,
        category=question.category.label, category_id=int(question.category), prediction=prediction,
        context_tokens=None, search_latency_s=None, total_latency_s=None,
    )  # fmt: skip


async def _majority(client: LLMClient, judge: JudgeSettings, record: AnswerRecord) -> bool | None:
    """Our judge's label of one answer: its majority over judge.runs (ties WRONG); None if all failed."""
    found = await asyncio.gather(*(judge_once(client, judge, record, run) for run in range(judge.runs)))
    labels = [j.label == "CORRECT" for j in found if j.label is not None]
    return None if not labels else sum(labels) > len(labels) / 2


async def _score(client: LLMClient, judge: JudgeSettings, record: AnswerRecord) -> bool | float | None:
    """Our judge's grade of one calibration item: its most frequent label over judge.runs, ties to the
    lower (binary: ties WRONG); True/False on a binary suite, 1 / 0.5 / 0 on a graded one; None if all
    failed."""
    found = await asyncio.gather(*(judge_once(client, judge, record, run) for run in range(judge.runs)))
    scores = [s for j in found if (s := label_score(j.label)) is not None]
    if not scores:
        return None
    vote = max(sorted(set(scores)), key=scores.count)
    return vote if suite_of(record.category_id).grading == "graded" else vote == 1.0


async def judge_probe(client: LLMClient, judge: JudgeSettings, probe: Probe) -> dict[str, Any]:
    """The probe block: our judge's false accepts on the file's answers beside the file's own labels."""
    ours = await asyncio.gather(*(_majority(client, judge, r) for r in probe.records))
    categories = {r.qid: r.category for r in probe.records}
    block = probe_rates(dict(zip(categories, ours)), probe.theirs, categories)
    return {"file": str(probe.file), "matched": probe.counts.get("matched", 0), **block}


async def judge_all(
    client: LLMClient,
    judge: JudgeSettings,
    items: Sequence[CalibrationItem],
    answers: Sequence[AnswerRecord],
    opinion: Path | None,
) -> dict[str, Any]:
    """The error rates of every item and, with `opinion`, the agreement with its imported judge."""
    records = [_record(i.item_id, i.question, i.prediction) for i in items]
    labels = await asyncio.gather(*(_score(client, judge, r) for r in records))
    result: dict[str, Any] = {
        "judge": {"model": judge.model, "prompt": judge.prompt_name, "mode": judge.mode, "runs": judge.runs},
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "items": sum(1 for i in items if i.kind not in FAMILIES),
        **error_rates(items, {i.item_id: v for i, v in zip(items, labels)}),
    }
    if opinion is not None:
        ours_list = await asyncio.gather(*(_majority(client, judge, a) for a in answers))
        ours = {a.qid: v for a, v in zip(answers, ours_list)}
        theirs = imported_labels(opinion)
        categories: dict[str, Any] = {}
        for category in sorted({a.category for a in answers}):
            qids = {a.qid for a in answers if a.category == category}
            subset = {q: v for q, v in ours.items() if q in qids}
            categories[category] = second_opinion(subset, theirs)
        block = {"run": str(opinion), "overall": second_opinion(ours, theirs), "categories": categories}
        result["second_opinion"] = block
    return result
