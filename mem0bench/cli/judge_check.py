"""`mem0bench judge-check [OVERRIDES]`: the judge's false-accept and false-reject rates on items whose
right label is known, per category with Wilson 95% intervals; optionally its agreement (and Cohen's
kappa) with another judge's labels of a run (`--second-opinion RUN_DIR`, e.g. an imported run).

The stress test (on by default, `--no-stress` leaves it out) adds hard known-WRONG answers made from each
gold (vague but topical, specific but wrong, a hedge: `judge_check/stress.py`), reported per kind, family and
category. `--probe FILE` judges a published file of known-wrong answers (any shape `import` reads, e.g.
locomo-audit's ap_v2_vague_scored.json) and sets our judge's false accepts beside the file's own labels.

Overrides are the run config's keys (judge.model=..., judge.prompt=..., judge.runs=..., dataset.path=...,
run.dry_run=true prices the check and calls nothing). judge.runs defaults to 1 here; with more runs an
item's label is its majority over the runs (ties WRONG).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mem0bench.cli.errors import describe_hydra_error, report_errors
from mem0bench.cli.examples import with_examples
from mem0bench.cli.run import _take_secrets
from mem0bench.common.errors import ConfigurationError

if TYPE_CHECKING:
    from mem0bench.pipeline.spec import ExperimentSpec


def judge_check_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mem0bench judge-check", description=__doc__.split("\n")[0], **with_examples("judge-check")
    )
    parser.add_argument("overrides", nargs="*", help="config overrides such as judge.prompt=strict")
    parser.add_argument("--per-category", type=int, default=25, help="questions per category (4 items each)")
    parser.add_argument("--second-opinion", type=Path, help="a run directory with an imported judge's labels")
    parser.add_argument(
        "--out",
        type=Path,
        help="folder for judge_check.json and .md (default: results/judge-check/<time>_<judge model> in the "
        "current folder, where `run` puts results/runs/<time>_<method> and where `report` looks for judge "
        "checks by default)",
    )
    parser.add_argument(
        "--stress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="add the hard known-wrong items made from each gold (default: on)",
    )
    parser.add_argument("--probe", type=Path, help="a file of known-WRONG answers to judge (import's shapes)")
    args = parser.parse_intermixed_args(_take_secrets(argv))  # overrides may come after the options
    return report_errors(lambda: asyncio.run(_check(args)))


def _compose(overrides: list[str]) -> ExperimentSpec:
    """The run config with `overrides`, parsed into the experiment spec."""
    from hydra import compose, initialize_config_dir

    from mem0bench.cli.config import plain
    from mem0bench.cli.run import CONFIG_DIR
    from mem0bench.pipeline.spec import ExperimentSpec

    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = compose(config_name="run", overrides=["judge.runs=1", *overrides])
        data = plain(cfg)
    except Exception as exc:  # Hydra raises several types for a bad override
        raise ConfigurationError(describe_hydra_error(exc)) from None
    return ExperimentSpec.from_mapping(data)


async def _check(args: argparse.Namespace) -> int:
    from mem0bench.data.answer_key import apply_answer_key, read_answer_key
    from mem0bench.judge_check.calibration import build_calibration_set
    from mem0bench.judge_check.suite_calibration import not_applicable
    from mem0bench.pipeline.experiment import build_client, dataset_request, dataset_suite
    from mem0bench.report.judge_checks import default_out

    spec = _compose(args.overrides)
    judge, scope = spec.judge, spec.scope
    suite = dataset_suite(scope)
    dataset = suite.load(dataset_request(scope))
    if scope.answer_key:
        key = read_answer_key(scope.answer_key, dataset)
        dataset = apply_answer_key(dataset, key, scope.answer_key_mode)  # type: ignore[arg-type]
    try:
        items = build_calibration_set(dataset, args.per_category, stress=args.stress)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    opinion_answers = _second_opinion_answers(args.second_opinion) if args.second_opinion else []
    probe = _probe_answers(args.probe, dataset) if args.probe else None
    if spec.dry_run:
        _print_price(spec.llm.prices, judge, items, [*opinion_answers, *(probe.records if probe else [])])
        return 0
    client = build_client(spec)
    try:
        await client.preflight(extra_models=[judge.model])
        result = await _judge_all(client, judge, items, opinion_answers, args.second_opinion)
        if suite.name != "locomo":  # LOCOMO's file stays as it was
            result["suite"] = suite.name
            result["not_applicable"] = [dataclasses.asdict(n) for n in not_applicable(suite.name)]
        if probe is not None:
            result["probe"] = await _judge_probe(client, judge, probe)
    finally:
        await client.aclose()
    out = args.out or default_out(judge.model)
    _write(out, result)
    return 0


def _second_opinion_answers(run_dir: Path) -> list[Any]:
    from mem0bench.rundir.directory import RunDirectory
    from mem0bench.rundir.resume import latest_answers

    if not (run_dir / "answers.jsonl").is_file():
        raise ConfigurationError(f"{run_dir}: no answers.jsonl: is it a mem0bench run directory?")
    answers = [a for a in latest_answers(RunDirectory(run_dir)).values() if a.failure is None]
    return answers


def _imported_labels(run_dir: Path) -> dict[str, bool]:
    """The imported judge's label of each answer: its majority over the file's judgments (ties WRONG)."""
    from mem0bench.pipeline.statistics import IMPORTED_PREFIX
    from mem0bench.rundir.directory import RunDirectory
    from mem0bench.rundir.resume import read_judgements

    given: dict[str, list[bool]] = {}
    for j in read_judgements(RunDirectory(run_dir)):
        if j.signature.startswith(IMPORTED_PREFIX) and j.label is not None:
            given.setdefault(j.qid, []).append(j.label == "CORRECT")
    labels = {qid: sum(v) > len(v) / 2 for qid, v in given.items()}
    if not labels:
        raise ConfigurationError(f"{run_dir}: no imported judge labels (make it with `mem0bench import`)")
    return labels


def _print_price(
    prices: Mapping[str, Mapping[str, float]], judge: Any, items: list[Any], answers: list[Any]
) -> None:
    from mem0bench.pipeline.plan import REPLY_TOKENS
    from mem0bench.tokens import count_tokens

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
    print(
        f"dry run: judge-check with {judge.model} ({judge.prompt_name}), {len(items)} calibration items"
        + (f" + {len(answers)} second-opinion answers" if answers else "")
        + f" x {judge.runs} run(s) = {calls} calls, {prompt:,} prompt tokens, about {completion:,} completion "
        f"tokens, ${usd:.2f} (no LLM call made; cached calls cost nothing)"
    )


@dataclass(frozen=True)
class Probe:
    """A file of known-WRONG answers matched to LOCOMO: what to judge, and the file's own labels."""

    file: Path
    records: list[Any]
    """AnswerRecord per matched answer (qid suffixed '#probe')."""
    theirs: dict[str, tuple[bool | float | None, ...]]
    counts: dict[str, int]


