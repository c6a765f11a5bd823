"""`mem0bench judge RUN_DIR [OVERRIDES]`: judge a finished run again, without ingesting or answering.

Overrides use the run's own config keys, e.g. `judge.runs=10 judge.prompt=strict judge.model=gpt-4o`.
Labels from a different judge (model, prompt or mode) are kept apart in judgements.jsonl; metrics.json
and predictions.jsonl are rewritten for the judge asked for.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from omegaconf import OmegaConf

from mem0bench.cli.errors import report_errors
from mem0bench.cli.run import _take_secrets
from mem0bench.llm.types import ConfigurationError


def judge_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mem0bench judge", description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("overrides", nargs="*", help="config overrides such as judge.runs=10")
    args = parser.parse_args(_take_secrets(argv))
    return report_errors(lambda: asyncio.run(_rejudge(args.run_dir, args.overrides)))


async def _rejudge(run_dir: Path, overrides: list[str]) -> int:
    from mem0bench.llm.preflight import Probe
    from mem0bench.pipeline.experiment import build_client, judge_settings
    from mem0bench.pipeline.rundir import RunDirectory
    from mem0bench.pipeline.runner import Runner, RunOptions, print_summary

    config_file = run_dir / "config.yaml"
    if not config_file.exists():
        raise ConfigurationError(f"{config_file} not found: is {run_dir} a mem0bench run directory?")
    if not (run_dir / "answers.jsonl").exists():
        raise ConfigurationError(
            f"{run_dir} has no answers.jsonl: run it first (python -m mem0bench run ...)"
        )
    cfg = OmegaConf.load(config_file)
    OmegaConf.set_struct(cfg, True)
    try:
        cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(overrides))
    except Exception as exc:  # omegaconf raises several types for a bad key
        raise ConfigurationError(f"bad override: {exc}".split("\n")[0]) from None
    judge = judge_settings(cfg)
    client = build_client(cfg)
    try:
        await client.preflight(extra_models=[judge.model])
        await client.probe([Probe(judge.model, judge.mode, "judge.mode")])
        rundir = RunDirectory(run_dir)
        runner = Runner(
            dataset=None, questions={}, system=None, client=client, rundir=rundir, judge=judge,
            options=RunOptions(progress=bool(cfg.run.progress)), method_name=str(cfg.method.name),
        )  # fmt: skip
        outcome = await runner.judge_existing()
        rundir.finish(
            rundir.manifest().get("status", "complete"), rejudged_with=OmegaConf.to_container(cfg.judge)
        )
        rundir.close()
        print_summary(outcome, rundir, file=sys.stdout)
        return 0
    finally:
        await client.aclose()
