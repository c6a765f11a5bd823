"""`mem0bench judge RUN_DIR [OVERRIDES]`: judge a finished run again, without ingesting or answering.

Overrides use the run's own config keys, e.g. `judge.runs=10 judge.prompt=strict judge.model=gpt-4o`.
Labels from a different judge (model, prompt or mode) are kept apart in judgements.jsonl, and so are its
figures: its predictions.jsonl, metrics.json and config.yaml go to judges/<model>_<prompt>_<mode>/, and the
run's own files stay those of the judge the run was made with. The run's own judge (e.g. with more runs)
rewrites the run's own files, config.yaml included. Fewer runs than a judge's figures stand on is refused
(in one line) unless `--fewer-runs` says it is meant.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig, OmegaConf

from mem0bench.cli.config import experiment_spec, plain
from mem0bench.cli.errors import report_errors
from mem0bench.cli.examples import with_examples
from mem0bench.cli.run import _take_secrets
from mem0bench.common.errors import ConfigurationError
from mem0bench.common.folder_lock import folder_lock
from mem0bench.common.jsonl import read_jsonl
from mem0bench.llm.reachability import ServerUnreachable

JUDGE_FOLDER_IN_USE = (
    "a run folder has one process at a time; wait for that one to end (`python -m mem0bench status FOLDER` "
    "shows it), then judge it"
)

if TYPE_CHECKING:
    from mem0bench.pipeline.judge import JudgeSettings
    from mem0bench.pipeline.spec import ExperimentSpec


def judge_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mem0bench judge", description=__doc__.split("\n")[0], **with_examples("judge")
    )
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("overrides", nargs="*", help="config overrides such as judge.runs=10")
    parser.add_argument(
        "--fewer-runs",
        action="store_true",
        help="allow a judge.runs below the runs this judge's figures stand on (they are rewritten over "
        "the first N runs; the other runs' labels stay in judgements.jsonl)",
    )
    args = parser.parse_intermixed_args(_take_secrets(argv))  # the flag before or after the overrides
    return report_errors(lambda: asyncio.run(_rejudge(args.run_dir, args.overrides, args.fewer_runs)))


def judge_folder(judge: JudgeSettings) -> str:
    """judges/<model>_<prompt>_<mode>: where another judge's predictions, metrics and config go."""
    name = f"{judge.model}_{judge.prompt_name}_{judge.mode}"
    return "judges/" + re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")


def check_fewer_runs(run_dir: Path, subdir: str, judge: JudgeSettings, *, allowed: bool) -> None:
    """One line, before any call, when this judge's labels in the folder cover more runs than `judge.runs`
    asks for: its figures would silently drop to fewer runs (`--fewer-runs` does it on purpose). Counted
    from the labels themselves (judgements.jsonl, this judge's signature), so a folder with none of this
    judge's labels yet (an imported run, a new judge) is never refused."""
    if allowed:
        return
    runs = 1 + max(
        (
            row["run"]
            for row in read_jsonl(run_dir / "judgements.jsonl")
            if row.get("signature") == judge.signature
            and row.get("label") is not None
            and isinstance(row.get("run"), int)
        ),
        default=-1,
    )
    if judge.runs < runs:
        where = f"{subdir}/metrics.json" if subdir else "the run's metrics.json"
        raise ConfigurationError(
            f"judge.runs={judge.runs} is fewer than the {runs} runs {where} stands on, and would rewrite it "
            f"over {judge.runs}: leave judge.runs at {runs} or more, or add --fewer-runs to do it on purpose "
            "(the other runs' labels stay in judgements.jsonl)"
        )


