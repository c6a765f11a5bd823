"""`bench chain`: ingest wall against its chain bound, with and without lookahead, at a latency stand-in.

For each `method.lookahead` (0: pair by pair; default: the config's) one run of the method against a
stand-in answering each call after `latency_ms`, with one question per conversation and one judge run
(the ingest stage is what is measured). The figures are run.json `timing.ingest`: its wall, its calls,
and its chain bound (the longest stream's sequential chain at the latencies this run measured, see
`mem0bench.pipeline.stage_timing`). wall / chain bound near 1 is as fast as the system's dependencies
allow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.runs import measure_run, run_timing
from benchmarks.settings import BenchContext
from benchmarks.standin import Standin

DEFAULT = "default"


def _lookahead_label(value: str) -> str:
    return f"method.lookahead={value}" if value != DEFAULT else "method.lookahead at its default"


def bench_chain(
    ctx: BenchContext,
    *,
    method: str = "mem0",
    latency_ms: float = 100.0,
    conversations: Sequence[str] | None = None,
    lookaheads: Sequence[str] = ("0", DEFAULT),
    concurrency: int | None = None,
) -> dict[str, Any]:
    """One run per lookahead; -> each run's ingest wall, calls and chain bound."""
    result: dict[str, Any] = {
        "command": "chain", "method": method, "latency_ms": latency_ms, "dataset": str(ctx.dataset),
        "conversations": list(conversations or []), "runs": [],
    }  # fmt: skip
    for value in lookaheads:
        overrides = [*ctx.overrides, *([f"method.lookahead={value}"] if value != DEFAULT else [])]
        label = f"chain-{method}-lookahead-{value}"
        ctx.say(f"[chain {method}] {_lookahead_label(value)}, {latency_ms:g} ms a call")
        with Standin(latency_ms, ctx.out / f"{label}-standin.log") as standin:
            run = measure_run(
                replace(ctx, overrides=overrides), label, method, standin, conversations=conversations,
                max_questions=1, judge_runs=1, concurrency=concurrency,
            )  # fmt: skip
        timing = run_timing(Path(run["run_dir"]))
        ingest = timing["ingest"]
        result["runs"].append(
            {
                "lookahead": value,
                "command": run["command"],
                "process_wall_s": round(run["wall_s"], 1),
                "ingest_wall_s": ingest["wall_s"],
                "ingest_calls": ingest["calls"],
                "chain_bound_s": ingest["chain_bound_s"],
                "chain_calls": ingest["chain_calls"],
                "chain_stream": ingest["chain_stream"],
                "wall_over_chain": round(ingest["wall_s"] / max(ingest["chain_bound_s"], 1e-9), 2),
                "loadavg_1m": run["loadavg_1m"],
                "steal_pct": run["steal_pct"],
            }
        )
    return result


def render_chain(res: dict[str, Any]) -> str:
    """The markdown table of one `chain` result."""
    lines = [
        f"{res['method']}, {res['latency_ms']:g} ms a call, "
        + (", ".join(res["conversations"]) if res["conversations"] else "whole file"),
        "",
        "| lookahead | ingest wall | chain bound | wall / bound | ingest calls | chain calls (stream) |",
        "|---|---|---|---|---|---|",
    ]
    for run in res["runs"]:
        lines.append(
            f"| {run['lookahead']} | {run['ingest_wall_s']:.1f} s | {run['chain_bound_s']:.1f} s "
            f"| {run['wall_over_chain']:.2f} | {run['ingest_calls']:,} "
            f"| {run['chain_calls']:,} ({run['chain_stream']}) |"
        )
    return "\n".join(lines)
