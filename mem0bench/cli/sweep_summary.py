"""The screen a sweep (`run -m ...`) ends with: one line per job with what it varied, its status and J.

Each job prints its own summary as it ends, and with a dozen jobs those scroll away. Hydra calls
`SweepSummary.on_multirun_end` in the launching process once every job has returned, whatever the launcher
(jobs run by joblib or submitit live in other processes), so the summary is read from the job folders:
run.json (status, and why a job failed), metrics.json (J) and heartbeat.json (the job's overrides). It
is registered in configs/run.yaml under hydra.callbacks.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from mem0bench.common.text import one_line
from mem0bench.rundir.find import find_run_dirs
from mem0bench.rundir.heartbeat import HeartbeatInfo
from mem0bench.rundir.status import RunState

__all__ = ["SweepSummary", "sweep_summary"]

MAX_JOBS_SHOWN = 30
"""Beyond this the screen would scroll: the rest are counted, and `status` shows them all."""
REASON_CHARS = 70


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _varied(overrides: list[list[str] | None]) -> list[list[str]]:
    """Each job's overrides that not every job shares (the swept values), in the job's order. A job that
    stopped before its heartbeat (None: overrides unknown) shows none and leaves the others' unchanged."""
    known = [set(o) for o in overrides if o is not None]
    shared = set.intersection(*known) if known else set()
    return [[o for o in job if o not in shared] if job is not None else [] for job in overrides]


def sweep_summary(sweep_dir: Path) -> str:
    """The summary block for the jobs under `sweep_dir` ('' when none)."""
    # Imported here, not at the top: Hydra builds this callback before every run, sweep or not, and the
    # report package brings pandas and matplotlib (over a second of CPU before a run's first request).
    from mem0bench.report.tables import fmt_judge

    jobs = find_run_dirs(sweep_dir) if sweep_dir.is_dir() else []
    if not jobs:
        return ""
    beats = [HeartbeatInfo.read(job) for job in jobs]
    varied = _varied([b.overrides if b else None for b in beats])
    rows: list[tuple[str, str, str, str]] = []
    statuses: Counter[str] = Counter()
    for job, changes in zip(jobs, varied):
        manifest = _read(job / "run.json")
        status = str(manifest.get("status") or "not started")
        statuses[status] += 1
        metrics = _read(job / "metrics.json")
        judge = (metrics.get("overall") or {}).get("judge") if metrics else None
        j = fmt_judge(judge) if metrics else "-"
        what = " ".join(changes) or "-"
        if status != RunState.COMPLETE and manifest.get("reason"):
            reason = one_line(str(manifest["reason"]))
            what += f"  ({reason[:REASON_CHARS]}{'...' if len(reason) > REASON_CHARS else ''})"
        rows.append((str(job.relative_to(sweep_dir)), status, j, what))
    counts = ", ".join(f"{n} {status}" for status, n in statuses.most_common())
    lines = [f"sweep {sweep_dir}: {len(jobs)} jobs, {counts}"]
    width = [max(len(r[i]) for r in [("job", "status", "J (%)", ""), *rows]) for i in range(3)]
    lines.append(f"  {'job':<{width[0]}}  {'status':<{width[1]}}  {'J (%)':>{width[2]}}  varied")
    for job_name, status, j, what in rows[:MAX_JOBS_SHOWN]:
        lines.append(f"  {job_name:<{width[0]}}  {status:<{width[1]}}  {j:>{width[2]}}  {what}")
    if len(rows) > MAX_JOBS_SHOWN:
        lines.append(f"  ... and {len(rows) - MAX_JOBS_SHOWN} more: python -m mem0bench status {sweep_dir}")
    lines.append(f"tables and plots: python -m mem0bench report {sweep_dir} --out DIR")
    return "\n".join(lines)


class SweepSummary(Callback):
    """Prints `sweep_summary` when a multirun ends (configs/run.yaml: hydra.callbacks.sweep_summary)."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        text = sweep_summary(Path(str(config.hydra.sweep.dir)))
        if text:
            print(text, file=sys.stderr, flush=True)
