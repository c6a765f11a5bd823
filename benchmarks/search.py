"""`bench search`: local search time (excluding network) at LOCOMO scale, in the run and isolated.

In the run: `local_search_s` in predictions.jsonl, under the run's own concurrency. Isolated: a fresh
process rebuilds the system from the run's config and final stores and retrieves for each question, one
at a time, against a zero-latency stand-in with the cache off.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.runs import local_search_s, measure_run, read_jsonl
from benchmarks.settings import (
    BENCH_KEY,
    BENCH_KEY_ENV,
    REPO,
    BenchContext,
    BenchError,
    harness_env,
    search_target_ms,
)
from benchmarks.standin import Standin
from benchmarks.stats import check, summary_ms


async def isolated_search(run_dir: Path, base_url: str) -> list[float]:
    """Re-run each question's retrieval on the run's final stores, one question at a time (no other work
    in the event loop): local_search_s per question."""
    import yaml

    from mem0bench.data import load_dataset
    from mem0bench.pipeline.experiment import build_client, build_system
    from mem0bench.pipeline.spec import ExperimentSpec
    from mem0bench.rundir.directory import RunDirectory

    config = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    config["cache"]["enabled"] = False
    config["llm"].update(base_url=base_url, api_key_env=BENCH_KEY_ENV)
    spec = ExperimentSpec.from_mapping(config)
    os.environ.setdefault(BENCH_KEY_ENV, BENCH_KEY)
    rows = read_jsonl(run_dir / "predictions.jsonl")
    wanted = {r["qid"] for r in rows}
    data = load_dataset(str(spec.scope.path), conversations=sorted({r["conversation"] for r in rows}))
    client = build_client(spec)
    try:
        system = build_system(spec.system, client, RunDirectory(run_dir))
        pairs = [(c, q) for c in data.conversations for q in c.questions if q.qid in wanted]
        if pairs:  # warm-up, not recorded: the tokenizer, the HTTP connection, first-use imports
            await system.retrieve(*pairs[0])
        out = []
        for conversation, question in pairs:
            context = await system.retrieve(conversation, question)
            if context.local_search_s is not None:
                out.append(context.local_search_s)
        aclose, close = getattr(system, "aclose", None), getattr(system, "close", None)
        if aclose is not None:
            await aclose()
        elif close is not None:
            close()
        return out
    finally:
        await client.aclose()


def serve_isolated(argv: list[str]) -> int:
    """Hidden subcommand `isolated RUN_DIR BASE_URL` -> one JSON list of local_search_s on stdout."""
    run_dir, base_url = Path(argv[0]), argv[1]
    print(json.dumps(asyncio.run(isolated_search(run_dir, base_url))))
    return 0


def search_figures(ctx: BenchContext, run_dir: Path, method: str) -> dict[str, Any]:
    """In-run and isolated local search of one finished run, against the method's target."""
    in_run = local_search_s(read_jsonl(run_dir / "predictions.jsonl"))
    # A process of its own: a fresh interpreter, no state left over from the run.
    with Standin(0.0, ctx.out / f"search-{method}-standin.log") as standin:
        argv = [sys.executable, "-m", "benchmarks", "isolated", str(run_dir), standin.base_url]
        done = subprocess.run(
            argv, cwd=REPO, env=harness_env(standin.base_url, ctx.out / f"search-{method}-cache", ctx.env),
            capture_output=True, text=True, timeout=3600,
        )  # fmt: skip
    if done.returncode != 0:
        raise BenchError(f"isolated search on {run_dir} failed:\n{done.stderr[-2000:]}")
    isolated = json.loads(done.stdout.strip().splitlines()[-1])
    target = search_target_ms(method)
    in_run_ms, isolated_ms = summary_ms(in_run), summary_ms(isolated)
    result: dict[str, Any] = {
        "method": method, "run_dir": str(run_dir), "in_run_ms": in_run_ms, "isolated_ms": isolated_ms,
        "checks": [
            check(f"{method} local search p95, in run (ms)", in_run_ms["p95"], "<=", target),
            check(f"{method} local search p95, isolated (ms)", isolated_ms["p95"], "<=", target),
        ],
    }  # fmt: skip
    return result


def bench_search(
    ctx: BenchContext,
    *,
    methods: Sequence[str] = ("mem0", "mem0g"),
    runs: dict[str, Path] | None = None,
    conversations: Sequence[str] | None = None,
    max_questions: int | None = None,
) -> dict[str, Any]:
    """Search figures for each method, from `runs` where given, else from a fresh full run (judge.runs=1)."""
    runs = dict(runs or {})
    result: dict[str, Any] = {"command": "search", "methods": {}}
    for method in methods:
        run_dir = runs.get(method)
        if run_dir is None:
            ctx.say(f"[search {method}] full run against a zero-latency stand-in (judge.runs=1)")
            with Standin(0.0, ctx.out / f"search-{method}-run-standin.log") as standin:
                run = measure_run(
                    ctx, f"search-{method}", method, standin, conversations=conversations,
                    max_questions=max_questions, judge_runs=1,
                )  # fmt: skip
            run_dir = Path(run["run_dir"])
        ctx.say(f"[search {method}] isolated retrieval on {run_dir}")
        result["methods"][method] = search_figures(ctx, run_dir, method)
    result["checks"] = [c for m in result["methods"].values() for c in m["checks"]]
    return result