async def _rejudge(run_dir: Path, overrides: list[str], fewer_runs: bool = False) -> int:
    from mem0bench.pipeline.spec import judge_settings

    config_file = run_dir / "config.yaml"
    if not config_file.exists():
        raise ConfigurationError(f"{config_file} not found: is {run_dir} a mem0bench run directory?")
    if not (run_dir / "answers.jsonl").exists():
        raise ConfigurationError(
            f"{run_dir} has no answers.jsonl: run it first (python -m mem0bench run ...)"
        )
    cfg = OmegaConf.load(config_file)
    if not isinstance(cfg, DictConfig):
        raise ConfigurationError(f"{config_file} is not a mapping: is {run_dir} a mem0bench run directory?")
    own_judge = judge_settings(plain(cfg.judge))  # the judge that made the run's own metrics.json
    OmegaConf.set_struct(cfg, True)
    try:
        merged = OmegaConf.merge(cfg, OmegaConf.from_dotlist(overrides))
    except Exception as exc:  # omegaconf raises several types for a bad key
        raise ConfigurationError(f"bad override: {exc}".split("\n")[0]) from None
    assert isinstance(merged, DictConfig)  # merging into a mapping gives a mapping
    cfg = merged
    spec = experiment_spec(cfg)
    judge = spec.judge
    # The run's own judge (more runs, say) updates the run's own files; another judge gets its own folder.
    subdir = "" if judge.signature == own_judge.signature else judge_folder(judge)
    check_fewer_runs(run_dir, subdir, judge, allowed=fewer_runs)
    # The run folder's one owner: not while a run (or another judge) is writing it.
    with folder_lock(run_dir, what="the run folder", advice=JUDGE_FOLDER_IN_USE):
        return await _rejudge_locked(run_dir, cfg, spec, subdir, config_file)


async def _rejudge_locked(
    run_dir: Path, cfg: DictConfig, spec: ExperimentSpec, subdir: str, config_file: Path
) -> int:
    from mem0bench.common.files import atomic_write
    from mem0bench.llm.probes import probe
    from mem0bench.pipeline.attempt import RunOptions
    from mem0bench.pipeline.experiment import build_client
    from mem0bench.pipeline.rejudge import Rejudger
    from mem0bench.pipeline.summary import print_summary
    from mem0bench.rundir.directory import RunDirectory
    from mem0bench.rundir.status import RunState
    from mem0bench.suites import get_suite

    judge = spec.judge
    configure = get_suite(spec.scope.suite).configure_judge
    if configure is not None:  # a suite judge's switches live in dataset.*, which no load reads here (BEAM)
        configure(dict(spec.scope.options))
    client = build_client(spec)
    client.retry_cached_failures = spec.run.retry_failed
    try:
        await client.preflight(extra_models=[judge.model])
        await probe(client, judge.probes(panel=False))
        rundir = RunDirectory(run_dir)
        rejudger = Rejudger(
            client=client, rundir=rundir, judge=judge,
            options=RunOptions(
                progress=spec.run.progress, bootstrap=spec.eval, missing_answers=spec.run.missing_answers
            ),
            method_name=spec.method_name, results_subdir=subdir,
        )  # fmt: skip
        try:
            outcome = await rejudger.run()
        except ServerUnreachable as exc:
            rundir.close()
            print(
                f"error: {exc}; the judgements made are kept: rerun the same command later", file=sys.stderr
            )
            return 1
        # config.yaml next to each metrics.json says what produced it: the run's config (which made the
        # answers) with the judge section of this judge.
        produced = OmegaConf.load(config_file)
        produced.judge = cfg.judge
        atomic_write(
            rundir.file(f"{subdir}/config.yaml" if subdir else "config.yaml"), OmegaConf.to_yaml(produced)
        )
        manifest = rundir.manifest()
        judges = {**manifest.get("judges", {}), subdir or ".": spec.config["judge"]}
        kept = {"reason": manifest["reason"]} if "reason" in manifest else {}  # the run's own story stays
        status = RunState.of(manifest.get("status")) or RunState.COMPLETE
        rundir.finish(status, judges=judges, **kept)
        rundir.close()
        print_summary(outcome, rundir, file=sys.stdout, client=client)
        if subdir:
            print(
                f"this judge's metrics: {rundir.file(subdir)} (the run's own judge's are left as they were)"
            )
        return 0
    finally:
        await client.aclose()
