"""`python -m benchmarks ...`: the arguments, the sections to run, and what is printed and saved."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.bridge import bench_bridge, serve_direct
from benchmarks.chain import bench_chain, render_chain
from benchmarks.growth import bench_growth, render_growth
from benchmarks.import_time import import_time_main
from benchmarks.library import bench_library, render_library, serve_library
from benchmarks.machine import cpu_ticks, machine_info, steal_pct
from benchmarks.overhead import bench_overhead
from benchmarks.overlap import bench_overlap
from benchmarks.pacing import bench_pacing, render_pacing
from benchmarks.render import render_markdown, render_text
from benchmarks.roundtrip import serve_roundtrip
from benchmarks.scale import bench_scale, render_scale
from benchmarks.search import bench_search, serve_isolated
from benchmarks.settings import BenchContext, BenchError, default_dataset
from benchmarks.standin import serve_standin
from benchmarks.startup import startup_main
from benchmarks.targets import CPU_SYSTEMS, bench_cpu, bench_targets, render_cpu, render_targets

# The child-process sides of the measurements: not in --help, started by the bench itself.
HIDDEN: dict[str, Callable[[list[str]], int]] = {
    "standin": serve_standin,
    "isolated": serve_isolated,
    "roundtrip": serve_roundtrip,
    "startup": startup_main,  # public, with arguments of its own (see benchmarks/startup.py)
    "import-time": import_time_main,  # public, with arguments of its own (see benchmarks/import_time.py)
    "mem0direct": serve_direct,
    "mem0library": serve_library,
}

# The sections that render their own tables (render_text and render_markdown skip them).
OWN_TABLES: dict[str, Callable[[dict[str, Any]], str]] = {
    "growth": render_growth,
    "targets": render_targets,
    "cpu": render_cpu,
    "library": render_library,
    "chain": render_chain,
    "scale": render_scale,
    "pacing": render_pacing,
}

EXAMPLES = """examples:
  python -m benchmarks all --out /tmp/bench
  python -m benchmarks overhead --method mem0g --conversations conv-26 --json
  python -m benchmarks overlap --latency-ms 100 --concurrency 32
  python -m benchmarks chain --method mem0g --latency-ms 100
  python -m benchmarks bridge --conversation conv-26
  python -m benchmarks library --out /tmp/library
  python -m benchmarks targets --out /tmp/targets
  python -m benchmarks startup --methods mem0,rag --repeat 7 --base ../old-checkout
  python -m benchmarks import-time --base ../old-checkout
  python -m benchmarks cpu --systems mem0,rag,zep_graphiti --sessions 3
  python -m benchmarks growth --methods rag,mem0 --sizes 50,200,500 --out /tmp/growth

  python -m benchmarks pacing --methods rag,mem0 --tpm 60000 --out /tmp/pacing
  python -m benchmarks scale --tokens 1000000,3000000 --methods rag,mem0 --out /tmp/scale"""


def _parser() -> argparse.ArgumentParser:
    """The public subcommands (the hidden ones are dispatched before parsing)."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Harness speed and memory, measured against the local stand-in OpenAI server "
        "(run from the repository checkout).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--dataset", type=Path, default=None, help="locomo10.json (default: the shared copy)")
        sp.add_argument(
            "--out", type=Path, default=None, help="keep run dirs and logs here (default: a temp dir)"
        )
        sp.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
        sp.add_argument(
            "--set", action="append", default=[], metavar="KEY=VALUE",
            help="an extra Hydra override for every run (repeatable)",
        )  # fmt: skip
        sp.add_argument("--no-startup", action="store_true", help="skip the dry-run startup measurement")
        sp.add_argument(
            "--env", action="append", default=[], metavar="KEY=VALUE",
            help="an environment variable for the harness processes (diagnostics; repeatable)",
        )  # fmt: skip

    o = sub.add_parser("overhead", help="whole LOCOMO, zero-latency stand-in: CPU/call, RSS, calls, search")
    common(o)
    o.add_argument("--method", default="mem0", help="experiment name (+exp=...): mem0, mem0g, ...")
    o.add_argument("--conversations", default=None, help="comma-separated sample ids (default: all)")
    o.add_argument("--max-questions", type=int, default=None, help="per conversation (default: all)")
    o.add_argument("--judge-runs", type=int, default=1)
    o.add_argument("--no-ingest-run", action="store_true", help="skip the ingestion-only run")

    v = sub.add_parser(
        "overlap", help="2 conversations, default settings, 50 ms stand-in: calls x latency / wall"
    )
    common(v)
    v.add_argument("--method", default="mem0")
    v.add_argument("--conversations", default="conv-26,conv-30")
    v.add_argument("--latency-ms", type=float, default=50.0)
    v.add_argument("--max-questions", type=int, default=None)
    v.add_argument("--judge-runs", type=int, default=None, help="default: the config's (10)")
    v.add_argument("--concurrency", type=int, default=None, help="default: the config's llm.max_concurrency")

    ch = sub.add_parser(
        "chain", help="ingest wall vs its chain bound at a latency stand-in, lookahead 0 and default"
    )
    common(ch)
    ch.add_argument("--method", default="mem0")
    ch.add_argument("--conversations", default=None, help="comma-separated sample ids (default: all)")
    ch.add_argument("--latency-ms", type=float, default=100.0)
    ch.add_argument("--lookaheads", default="0,default", help="method.lookahead values, 'default' for none")
    ch.add_argument("--concurrency", type=int, default=None, help="default: the config's llm.max_concurrency")

    s = sub.add_parser("search", help="local search time for Mem0 and Mem0^g at LOCOMO scale")
    common(s)
    s.add_argument("--methods", default="mem0,mem0g")
    s.add_argument(
        "--run", action="append", default=[], metavar="METHOD=RUN_DIR",
        help="reuse a finished run instead of running one (repeatable)",
    )  # fmt: skip
    s.add_argument("--conversations", default=None)
    s.add_argument("--max-questions", type=int, default=None)

    b = sub.add_parser("bridge", help="mem0ai directly vs through +exp=mem0_oss: search p50, CPU/request")
    common(b)
    b.add_argument("--conversation", default="conv-26")
    b.add_argument("--max-questions", type=int, default=None, help="default: all of the conversation's")
    t = sub.add_parser(
        "targets", help="issue 18: mem0's isolated search p50 at 0 and 50 ms, mem0g's local p95"
    )
    common(t)
    t.add_argument("--conversation", default="conv-26")
    t.add_argument("--max-questions", type=int, default=None, help="per conversation (default: all)")

    lib = sub.add_parser(
        "library", help="issue 34: +exp=mem0 against mem0's own library, same sitting, at 0 and 100 ms"
    )
    common(lib)
    lib.add_argument("--latencies-ms", default="0,100", help="comma-separated stand-in latencies")
    lib.add_argument("--conversations", default=None, help="comma-separated sample ids (default: all)")
    lib.add_argument("--max-questions", type=int, default=None, help="per conversation (default: all)")
    lib.add_argument("--judge-runs", type=int, default=None, help="ours (default: the config's)")
    lib.add_argument("--no-library-search", action="store_true", help="the library ingests only")

    c = sub.add_parser("cpu", help="harness CPU per HTTP request for every system, on a small subset")
    common(c)
    c.add_argument("--systems", default=CPU_SYSTEMS, help="experiments (+exp=...), comma-separated")
    c.add_argument("--conversation", default="conv-26")
    c.add_argument("--sessions", type=int, default=3, help="the conversation's first N sessions")
    c.add_argument("--max-questions", type=int, default=None)

    g = sub.add_parser(
        "growth",
        help="issue 37: a generated LongMemEval-shaped file at several sizes: CPU/question, RSS, disk",
    )
    common(g)
    g.add_argument("--methods", default="rag,mem0", help="experiments (+exp=...), comma-separated")
    g.add_argument("--sizes", default="50,200,500", help="haystacks (questions), comma-separated")
    g.add_argument("--sessions", type=int, default=50, help="sessions per haystack (LongMemEval_S: ~50)")
    g.add_argument("--turns", type=int, default=2, help="turns per session (LongMemEval_S: ~10)")
    g.add_argument("--words", type=int, default=30, help="words per turn")
    z = sub.add_parser(
        "scale", help="one 1M (3M, 10M) token conversation through rag and mem0 at 0 ms: time, memory, calls"
    )
    common(z)
    z.add_argument("--tokens", default="1000000", help="conversation sizes in tokens, comma-separated")
    z.add_argument("--methods", default="rag,mem0", help="experiments (+exp=...), comma-separated")

    pc = sub.add_parser(
        "pacing", help="issue 35: whole runs under an enforced rate budget: 429 share, budget use, pacer wait"
    )
    common(pc)
    pc.add_argument("--methods", default="rag", help="experiments (+exp=...), comma-separated")
    pc.add_argument("--conversations", default="conv-26", help="comma-separated sample ids")
    pc.add_argument("--rpm", type=int, default=5_000, help="the budget's requests a 'minute'")
    pc.add_argument("--tpm", type=int, default=60_000, help="the budget's tokens a 'minute'")
    pc.add_argument("--window-s", type=float, default=6.0, help="the budget's 'minute' in seconds (60: real)")
    pc.add_argument("--latency-ms", type=float, default=20.0, help="the stand-in's latency a call")
    pc.add_argument("--max-questions", type=int, default=None, help="per conversation (default: all)")
    pc.add_argument("--judge-runs", type=int, default=None, help="default: the config's")

    a = sub.add_parser("all", help="overhead (mem0, mem0g), overlap, search; then a markdown block")
    common(a)
    a.add_argument("--methods", default="mem0,mem0g", help="systems for overhead and search")
    a.add_argument("--overlap-methods", default="mem0,mem0g")
    a.add_argument("--conversations", default=None, help="for overhead/search (default: all)")
    a.add_argument("--max-questions", type=int, default=None, help="for overhead/search")
    a.add_argument("--no-ingest-run", action="store_true")
    a.add_argument("--markdown", type=Path, default=None, help="also write the markdown block to this file")
    return p