def _probe_answers(path: Path, dataset: Any) -> Probe:
    from mem0bench.importing.imported import FieldMap, match_records, read_data, read_records
    from mem0bench.importing.imported_suites import match_suite_records, suite_records
    from mem0bench.pipeline.experiment import select_questions
    from mem0bench.suites import get_suite

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
    records = [_record(f"{a.question.qid}#probe", a.question, a.prediction) for a in result.answers]
    theirs = {f"{a.question.qid}#probe": a.labels for a in result.answers}
    return Probe(path, records, theirs, result.counts)


def _record(item_id: str, question: Any, prediction: str) -> Any:
    from mem0bench.rundir.records import AnswerRecord

    return AnswerRecord(
        qid=item_id, conversation=question.sample_id, question=question.question, gold=question.answer,
        category=question.category.label, category_id=int(question.category), prediction=prediction,
        context_tokens=None, search_latency_s=None, total_latency_s=None,
    )  # fmt: skip


async def _majority(client: Any, judge: Any, record: Any) -> bool | None:
    """Our judge's label of one answer: its majority over judge.runs (ties WRONG); None if all failed."""
    from mem0bench.pipeline.judge import judge_once

    found = await asyncio.gather(*(judge_once(client, judge, record, run) for run in range(judge.runs)))
    labels = [j.label == "CORRECT" for j in found if j.label is not None]
    return None if not labels else sum(labels) > len(labels) / 2


