"""`bench overhead`: one system over the whole file against a zero-latency stand-in.

With no latency to hide behind, the wall time and CPU are the harness's own: CPU per LLM call, peak RSS,
ingestion cost per turn and local search time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.runs import measure_run
from benchmarks.settings import (
    CPU_MS_PER_CALL_TARGET,
    PEAK_RSS_MB_TARGET,
    BenchContext,
    search_target_ms,
)
from benchmarks.standin import Standin
from benchmarks.stats import check


def bench_overhead(
    ctx: BenchContext,
    *,
    method: str = "mem0",
    conversations: Sequence[str] | None = None,
    max_questions: int | None = None,
    judge_runs: int = 1,
    ingest_run: bool = True,
    startup_run: bool = True,
) -> dict[str, Any]:
    """A dry run (startup alone), an ingestion run and the full run, each in a fresh process."""
    result: dict[str, Any] = {
        "command": "overhead", "method": method, "latency_ms": 0.0, "dataset": str(ctx.dataset),
        "conversations": list(conversations or []) or "all", "judge_runs": judge_runs,
    }  # fmt: skip
    with Standin(0.0, ctx.out / f"overhead-{method}-standin.log") as standin:
        if startup_run:
            ctx.say(f"[overhead {method}] startup (dry run: imports, config, dataset; no call)")
            result["startup"] = measure_run(
                ctx, f"overhead-{method}-startup", method, standin, conversations=conversations, dry_run=True
            )
        if ingest_run:
            # `eval.max_questions` must be >= 1: the ingestion run answers and judges one question a
            # conversation (3-4 calls each, next to thousands of ingestion calls).
            ctx.say(f"[overhead {method}] ingestion run (eval.max_questions=1)")
            result["ingest_run"] = measure_run(
                ctx, f"overhead-{method}-ingest", method, standin, conversations=conversations,
                max_questions=1, judge_runs=judge_runs,
            )  # fmt: skip
        ctx.say(f"[overhead {method}] full run: ingest, answer, judge x{judge_runs}")
        full = measure_run(
            ctx, f"overhead-{method}-full", method, standin, conversations=conversations,
            max_questions=max_questions, judge_runs=judge_runs,
        )  # fmt: skip
        result["full_run"] = full
    startup_cpu = result.get("startup", {}).get("cpu_s", 0.0)
    for key in ("full_run", "ingest_run"):
        run = result.get(key)
        if run and run["http"]["total"]:
            run["cpu_ms_per_call"] = 1000.0 * run["cpu_s"] / run["http"]["total"]
            run["cpu_ms_per_call_after_startup"] = (
                1000.0 * (run["cpu_s"] - startup_cpu) / run["http"]["total"]
            )
    result["checks"] = [
        check("harness CPU per LLM call (ms)", full.get("cpu_ms_per_call"), "<=", CPU_MS_PER_CALL_TARGET),
        check("harness peak RSS (MB)", full["peak_rss_mb"], "<=", PEAK_RSS_MB_TARGET),
        check("local search p95 (ms)", full["local_search_ms"]["p95"], "<=", search_target_ms(method)),
    ]
    return result
