"""`mem0bench data ...`: dataset statistics and download.

    mem0bench data stats [--suite NAME] [--path FILE] [--host-path FILE] [--mode MODE] [--json]
    mem0bench data download [--dir DIR] [--suite NAME]

Without ``--path``, ``stats`` reads ``locomo10.json`` in the per-user data folder (``$MEM0BENCH_DATA_DIR``,
else ``~/.local/share/mem0bench``; see ``mem0bench.paths``), downloading it (sha256-checked) if it is
missing. ``stats --suite NAME`` loads another suite as a run would (its file in the data folder, fetched
if missing, or ``--path``) and prints its counts: questions per category beside the release's, and per
conversation (one per question in LongMemEval) sessions, turns, evidence and estimated tokens; LOCOMO's
output is the same with or without ``--suite locomo``. ``download --suite NAME`` fetches the files of a suite (`mem0bench.suites`: locomo, locomo_plus,
longmemeval_s, longmemeval_m, longmemeval_oracle), printing each file's source, the licence the source
states (or that it states none), its path and sha256. Dataset problems print ``error: <one line>`` on
stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mem0bench.cli.examples import with_examples
from mem0bench.data.download import download_locomo, file_sha256, resolve_dataset_path
from mem0bench.data.errors import DatasetError
from mem0bench.data.loader import load_dataset
from mem0bench.data.stats import dataset_stats, format_stats_table, format_suite_stats, suite_stats
from mem0bench.paths import data_home
from mem0bench.suites import SUITES, DatasetRequest, get_suite, import_suite_module
from mem0bench.suites.files import fetch_source
from mem0bench.suites.locomo_plus import MODES

DEFAULT_DATA_DIR = data_home()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mem0bench data",
        description="Dataset tools: LOCOMO's and the other suites'.",
        **with_examples("data"),
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{stats,download}")

    stats = sub.add_parser(
        "stats", help="counts, categories and token sizes of a suite's dataset (LOCOMO's by default)"
    )
    stats.add_argument(
        "--path",
        metavar="FILE",
        default=None,
        help=f"a LOCOMO JSON file (default: {DEFAULT_DATA_DIR / 'locomo10.json'}, downloaded if missing)",
    )
    stats.add_argument("--json", action="store_true", help="print the statistics as JSON")
    stats.add_argument(
        "--suite", default="locomo", metavar="NAME", help=f"one of {', '.join(SUITES)} (default: locomo)"
    )
    stats.add_argument(
        "--module",
        metavar="MODULE",
        default=None,
        help="a suite module of one's own to import first (run from its folder), e.g. pantry_suite",
    )
    stats.add_argument(
        "--host-path",
        metavar="FILE",
        default=None,
        help="locomo_plus: the LOCOMO file of the host conversations",
    )
    stats.add_argument(
        "--mode",
        default="faithful",
        choices=MODES,
        help="locomo_plus: how cues are stitched (default: faithful)",
    )
    stats.add_argument(
        "--scale", default=None, metavar="SCALE", help="beam: 100K, 500K, 1M or 10M (default: 100K)"
    )
    stats.add_argument(
        "--no-captions",
        action="store_true",
        help="count tokens without the image captions folded into the turns' text",
    )

    download = sub.add_parser(
        "download", help="download a suite's files (LOCOMO's by default) and check them"
    )
    download.add_argument(
        "--dir",
        metavar="DIR",
        default=str(DEFAULT_DATA_DIR),
        help=f"destination folder (default: {DEFAULT_DATA_DIR})",
    )
    download.add_argument(
        "--suite", default=None, metavar="NAME", help=f"one of {', '.join(SUITES)}; shows each file's licence"
    )
    return parser


def data_main(argv: list[str]) -> int:
    """Run ``mem0bench data`` with ``argv`` (the arguments after ``data``); returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2), already printed
        return e.code if isinstance(e.code, int) else 2
    try:
        if args.command == "stats" and args.suite != "locomo":
            return _suite_stats(args)
        if args.command == "stats":
            path = resolve_dataset_path(args.path, data_home(), option="--path FILE")
            stats = dataset_stats(load_dataset(path, fold_captions=not args.no_captions))
            stats = {"path": str(path), **stats}
            if args.json:
                print(json.dumps(stats, indent=2))
            else:
                print(f"dataset  {path}")
                print(format_stats_table(stats))
        elif args.suite is None:  # the original command: one line, the path of locomo10.json
            dest = download_locomo(Path(args.dir).expanduser())
            print(dest)
        else:
            return _download_suite(args.suite, Path(args.dir).expanduser())
    except DatasetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _suite_stats(args: argparse.Namespace) -> int:
    """`stats --suite NAME` for a suite other than LOCOMO (whose table stays `format_stats_table`'s)."""
    try:
        if args.module:
            import_suite_module(args.module)
        suite = get_suite(args.suite)
    except ValueError as exc:
        print(f"error: --suite: {exc}", file=sys.stderr)
        return 2
    request = DatasetRequest(
        path=args.path,
        data_dir=data_home(),
        fold_captions=not args.no_captions,
        host_path=args.host_path,
        mode=args.mode,
        scale=args.scale,
    )
    stats = suite_stats(
        suite.load(request),
        title=suite.title,
        categories=suite.categories,
        release=suite.expected_counts,
        release_note=suite.counts_note,
    )
    if args.json:
        print(json.dumps(stats.as_dict(), indent=2))
    else:
        print(f"dataset  {stats.path}")
        print(format_suite_stats(stats))
    return 0


def _download_suite(name: str, folder: Path) -> int:
    try:
        suite = get_suite(name)
    except ValueError as exc:
        print(f"error: --suite: {exc}", file=sys.stderr)
        return 2
    if not suite.sources:  # BEAM: a repository folder or the hub's dataset, fetched by the user
        print(
            f"error: --suite {name}: the harness downloads none of its files; {suite.download_hint}",
            file=sys.stderr,
        )
        return 2
    for source in suite.sources:
        print(f"{source.filename}  from {source.url}")
        print(f"  licence: {source.licence}")
        path = fetch_source(source, folder)
        pinned = "checked against the pinned sha256" if source.sha256 else "recorded (the source pins none)"
        print(f"  {path}\n  sha256 {file_sha256(path)} ({pinned})")
    if suite.notes:
        print(f"note: {suite.notes}")
    return 0


if __name__ == "__main__":
    sys.exit(data_main(sys.argv[1:]))
