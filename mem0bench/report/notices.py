"""What a reader must know before trusting the report, as one list that the CLI prints and report.html shows.

Runs that never finished (left out of the tables), runs whose status is not complete (partial metrics),
runs that measured different things (not comparable side by side), and runs that departed from the
published profile they were started from.
"""

from __future__ import annotations

from collections.abc import Sequence

from mem0bench.report.collect import RunSummary, UnfinishedRun, short_names
from mem0bench.report.identity import scope_differences
from mem0bench.rundir.status import RunState

__all__ = ["report_warnings", "unfinished_warnings"]


def unfinished_warnings(unfinished: Sequence[UnfinishedRun]) -> list[str]:
    """Folders with a run.json but no metrics.json (failed sweep jobs among them): named, not skipped."""
    return [
        f"{job.path}: {job.status}, no metrics (in the runs table, left out of the others)"
        + (f": {job.reason}" if job.reason else "")
        for job in unfinished
    ]


def report_warnings(unfinished: Sequence[UnfinishedRun], runs: Sequence[RunSummary]) -> list[str]:
    """Every warning of a report, without the 'warning: ' prefix, in the order a reader needs them."""
    out = unfinished_warnings(unfinished)
    for run in runs:
        if run.status not in (None, RunState.COMPLETE):
            out.append(f"{run.path}: run status is {run.status!r}; its metrics may be partial")
    differences = scope_differences(runs)
    if differences:
        out.append("these runs differ in scope, their figures are not comparable: " + "; ".join(differences))
    for name, run in zip(short_names(runs), runs, strict=True):
        profile = run.manifest.get("profile")
        if isinstance(profile, dict) and profile.get("overrides"):
            changed = "; ".join(str(o) for o in profile["overrides"])
            out.append(f"{name} departs from the {profile.get('name')} profile: {changed}")
    return out
