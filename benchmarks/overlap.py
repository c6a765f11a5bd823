"""`bench overlap`: default settings against a stand-in with a fixed latency per call.

calls x latency / wall time says how much of the latency the harness overlaps; `ideal_wall` gives the best
possible for the run's own dependency structure, with the nominal latency and with a bare client's
measured round trip (`roundtrip`).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.runs import measure_run
from benchmarks.settings import OVERLAP_TARGET, REPO, BenchContext, standin_env
from benchmarks.standin import Standin
from benchmarks.stats import check


def ideal_wall(run: dict[str, Any], latency_s: float, method: str) -> dict[str, Any]:
    """A lower bound on the wall time with perfect overlap, given the run's own dependencies.

    * Ingestion: each stream (one per speaker, or one shared) handles its message pairs in order, each
      pair's calls one after another; Mem0^g runs the graph step beside the memory step (2 branches).
      So a conversation's ingestion takes at least (its HTTP calls / (streams x branches)) x latency.
    * Questions: a conversation's questions start when its ingestion ends; each needs at least its search
      calls, the answer and one judge call in sequence (judge runs go in parallel).
    * Capacity: llm.max_concurrency requests at a time, so at least total calls x latency / concurrency.
    The bound is the larger of the longest conversation's path and the capacity bound.
    """
    streams = 2 if run["per_speaker"] else 1
    branches = 2 if "mem0g" in method else 1
    ledger = run["ledger"]
    ingest = ledger.get("ingest", {"calls": 0, "cached": 0})
    work = sum(run["ingest_calls_per_conversation"].values()) or 1
    paid_share = (ingest["calls"] - ingest["cached"]) / work  # cached calls take no time
    n_q = max(run["n_questions"], 1)
    search_calls = ledger.get("search", {}).get("calls", 0)
    chain = math.ceil(search_calls / n_q) + 1 + (1 if run["judge_runs"] else 0)
    paths = {
        sid: (paid_share * calls / (streams * branches) + chain) * latency_s
        for sid, calls in run["ingest_calls_per_conversation"].items()
    }
    capacity = run["http"]["total"] * latency_s / run["max_concurrency"]
    longest = max(paths.values()) if paths else 0.0
    wall = max(longest, capacity)
    return {
        "wall_s": wall,
        "critical_path_s": longest,
        "capacity_bound_s": capacity,
        "parallel_streams": streams * branches * len(paths),
        "question_chain_calls": chain,
        "max_concurrency": run["max_concurrency"],
        "parallelism": run["http"]["total"] * latency_s / wall if wall else None,
    }


def bench_overlap(
    ctx: BenchContext,
    *,
    method: str = "mem0",
    conversations: Sequence[str] = ("conv-26", "conv-30"),
    latency_ms: float = 50.0,
    max_questions: int | None = None,
    judge_runs: int | None = None,
    concurrency: int | None = None,
    startup_run: bool = True,
    calibrate: bool = True,
) -> dict[str, Any]:
    """Default settings against a stand-in with `latency_ms` per call (chat and embeddings alike)."""
    result: dict[str, Any] = {
        "command": "overlap", "method": method, "latency_ms": latency_ms, "dataset": str(ctx.dataset),
        "conversations": list(conversations),
    }  # fmt: skip
    with Standin(latency_ms, ctx.out / f"overlap-{method}-standin.log") as standin:
        if startup_run:
            ctx.say(f"[overlap {method}] startup (dry run)")
            result["startup"] = measure_run(
                ctx, f"overlap-{method}-startup", method, standin, conversations=conversations, dry_run=True
            )
        ctx.say(f"[overlap {method}] full run, {latency_ms:g} ms a call")
        run = measure_run(
            ctx, f"overlap-{method}-full", method, standin, conversations=conversations,
            max_questions=max_questions, judge_runs=judge_runs, concurrency=concurrency,
        )  # fmt: skip
    latency_s = latency_ms / 1000.0
    calls = run["http"]["total"]
    run["overlap"] = calls * latency_s / run["wall_s"]
    startup = result.get("startup", {}).get("wall_s")
    if startup is not None:
        run["overlap_after_startup"] = calls * latency_s / max(run["wall_s"] - startup, 1e-9)
    ideal = ideal_wall(run, latency_s, method)
    run["ideal"] = ideal
    run["achieved_over_ideal"] = ideal["wall_s"] / run["wall_s"]
    if calibrate:
        _calibrate(ctx, run, method, latency_ms)
    result["run"] = run
    result["checks"] = [check("calls x latency / wall", run["overlap"], ">=", OVERLAP_TARGET)]
    return result


def _calibrate(ctx: BenchContext, run: dict[str, Any], method: str, latency_ms: float) -> None:
    """Add the ideal recomputed with what one call really takes here, outside the harness.

    A bare client (the same SDK call the harness makes) in as many parallel chains as the run has ingest
    streams, against a fresh stand-in with the same latency. A failed calibration adds nothing.
    """
    chains = run["ideal"]["parallel_streams"]
    ctx.say(f"[overlap {method}] bare-client round trip, {chains} chains")
    with Standin(latency_ms, ctx.out / f"overlap-{method}-roundtrip-standin.log") as standin:
        argv = [sys.executable, "-m", "benchmarks", "roundtrip", standin.base_url, str(chains), "40"]
        done = subprocess.run(argv, cwd=REPO, env=standin_env(), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return
    rtt = json.loads(done.stdout.strip().splitlines()[-1])
    measured = ideal_wall(run, rtt["mean_s"], method)
    measured["roundtrip_ms"] = {k.replace("_s", ""): v * 1000.0 for k, v in rtt.items()}
    run["ideal_measured_roundtrip"] = measured
    run["achieved_over_ideal_measured"] = measured["wall_s"] / run["wall_s"]
