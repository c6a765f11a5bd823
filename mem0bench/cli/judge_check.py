"""`mem0bench judge-check [OVERRIDES]`: the judge's false-accept and false-reject rates on items whose
right label is known, per category with Wilson 95% intervals; optionally its agreement (and Cohen's
kappa) with another judge's labels of a run (`--second-opinion RUN_DIR`, e.g. an imported run).

Overrides are the run config's keys (judge.model=..., judge.prompt=..., judge.runs=..., dataset.path=...,
run.dry_run=true prices the check and calls nothing). judge.runs defaults to 1 here; with more runs an
item's label is its majority over the runs (ties WRONG).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mem0bench.cli.errors import describe_hydra_error, report_errors
from mem0bench.cli.examples import with_examples
from mem0bench.cli.run import _take_secrets
from mem0bench.common.errors import ConfigurationError
from mem0bench.paths import data_home

if TYPE_CHECKING:
    from mem0bench.pipeline.spec import ExperimentSpec


def judge_check_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mem0bench judge-check", description=__doc__.split("\n")[0], **with_examples("judge-check")
    )
    parser.add_argument("overrides", nargs="*", help="config overrides such as judge.prompt=strict")
    parser.add_argument("--per-category", type=int, default=25, help="questions per category (4 items each)")
    parser.add_argument("--second-opinion", type=Path, help="a run directory with an imported judge's labels")
    parser.add_argument("--out", type=Path, help="folder for judge_check.json and .md")
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
    from mem0bench.data import load_dataset, resolve_dataset_path
    from mem0bench.data.answer_key import apply_answer_key, read_answer_key
    from mem0bench.pipeline.experiment import build_client
    from mem0bench.pipeline.tools.calibration import build_calibration_set

    spec = _compose(args.overrides)
    judge, scope = spec.judge, spec.scope
    dataset = load_dataset(resolve_dataset_path(scope.path, data_home(scope.data_dir)))
    if scope.answer_key:
        key = read_answer_key(scope.answer_key, dataset)
        dataset = apply_answer_key(dataset, key, scope.answer_key_mode)  # type: ignore[arg-type]
    try:
        items = build_calibration_set(dataset, args.per_category)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    opinion_answers = _second_opinion_answers(args.second_opinion) if args.second_opinion else []
    if spec.dry_run:
        _print_price(spec.llm.prices, judge, items, opinion_answers)
        return 0
    client = build_client(spec)
    try:
        await client.preflight(extra_models=[judge.model])
        result = await _judge_all(client, judge, items, opinion_answers, args.second_opinion)
    finally:
        await client.aclose()
    out = args.out or Path("results") / "judge-check" / f"{datetime.now(UTC):%Y-%m-%d_%H-%M-%S}"
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
    from mem0bench.pipeline.statistics import IMPORTED_PREFIX
    from mem0bench.rundir.directory import RunDirectory
    from mem0bench.rundir.resume import read_judgements

    labels = {
        j.qid: j.label == "CORRECT"
        for j in read_judgements(RunDirectory(run_dir))
        if j.signature.startswith(IMPORTED_PREFIX) and j.label is not None
    }
    if not labels:
        raise ConfigurationError(f"{run_dir}: no imported judge labels (make it with `mem0bench import`)")
    return labels


def _print_price(
    prices: Mapping[str, Mapping[str, float]], judge: Any, items: list[Any], answers: list[Any]
) -> None:
    from mem0bench.pipeline.plan import REPLY_TOKENS
    from mem0bench.prompts.judge import build_judge_messages
    from mem0bench.tokens import count_tokens

    texts = [(i.question.question, i.question.answer, i.prediction) for i in items]
    texts += [(a.question, a.gold, a.prediction) for a in answers]
    prompt = sum(
        count_tokens(m["content"])
        for q, gold, pred in texts
        for m in build_judge_messages(q, gold, pred, prompt=judge.prompt)
    )
    calls = len(texts) * judge.runs
    prompt *= judge.runs
    completion = calls * REPLY_TOKENS["judge"]
    price = prices.get(judge.model, {"prompt": 0.0, "completion": 0.0})
    usd = (prompt * price["prompt"] + completion * price["completion"]) / 1e6
    print(
        f"dry run: judge-check with {judge.model} ({judge.prompt}), {len(items)} calibration items"
        + (f" + {len(answers)} second-opinion answers" if answers else "")
        + f" x {judge.runs} run(s) = {calls} calls, {prompt:,} prompt tokens, about {completion:,} completion "
        f"tokens, ${usd:.2f} (no LLM call made; cached calls cost nothing)"
    )


async def _judge_all(
    client: Any, judge: Any, items: list[Any], answers: list[Any], opinion: Path | None
) -> Any:
    from mem0bench.pipeline.judge import judge_once
    from mem0bench.pipeline.tools.calibration import error_rates, second_opinion
    from mem0bench.rundir.records import AnswerRecord

    records = [
        AnswerRecord(
            qid=i.item_id,
            conversation=i.question.sample_id,
            question=i.question.question,
            gold=i.question.answer,
            category=i.question.category.label,
            category_id=int(i.question.category),
            prediction=i.prediction,
            context_tokens=None,
            search_latency_s=None,
            total_latency_s=None,
        )  # fmt: skip
        for i in items
    ]

    async def majority(record: AnswerRecord) -> bool | None:
        found = await asyncio.gather(*(judge_once(client, judge, record, run) for run in range(judge.runs)))
        labels = [j.label == "CORRECT" for j in found if j.label is not None]
        return None if not labels else sum(labels) > len(labels) / 2

    labels = await asyncio.gather(*(majority(r) for r in records))
    result: dict[str, Any] = {
        "judge": {"model": judge.model, "prompt": judge.prompt, "mode": judge.mode, "runs": judge.runs},
        "items": len(items),
        **error_rates(items, {i.item_id: v for i, v in zip(items, labels)}),
    }
    if opinion is not None:
        ours_list = await asyncio.gather(*(majority(a) for a in answers))
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
    lines = [
        f"**judge-check: {j['model']} ({j['prompt']}, {j['mode']}, {j['runs']} run(s)), {result['items']} items**",
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
    lines += ["", "| item kind | judged against its known label |", "|---|---|"]
    lines += [f"| {k} | {_fmt_rate(r)} |" for k, r in result["kinds"].items()]
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


def _write(out: Path, result: dict[str, Any]) -> None:
    from mem0bench.common.files import atomic_write
    from mem0bench.rundir.directory import write_json

    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "judge_check.json", result)
    text = render_markdown(result)
    atomic_write(out / "judge_check.md", text)
    print(text)
    print(f"wrote {out / 'judge_check.json'} and {out / 'judge_check.md'}", file=sys.stdout)
