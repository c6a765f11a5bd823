"""`python -m mem0bench report PATH... --out DIR [--labels official|paper]`: tables, plots and a
self-contained report.html from run directories (and sweep directories holding them)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from mem0bench.cli.examples import with_examples
from mem0bench.report.collect import ReportError, find_unfinished, load_runs
from mem0bench.report.html import write_html
from mem0bench.report.identity import RUNS_CAPTION, runs_table
from mem0bench.report.judge_checks import DEFAULT_DIR, find_judge_checks
from mem0bench.report.notices import report_warnings, unfinished_warnings
from mem0bench.report.paired import baseline_column
from mem0bench.report.plots import plot_judge_by_category, plot_judge_vs_latency
from mem0bench.report.published import load_published
from mem0bench.report.tables import (
    MISSING,
    PAPER_CAPTION,
    SETTINGS_CAPTION,
    TABLE2_CAPTION,
    settings_table,
    table1,
    table1_caption,
    table2,
    to_markdown,
    write_table,
)

__all__ = ["report_main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ReportError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mem0bench report",
        description="Build Table 1, Table 2 and the plots from run directories (or sweeps holding them).",
        **with_examples("report"),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="run directories or sweep directories")
    parser.add_argument(
        "--out", required=True, type=Path, help="folder for the tables, the plots and report.html"
    )
    parser.add_argument(
        "--labels",
        choices=("official", "paper"),
        default="official",
        help="'paper' also writes table1_paper_labels.* in the Mem0 paper's (non-LOCOMO) category labels",
    )
    parser.add_argument("--baseline", type=Path, help="a run: add each run's paired J difference against it")
    parser.add_argument(
        "--judge-check",
        type=Path,
        action="append",
        metavar="PATH",
        help="judge_check.json files or folders holding them (default: results/judge-check of the current folder, where judge-check writes, when it exists): "
        "Table 1 shows each run judge's vague-answer false-accept rate next to J",
    )
    parser.add_argument(
        "--published",
        action="store_true",
        help="add published LOCOMO results to Table 1, marked 'published, not measured here'",
    )
    return parser


def report_main(argv: Sequence[str] | None = None) -> int:
    """Run the report; 0 on success, 2 on any input/output error (one line on stderr)."""
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        unfinished = find_unfinished(args.paths)  # failed runs and sweep jobs are named and listed
        try:
            runs = load_runs(args.paths)
            if not runs:
                raise ReportError(
                    "no finished run among the paths given (the unfinished ones are named above)"
                )
        except ReportError:
            for line in unfinished_warnings(unfinished):
                print(f"warning: {line}", file=sys.stderr)
            raise
        warnings = report_warnings(unfinished, runs)  # the same list heads report.html
        for line in warnings:
            print(f"warning: {line}", file=sys.stderr)
        out: Path = args.out
        published = load_published() if args.published else []
        check_paths = args.judge_check or ([DEFAULT_DIR] if DEFAULT_DIR.is_dir() else [])
        checks = find_judge_checks(check_paths) if check_paths else None
        t0, t2 = runs_table(runs, unfinished=unfinished), table2(runs)
        settings = settings_table(runs)
        t1 = table1(runs, published=published, judge_checks=checks)
        t1_numbers = table1(runs, numeric=True, published=published, judge_checks=checks)
        if args.baseline is not None:  # paired over our runs only: a published row has nothing to pair
            name, cells = baseline_column(runs, args.baseline)
            t1[name] = [*cells, *[MISSING] * len(published)]
        caption1 = table1_caption(runs, published=bool(published))
        written = write_table(
            t0, out, "runs", RUNS_CAPTION, numbers=runs_table(runs, numeric=True, unfinished=unfinished)
        )
        written += write_table(t1, out, "table1", caption1, numbers=t1_numbers)
        written += write_table(t2, out, "table2", TABLE2_CAPTION, numbers=table2(runs, numeric=True))
        written += write_table(settings, out, "settings", SETTINGS_CAPTION)
        # Scores first: a reader finds the runs' settings and folders below them.
        print(to_markdown(t1, caption1))
        print(to_markdown(t2, TABLE2_CAPTION))
        print(to_markdown(settings, SETTINGS_CAPTION))
        print(to_markdown(t0, RUNS_CAPTION))
        if args.labels == "paper":
            t1p = table1(runs, labels="paper", published=published, judge_checks=checks)
            numbers = table1(runs, labels="paper", numeric=True, published=published, judge_checks=checks)
            written += write_table(t1p, out, "table1_paper_labels", PAPER_CAPTION, numbers=numbers)
            print(to_markdown(t1p, PAPER_CAPTION))
        plots = [
            plot_judge_by_category(runs, out / "judge_by_category.png"),
            plot_judge_vs_latency(runs, out / "judge_vs_latency.png"),
        ]
        written += plots
        tables = [(caption1, t1), (TABLE2_CAPTION, t2)]
        if args.labels == "paper":
            tables.append((PAPER_CAPTION, t1p))
        tables += [(SETTINGS_CAPTION, settings), (RUNS_CAPTION, t0)]
        written.append(write_html(runs, out, tables, plots, warnings=warnings))
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"{len(runs)} run(s); wrote:")
    for path in written:
        print(f"  {path}")
    return 0
