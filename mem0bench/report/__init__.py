"""Tables and plots built only from run directories (metrics.json, config.yaml, run.json)."""

from mem0bench.report.collect import (
    ReportError,
    RunSummary,
    find_results,
    load_run,
    load_runs,
    run_label,
    varying_hyperparameters,
)
from mem0bench.report.plots import plot_judge_by_category, plot_judge_vs_latency
from mem0bench.report.tables import table1, table2, write_table

__all__ = [
    "ReportError",
    "RunSummary",
    "find_results",
    "load_run",
    "load_runs",
    "plot_judge_by_category",
    "plot_judge_vs_latency",
    "run_label",
    "table1",
    "table2",
    "varying_hyperparameters",
    "write_table",
]
