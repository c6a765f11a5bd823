"""`report --baseline RUN`: each run's paired J difference against a chosen baseline run, as a column."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mem0bench.report.collect import ReportError, RunSummary

__all__ = ["baseline_column"]


def baseline_column(runs: Sequence[RunSummary], baseline: Path) -> tuple[str, list[str]]:
    """(column name, one cell per run): 'ΔJ [lo, hi] (n)' in points, paired over the questions the run and
    the baseline share (as `compare --intersect`) and both judged (n); '-' for the baseline itself."""
    from mem0bench.comparison.compare import CompareError, compare_pairs, pair_rows
    from mem0bench.pipeline.statistics import BootstrapSettings
    from mem0bench.rundir.schema import SchemaError, read_predictions

    try:
        base_rows = read_predictions(baseline / "predictions.jsonl")
        cells = []
        for run in runs:
            if run.path.resolve() == baseline.resolve():
                cells.append("baseline")
                continue
            pairing = pair_rows(base_rows, read_predictions(run.path / "predictions.jsonl"), intersect=True)
            judge = compare_pairs(pairing, BootstrapSettings())["overall"]["judge"]
            if judge["delta"] is None:
                cells.append("-")
                continue
            if judge["ci95"] is None:  # too few shared questions for an interval (compare.py says why)
                cells.append(f"{100 * judge['delta']:+.2f} [too few] (n={judge['n']})")
                continue
            lo, hi = judge["ci95"]
            cells.append(f"{100 * judge['delta']:+.2f} [{100 * lo:+.2f}, {100 * hi:+.2f}] (n={judge['n']})")
    except (SchemaError, CompareError) as exc:
        raise ReportError(f"--baseline: {exc}") from None
    return f"ΔJ vs {baseline.name} (95% CI, paired)", cells
