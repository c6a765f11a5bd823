"""`mem0bench status PATH...`: where a run (or every run of a sweep) stands, without reading JSONL by hand.

Per stage what is done and what is left, the failures still open, what was paid and what the rest would
cost (the dry-run estimate), whether a process is still working on it, and the command that resumes it.
It only reads the folder, so it is safe on a run that is still going (in another terminal, or on a cluster
node that shares the file system).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from mem0bench.cli.errors import CONFIG_ERROR_EXIT, report_errors
from mem0bench.cli.examples import with_examples
from mem0bench.common.errors import ConfigurationError
from mem0bench.pipeline.stage_timing import timing_line
from mem0bench.rundir.find import RUN_MARKERS, find_run_dirs
from mem0bench.rundir.status import RunState
from mem0bench.rundir.usage import cached_shares
from mem0bench.status.reader import RunStatus, read_status, sweep_resume_command


def status_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mem0bench status",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1],
        **with_examples("status"),
    )
    parser.add_argument("paths", nargs="+", type=Path, help="run directories or sweep folders")
    parser.add_argument("--json", action="store_true", help="one JSON object per run, for scripts")
    args = parser.parse_args(argv)
    return report_errors(lambda: _show(args.paths, as_json=args.json))


def _show(paths: list[Path], *, as_json: bool) -> int:
    for path in paths:
        if not path.is_dir():
            raise ConfigurationError(f"{path}: no such directory")
        if not find_run_dirs(path):
            raise ConfigurationError(
                f"{path}: not a mem0bench run directory (no {', '.join(RUN_MARKERS)} at or below it)"
            )
    code = 0
    for path in paths:
        runs, statuses = [], []
        for run in find_run_dirs(path):
            try:
                statuses.append(read_status(run))
            except (ValueError, OSError, yaml.YAMLError) as exc:  # a damaged file: say which, go on
                print(f"error: {run}: {' '.join(str(exc).split())}", file=sys.stderr)
                code = CONFIG_ERROR_EXIT
                continue
            runs.append(run)
        if as_json:
            for status in statuses:
                print(json.dumps(_jsonable(status), default=str))
            continue
        for status in statuses:
            print(render(status, base=path if len(find_run_dirs(path)) > 1 else None))
        if len(runs) > 1:
            print(render_sweep(path, runs, statuses))
        elif runs and runs[0] != path and (shards := _shards_line(runs)):
            print(shards)  # a sweep of shards with one folder yet: which parts are still to come
        # Once, not under every run of a sweep.
        for note in dict.fromkeys(s.price_note for s in statuses if s.price_note):
            print(f"note: {note}")
    return code


def _jsonable(status: RunStatus) -> dict[str, Any]:
    data = asdict(status)
    del data["part"]  # the text block's shard line; --json has kept to its fields
    data["open_failures"] = [
        {"stage": stage, "kind": kind, "n": n} for (stage, kind), n in status.open_failures.items()
    ]
    data["finished"] = status.finished
    return data


def _count(n: float) -> str:
    return f"{n:,.0f}"


def _stage_line(status: RunStatus, index: int) -> str:
    stage = status.stages[index]
    total = "?" if stage.total is None else _count(stage.total)
    text = f"{_count(stage.done)}/{total} {stage.unit}"
    if stage.remaining:
        text += f", {_count(stage.remaining)} left"
        if stage.left and len(stage.left) <= 10:
            text += ": " + ", ".join(stage.left)
    elif stage.remaining == 0:
        text += ", done"
    seen = status.last_seen
    if seen and stage.remaining:
        done, totals = seen.get("done", {}), seen.get("totals", {})
        if stage.stage in done and stage.stage in totals and done[stage.stage] < totals[stage.stage]:
            unit = seen.get("units", {}).get(stage.stage, "item")
            text += f" (last heartbeat: {done[stage.stage]:,}/{totals[stage.stage]:,} {unit}s)"
    return text


def render(status: RunStatus, base: Path | None = None) -> str:
    """A block of lines a person reads: one per stage, then failures, money, process and resume."""
    name = status.path.relative_to(base) if base is not None else status.path
    lines = [f"{name}  {status.method}  (run.json status: {status.recorded})"]
    if status.part:
        lines.append(f"  shard     {status.part}")
    lines.append(f"  process   {status.process.detail}")
    for i, stage in enumerate(status.stages):
        lines.append(f"  {stage.stage:<9} {_stage_line(status, i)}")
    if status.open_failures:
        total = sum(status.open_failures.values())
        parts = ", ".join(f"{stage}/{kind} {n}" for (stage, kind), n in status.open_failures.items())
        lines.append(f"  failures  {total} open ({parts}); {_failure_advice(status)}")
    else:
        lines.append("  failures  none open")
    processes = f"{status.processes} process" + ("es" if status.processes != 1 else "")
    lines.append(f"  paid      ${status.spent_usd:.4f} over {processes}")
    cached = cached_shares(status.cached_prompt)
    if cached:  # only when the server reported some: every other run's block stays as it was
        lines.append(f"  cached    prompt tokens served from the server's cache: {cached}")
    if status.left is not None:
        lines.append(
            f"  left      about {_count(status.left.calls)} LLM calls, ${status.left.usd:.4f} ({status.left_note})"
        )
    else:
        lines.append(f"  left      {status.left_note}")
    if status.open_batches:
        parts = ", ".join(
            f"{b.batch_id} ({b.stage}, {b.model}, {b.requests:,} requests)" for b in status.open_batches
        )
        lines.append(
            f"  batches   {len(status.open_batches)} open: {parts}; the next command follows them, sending nothing again"
        )
    timing = timing_line(status.timing)
    if timing:  # recorded by the process that finished the run
        lines.append(f"  timing    {timing}")
    lines.append(f"  resume    {_resume_text(status)}")
    return "\n".join(lines)


def _failure_advice(status: RunStatus) -> str:
    """Which open failures the resume command retries and which need run.retry_failed=true (or another
    setting): a cached malformed reply comes back the same on a plain rerun."""
    from mem0bench.llm.types import as_failure_kind
    from mem0bench.pipeline.advice import rerun_advice
    from mem0bench.rundir.records import FailureRecord

    rows = [
        FailureRecord(stage, as_failure_kind(kind), "")
        for (stage, kind), n in status.open_failures.items()
        for _ in range(n)
    ]
    return rerun_advice(rows, retried=False)


def _resume_text(status: RunStatus) -> str:
    if status.finished and status.recorded == RunState.COMPLETE:
        return "nothing left to do"
    if status.resume is None:
        return "the command is not recorded (see run.json `command`); add hydra.run.dir=" + str(status.path)
    if status.process.working:
        return f"a process is working on it; if it stops: {status.resume}"
    return status.resume


def render_sweep(path: Path, runs: list[Path], statuses: list[RunStatus]) -> str:
    finished = sum(1 for s in statuses if s.finished and s.recorded == RunState.COMPLETE)
    working = sum(1 for s in statuses if s.process.working)
    paid = sum(s.spent_usd for s in statuses)
    left = sum(s.left.usd for s in statuses if s.left is not None)
    lines = [
        f"sweep {path}: {len(runs)} runs, {finished} complete, {working} with a process working on it; "
        f"paid ${paid:.4f}, left about ${left:.4f}"
    ]
    command = sweep_resume_command(path, runs)
    if command and finished < len(runs):
        lines.append(f"  resume the whole sweep: {command}")
    shards = _shards_line(runs)
    if shards:
        lines.append(shards)
    return "\n".join(lines)


def _shards_line(runs: list[Path]) -> str | None:
    """For a sweep of shards: which of the N parts have a run folder yet (a job not started has none)."""
    held: dict[int, set[int]] = {}
    for run in runs:
        try:
            shard = json.loads((run / "run.json").read_text(encoding="utf-8")).get("shard")
            held.setdefault(int(shard["of"]), set()).add(int(shard["index"]))
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue  # not a shard (or no run.json yet)
    lines = []
    for of, indexes in sorted(held.items()):
        missing = [f"{k}/{of}" for k in range(1, of + 1) if k not in indexes]
        lines.append(
            f"  shards    {len(indexes)} of {of} have a run folder"
            + (f"; not started: {', '.join(missing)}" if missing else "; merge them when all are complete")
        )
    return "\n".join(lines) or None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(status_main(sys.argv[1:]))
