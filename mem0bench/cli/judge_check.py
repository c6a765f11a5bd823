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
import sys
from pathlib import Path
from typing import TYPE_CHECKING

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
    return report_errors(lambda: _check(args))


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


def _check(args: argparse.Namespace) -> int:
    from mem0bench.judge_check.check import CheckRequest, dry_run_line, prepare, run_check
    from mem0bench.judge_check.render import write_check
    from mem0bench.report.judge_checks import default_out

    spec = _compose(args.overrides)
    request = CheckRequest(args.per_category, args.stress, args.second_opinion, args.probe)
    prepared = prepare(spec, request)
    if spec.dry_run:
        print(dry_run_line(spec, prepared))
        return 0
    result = asyncio.run(run_check(spec, prepared))
    out = args.out or default_out(spec.judge.model)
    print(write_check(out, result))
    print(f"wrote {out / 'judge_check.json'} and {out / 'judge_check.md'}", file=sys.stdout)
    return 0