async def _score(client: Any, judge: Any, record: Any) -> bool | float | None:
    """Our judge's grade of one calibration item: its most frequent label over judge.runs, ties to the
    lower (binary: ties WRONG); True/False on a binary suite, 1 / 0.5 / 0 on a graded one; None if all
    failed."""
    from mem0bench.pipeline.judge import judge_once
    from mem0bench.rundir.records import label_score
    from mem0bench.suites import suite_of

    found = await asyncio.gather(*(judge_once(client, judge, record, run) for run in range(judge.runs)))
    scores = [s for j in found if (s := label_score(j.label)) is not None]
    if not scores:
        return None
    vote = max(sorted(set(scores)), key=scores.count)
    return vote if suite_of(record.category_id).grading == "graded" else vote == 1.0


async def _judge_probe(client: Any, judge: Any, probe: Probe) -> dict[str, Any]:
    from mem0bench.judge_check.calibration import probe_rates

    ours = await asyncio.gather(*(_majority(client, judge, r) for r in probe.records))
    categories = {r.qid: r.category for r in probe.records}
    block = probe_rates(dict(zip(categories, ours)), probe.theirs, categories)
    return {"file": str(probe.file), "matched": probe.counts.get("matched", 0), **block}


async def _judge_all(
    client: Any, judge: Any, items: list[Any], answers: list[Any], opinion: Path | None
) -> Any:
    from mem0bench.judge_check.calibration import FAMILIES, error_rates, second_opinion

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
        theirs = _imported_labels(opinion)
        categories: dict[str, Any] = {}
        for category in sorted({a.category for a in answers}):
            qids = {a.qid for a in answers if a.category == category}
            subset = {q: v for q, v in ours.items() if q in qids}
            categories[category] = second_opinion(subset, theirs)
        block = {"run": str(opinion), "overall": second_opinion(ours, theirs), "categories": categories}
        result["second_opinion"] = block
    return result


def _fmt_rate(r: dict[str, Any]) -> str:
    if r["rate"] is None:
        return "-"
    lo, hi = r["ci95"]
    return f"{100 * r['rate']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] (n={r['n']})"


def render_markdown(result: dict[str, Any]) -> str:
    j = result["judge"]
    on = f" on {result['suite']} (its own grading)" if result.get("suite") else ""
    lines = [
        f"**judge-check: {j['model']} ({j['prompt']}, {j['mode']}, {j['runs']} run(s)), {result['items']} "
        f"items{on}**",
        "",
        "Rates in %, Wilson 95% interval in brackets. False accept: a known-wrong answer judged CORRECT; "
        "false reject: a known-right answer judged WRONG.",
        "",
        "| scope | false accept | false reject | judge failures |",
        "|---|---|---|---:|",
    ]
    for name, b in [*result["categories"].items(), ("overall", result["overall"])]:
        lines.append(
            f"| {name} | {_fmt_rate(b['false_accept'])} | {_fmt_rate(b['false_reject'])} | {b['failed']} |"
        )
    partial = result["overall"].get("partial")
    if partial is not None:
        lines += ["", f"Graded scale: a PARTIAL counts 0.5 (half an error on a known-wrong item, as it is half "
                  f"a point of J); {partial} item(s) judged PARTIAL."]  # fmt: skip
    lines += ["", "| item kind | judged against its known label |", "|---|---|"]
    lines += [f"| {k} | {_fmt_rate(r)} |" for k, r in result["kinds"].items()]
    stress = result.get("stress")
    if stress:
        lines += _stress_lines(stress, result.get("suite"), result.get("not_applicable", []))
    if result.get("not_applicable"):
        lines += ["", f"Not applicable on {result['suite']} (no item made, so no rate):", ""]
        lines += [f"- {n['scope']}: {', '.join(n['kinds'])}: {n['why']}" for n in result["not_applicable"]]
    probe = result.get("probe")
    if probe:
        lines += _probe_lines(probe)
    opinion = result.get("second_opinion")
    if opinion:
        lines += [
            "",
            f"Second opinion: {opinion['run']}",
            "",
            "| scope | n | agreement | Cohen's kappa |",
            "|---|---:|---:|---:|",
        ]
        for name, b in [*opinion["categories"].items(), ("overall", opinion["overall"])]:
            agree = "-" if b["agreement"] is None else f"{100 * b['agreement']:.1f}"
            kappa = "-" if b["cohen_kappa"] is None else f"{b['cohen_kappa']:.3f}"
            lines.append(f"| {name} | {b['n']} | {agree} | {kappa} |")
    return "\n".join(lines) + "\n"