def _ids(text: str | None) -> list[str] | None:
    if not text:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def _pairs(items: list[str], flag: str, what: str, *, empty_key: bool = False) -> dict[str, str] | None:
    """`KEY=VALUE` arguments as a dict; None (after an error message) if one is malformed."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not (key or empty_key):
            print(f"error: {flag} wants {what}, got {item!r}", file=sys.stderr)
            return None
        out[key] = value
    return out


class _Report:
    """The results so far; with --out, saved to DIR/bench.json after every section, so partial results
    survive a failed or interrupted one."""

    def __init__(self, machine: dict[str, Any], bench_command: str, save_to: Path | None) -> None:
        self.machine = machine
        self.bench_command = bench_command
        self.save_to = save_to
        self.results: list[dict[str, Any]] = []
        self.errors: list[str] = []

    def section(self, name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        """Run one measurement; a BenchError is recorded and reported, and the next section still runs."""
        try:
            res = fn()
        except BenchError as exc:
            self.errors.append(f"{name}: {exc}")
            print(f"error: {name}: {exc}", file=sys.stderr)
            self.save()
            return None
        self.results.append(res)
        self.save()
        return res

    def save(self) -> None:
        if self.save_to is not None:
            payload = {
                "machine": self.machine,
                "bench_command": self.bench_command,
                "results": self.results,
                "errors": self.errors,
            }
            self.save_to.write_text(json.dumps(payload, indent=2), encoding="utf-8")


def _run_sections(
    args: argparse.Namespace, ctx: BenchContext, report: _Report, runs: dict[str, Path]
) -> None:
    """The measurements `args.command` asks for, each as a section of `report`."""
    startup = not args.no_startup
    if args.command == "overhead":
        report.section("overhead", lambda: bench_overhead(
            ctx, method=args.method, conversations=_ids(args.conversations),
            max_questions=args.max_questions, judge_runs=args.judge_runs,
            ingest_run=not args.no_ingest_run, startup_run=startup,
        ))  # fmt: skip
    elif args.command == "overlap":
        report.section("overlap", lambda: bench_overlap(
            ctx, method=args.method, conversations=_ids(args.conversations) or [],
            latency_ms=args.latency_ms, max_questions=args.max_questions, judge_runs=args.judge_runs,
            concurrency=args.concurrency, startup_run=startup,
        ))  # fmt: skip
    elif args.command == "chain":
        report.section("chain", lambda: bench_chain(
            ctx, method=args.method, latency_ms=args.latency_ms, conversations=_ids(args.conversations),
            lookaheads=_ids(args.lookaheads) or [], concurrency=args.concurrency,
        ))  # fmt: skip
    elif args.command == "search":
        report.section("search", lambda: bench_search(
            ctx, methods=_ids(args.methods) or [], runs=runs, conversations=_ids(args.conversations),
            max_questions=args.max_questions,
        ))  # fmt: skip
    elif args.command == "bridge":
        report.section("bridge", lambda: bench_bridge(
            ctx, conversation=args.conversation, max_questions=args.max_questions,
        ))  # fmt: skip
    elif args.command == "targets":
        report.section("targets", lambda: bench_targets(
            ctx, conversation=args.conversation, max_questions=args.max_questions,
        ))  # fmt: skip
    elif args.command == "library":
        latencies = [float(v) for v in _ids(args.latencies_ms) or []]
        report.section("library", lambda: bench_library(
            ctx, latencies_ms=latencies, conversations=_ids(args.conversations),
            max_questions=args.max_questions, judge_runs=args.judge_runs,
            library_search=not args.no_library_search,
        ))  # fmt: skip
    elif args.command == "growth":
        report.section("growth", lambda: bench_growth(
            ctx, methods=_ids(args.methods) or [], sizes=[int(n) for n in _ids(args.sizes) or []],
            sessions=args.sessions, turns=args.turns, words=args.words,
        ))  # fmt: skip
    elif args.command == "cpu":
        report.section("cpu", lambda: bench_cpu(
            ctx, systems=_ids(args.systems) or [], conversation=args.conversation, sessions=args.sessions,
            max_questions=args.max_questions,
        ))  # fmt: skip
    elif args.command == "pacing":
        report.section("pacing", lambda: bench_pacing(
            ctx, methods=_ids(args.methods) or [], conversations=_ids(args.conversations) or [],
            rpm=args.rpm, tpm=args.tpm, window_s=args.window_s, latency_ms=args.latency_ms,
            max_questions=args.max_questions, judge_runs=args.judge_runs,
        ))  # fmt: skip
    elif args.command == "scale":
        sizes = [int(t.replace("_", "")) for t in _ids(args.tokens) or []]
        report.section("scale", lambda: bench_scale(ctx, tokens=sizes, methods=_ids(args.methods) or []))
    else:  # all: the search figures reuse the overhead runs
        for method in _ids(args.methods) or []:
            res = report.section(f"overhead {method}", partial(
                bench_overhead, ctx, method=method, conversations=_ids(args.conversations),
                max_questions=args.max_questions, judge_runs=1, ingest_run=not args.no_ingest_run,
                startup_run=startup,
            ))  # fmt: skip
            if res is not None:
                runs[method] = Path(res["full_run"]["run_dir"])
        for method in _ids(args.overlap_methods) or []:
            report.section(
                f"overlap {method}", partial(bench_overlap, ctx, method=method, startup_run=startup)
            )
        if runs:
            report.section("search", lambda: bench_search(ctx, methods=list(runs), runs=runs))


def bench_main(argv: list[str]) -> int:
    """`python -m benchmarks ARGS`; 0 when every section ran, 1 if one failed, 2 for bad arguments."""
    if argv[:1] and argv[0] in HIDDEN:
        return HIDDEN[argv[0]](argv[1:])
    args = _parser().parse_args(argv)
    extra_env = _pairs(args.env, "--env", "KEY=VALUE")
    if extra_env is None:
        return 2
    dataset = args.dataset or default_dataset()
    if args.command == "growth":  # generates its own LongMemEval-shaped files
        dataset = dataset or Path(os.devnull)
    elif dataset is None or not Path(dataset).is_file():
        print("error: no LOCOMO file: pass --dataset PATH (locomo10.json)", file=sys.stderr)
        return 2
    dataset = Path(dataset).resolve()
    runs: dict[str, Path] = {}
    if args.command == "search":
        given = _pairs(args.run, "--run", "METHOD=RUN_DIR", empty_key=True)
        if given is None:
            return 2
        runs = {method: Path(path).resolve() for method, path in given.items()}
    if args.out is not None:
        out = args.out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        tmp = None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="mem0bench-bench-")
        out = Path(tmp.name)
    machine = machine_info()
    machine["harness_env"] = dict(extra_env)
    ticks = cpu_ticks()
    bench_command = shlex.join(["python", "-m", "benchmarks", *argv])
    report = _Report(machine, bench_command, out / "bench.json" if tmp is None else None)
    ctx = BenchContext(out=out, dataset=dataset, overrides=args.set, env=extra_env, log=sys.stderr)
    try:
        _run_sections(args, ctx, report, runs)
        machine["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
        machine["steal_pct"] = steal_pct(ticks, cpu_ticks())
        report.save()
        _print(args, report)
        if args.command == "all" and args.markdown is not None:
            args.markdown.write_text(
                render_markdown(report.results, machine, bench_command), encoding="utf-8"
            )
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 1 if report.errors else 0


def _print(args: argparse.Namespace, report: _Report) -> None:
    """The figures on stdout: JSON with --json, else the machine line, the tables (and for `all` the
    markdown block)."""
    machine, results, errors = report.machine, report.results, report.errors
    if args.json:
        checks = [c for r in results for c in r.get("checks", [])]
        print(json.dumps({"machine": machine, "bench_command": report.bench_command, "results": results,
                          "checks": checks, "errors": errors}, indent=2))  # fmt: skip
        return
    print(f"machine: {machine['nproc']} CPUs ({machine['cpu_model']}), {machine['memory_gb']} GB, "
          f"Python {machine['python']}, load {machine['loadavg_1m']} -> {machine['loadavg_1m_end']}, "
          f"CPU steal {machine['steal_pct']}%")  # fmt: skip
    for res in results:  # the issue-18 sections print their own tables (render_text skips them)
        own_table = OWN_TABLES.get(res["command"])
        if own_table is not None:
            print(own_table(res))
    print(render_text(results))
    for error in errors:
        print(f"\nerror: {error}")
    if args.command == "all":
        print("\n---- markdown for docs/benchmarks.md ----\n")
        print(render_markdown(results, machine, report.bench_command))
