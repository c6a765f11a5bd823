"""`mem0bench merge RUN... --out DIR`: the shards of one run (`run.shard=K/N`) as one run folder.

The folder is the run done unsplit: every prediction, judge label and usage figure of every shard, and
metrics.json computed again from the merged rows (every interval the bootstrap over all the questions, with
the run's seed). RUN may be a sweep folder holding the shards (`run -m ... run.shard=1/4,2/4,3/4,4/4`).
Refuses, in one line naming it, shards of different configurations, datasets or judges, and a missing or
doubled shard. `report`, `compare` and `status` read the merged folder like any run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mem0bench.cli.errors import report_errors
from mem0bench.cli.examples import with_examples


def merge_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mem0bench merge", description=__doc__.split("\n")[0].split(": ", 1)[1], **with_examples("merge")
    )
    parser.add_argument("runs", nargs="+", type=Path, help="the shards' run folders, or a sweep folder")
    parser.add_argument("--out", type=Path, required=True, help="the merged run folder (new or empty)")
    args = parser.parse_args(argv)
    return report_errors(lambda: _merge(args.runs, args.out))


def _merge(runs: list[Path], out: Path) -> int:
    from mem0bench.merging import merge_shards  # the aggregation (NLTK): only when merging

    outcome = merge_shards(runs, out)
    metrics = outcome.metrics
    judge = (metrics.get("overall") or {}).get("judge")
    shown = f", J {100 * judge:.2f}" if isinstance(judge, (int, float)) else ""
    print(f"{metrics.get('method')}: {metrics.get('n_questions')} questions merged{shown}")
    print(f"run directory: {out}")
    return 0