def _stress_lines(stress: dict[str, Any], suite: str | None, absent: list[dict[str, Any]]) -> list[str]:
    """The stress table; on another suite than LOCOMO its scored categories, `n/a` in a column where the
    stress kinds do not apply (`absent`: the not_applicable entries)."""
    from mem0bench.judge_check.calibration import SCORED_CATEGORIES
    from mem0bench.suites import get_suite

    scored = SCORED_CATEGORIES if suite is None else get_suite(suite).scored
    names = [c.label for c in scored]
    no_stress = {n["scope"] for n in absent if "stress kinds" in n["kinds"]}
    where = "per LOCOMO category" if suite is None else f"per {get_suite(suite).title} category"
    lines = [
        "",
        f"Stress test: {stress['items']} known-WRONG answers made from the "
        f"{'cues' if suite == 'locomo_plus' else 'golds'}; false accepts in %, "
        f"Wilson 95% interval, per family and kind, overall and {where}.",
        "",
        "| family / kind | overall | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    rows = [(f"**{k}**", b) for k, b in stress["families"].items()] + list(stress["kinds"].items())
    for name, b in rows:
        cells = [
            _fmt_rate(b["categories"][c]) if c in b["categories"] else "n/a" if c in no_stress else "-"
            for c in names
        ]
        lines.append(f"| {name} | {_fmt_rate(b['overall'])} | " + " | ".join(cells) + " |")
    return lines


def _probe_lines(probe: dict[str, Any]) -> list[str]:
    def theirs(b: dict[str, Any]) -> str:
        share = b["theirs_accept"]
        return "-" if share is None else f"{100 * share:.1f} ({b['theirs_judgments']} judgments)"

    lines = [
        "",
        f"Probe: {probe['file']} ({probe['matched']} known-WRONG answers matched): accepted in %",
        "",
        "| scope | our judge (false accept) | the file's judge | agreement | Cohen's kappa |",
        "|---|---|---|---:|---:|",
    ]
    for name, b in [*probe["categories"].items(), ("overall", probe["overall"])]:
        agreement = b["agreement"]
        agree = "-" if agreement["agreement"] is None else f"{100 * agreement['agreement']:.1f}"
        kappa = (
            "-" if agreement["cohen_kappa"] is None else f"{round(agreement['cohen_kappa'], 3) + 0.0:.3f}"
        )  # no -0.000
        lines.append(f"| {name} | {_fmt_rate(b['ours_false_accept'])} | {theirs(b)} | {agree} | {kappa} |")
    return lines


def _write(out: Path, result: dict[str, Any]) -> None:
    from mem0bench.common.files import atomic_write
    from mem0bench.rundir.directory import write_json

    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "judge_check.json", result)
    text = render_markdown(result)
    atomic_write(out / "judge_check.md", text)
    print(text)
    print(f"wrote {out / 'judge_check.json'} and {out / 'judge_check.md'}", file=sys.stdout)
