"""`python -m benchmarks targets` and `python -m benchmarks cpu`: issue 18's latency targets, and the
harness's CPU per request for every system.

targets: `+exp=mem0` on one conversation at a 0 ms stand-in twice (the default `llm.max_concurrency`, then
1), once at a 50 ms stand-in, and `+exp=mem0g` at 0 ms; each run's isolated latency pass
(`eval.latency=isolated`, latency.jsonl) gives the figures:

* mem0's isolated search p50 at the default concurrency within 2x of its search run alone (the inline
  p50 of the `llm.max_concurrency=1` run, where nothing else is in flight);
* mem0's isolated search p50 at 50 ms between 50 and 60 ms (one embedding call);
* mem0g's isolated local search p95 (search time minus time in HTTP requests) at most 5 ms.

cpu: each system on a small LOCOMO subset (the first sessions of one conversation, the questions whose
evidence lies in them) against the stand-in, with the library's reply formats where it parses free
text (devtools/standin/<system>_replies.py); the harness's CPU (kernel accounting of the run process) over
the HTTP requests the stand-in served, and the same with a dry run's CPU (imports, config) taken off.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.runs import measure_run, read_jsonl, run_command, shown
from benchmarks.settings import BenchContext, BenchError
from benchmarks.standin import Standin, load_handler
from benchmarks.startup import Clock, measure_argv
from benchmarks.stats import check, checks_table, summary_ms

ISOLATED_VS_ALONE = 2.0  # isolated p50 at the default concurrency / inline p50 at concurrency 1
P50_AT_50MS = (50.0, 60.0)
MEM0G_LOCAL_P95_MS = 5.0

# The stand-in's reply formats for libraries that parse free text (the rest take its default replies).
HANDLERS = {
    "mem0_oss": "devtools.standin.mem0_oss_replies:mem0_handler()",
    "langmem": "devtools.standin.langmem_replies:reply",
    "amem": "devtools.standin.amem_replies:amem_replies",
}
CPU_SYSTEMS = "mem0,mem0g,rag,full_context,chatgpt_memory_emulation,mem0_oss,zep_graphiti,langmem,amem"


def _latency_ms(run_dir: Path) -> dict[str, Any]:
    """Isolated (latency.jsonl) and inline (predictions.jsonl) search figures of a finished run, in ms."""
    isolated = read_jsonl(run_dir / "latency.jsonl")
    inline = read_jsonl(run_dir / "predictions.jsonl")
    return {
        "isolated_search_ms": summary_ms([r["search_s"] for r in isolated if r.get("search_s") is not None]),
        "isolated_local_ms": summary_ms([r["local_s"] for r in isolated if r.get("local_s") is not None]),
        "inline_search_ms": summary_ms(
            [r["search_latency_s"] for r in inline if r.get("search_latency_s") is not None]
        ),
        "inline_local_ms": summary_ms(
            [r["local_search_s"] for r in inline if r.get("local_search_s") is not None]
        ),
    }


def _p50(figures: dict[str, Any], key: str) -> float | None:
    summary = figures.get(key)
    return None if not summary else summary.get("p50")


def bench_targets(
    ctx: BenchContext, *, conversation: str, max_questions: int | None, judge_runs: int = 1
) -> dict[str, Any]:
    """The four runs and the three checks (see the module's docstring)."""
    runs: dict[str, dict[str, Any]] = {}
    with Standin(0.0, ctx.out / "targets-standin-0ms.log") as zero:
        for label, method, concurrency in (
            ("targets-mem0-0ms", "mem0", None),
            ("targets-mem0-0ms-c1", "mem0", 1),
            ("targets-mem0g-0ms", "mem0g", None),
        ):
            ctx.say(f"targets: {label} ...")
            run = measure_run(
                ctx, label, method, zero, conversations=[conversation], max_questions=max_questions,
                judge_runs=judge_runs, concurrency=concurrency,
            )  # fmt: skip
            runs[label] = {**run, **_latency_ms(Path(run["run_dir"]))}
    with Standin(50.0, ctx.out / "targets-standin-50ms.log") as slow:
        ctx.say("targets: targets-mem0-50ms ...")
        run = measure_run(
            ctx, "targets-mem0-50ms", "mem0", slow, conversations=[conversation], max_questions=max_questions,
            judge_runs=judge_runs,
        )  # fmt: skip
        runs["targets-mem0-50ms"] = {**run, **_latency_ms(Path(run["run_dir"]))}
    iso = _p50(runs["targets-mem0-0ms"], "isolated_search_ms")
    alone = _p50(runs["targets-mem0-0ms-c1"], "inline_search_ms")
    ratio = iso / alone if iso is not None and alone else None
    at50 = _p50(runs["targets-mem0-50ms"], "isolated_search_ms")
    g = runs["targets-mem0g-0ms"].get("isolated_local_ms") or {}
    checks = [
        check("mem0 isolated search p50 (default concurrency) / inline p50 alone (concurrency 1), 0 ms",
              ratio, "<=", ISOLATED_VS_ALONE),
        check("mem0 isolated search p50 at a 50 ms stand-in (ms), low bound", at50, ">=", P50_AT_50MS[0]),
        check("mem0 isolated search p50 at a 50 ms stand-in (ms), high bound", at50, "<=", P50_AT_50MS[1]),
        check("mem0g isolated local search p95 (ms)", g.get("p95"), "<=", MEM0G_LOCAL_P95_MS),
    ]  # fmt: skip
    return {"command": "targets", "conversation": conversation, "runs": runs, "checks": checks}


# ---- CPU per request --------------------------------------------------------------------------------
def subset_file(dataset: Path, out: Path, conversation: str, sessions: int) -> Path:
    """`conversation`'s first `sessions` sessions and the questions whose evidence all lies in them, as a
    LOCOMO file of its own (so every system ingests and answers the same small piece)."""
    data = json.loads(dataset.read_text(encoding="utf-8"))
    sample = next((s for s in data if s.get("sample_id") == conversation), None)
    if sample is None:
        raise BenchError(f"{dataset}: no conversation {conversation!r}")
    keep = {f"session_{i}" for i in range(1, sessions + 1)}
    conv = {
        k: v for k, v in sample["conversation"].items()
        if not k.startswith("session_") or k.removesuffix("_date_time") in keep
    }  # fmt: skip

    def inside(qa: dict[str, Any]) -> bool:
        evidence = qa.get("evidence") or []
        return bool(evidence) and all(
            str(e).startswith("D") and str(e)[1:].split(":")[0] in {str(i) for i in range(1, sessions + 1)}
            for e in evidence
        )

    trimmed = {**sample, "conversation": conv, "qa": [qa for qa in sample["qa"] if inside(qa)]}
    for key in ("event_summary", "observation", "session_summary"):
        trimmed.pop(key, None)
    path = out / f"{conversation}-{sessions}sessions.json"
    path.write_text(json.dumps([trimmed]), encoding="utf-8")
    return path


def bench_cpu(
    ctx: BenchContext, *, systems: Sequence[str], conversation: str, sessions: int, max_questions: int | None
) -> dict[str, Any]:
    """CPU per HTTP request for each system on the same subset (see the module's docstring)."""
    subset = subset_file(ctx.dataset, ctx.out, conversation, sessions)
    rows: dict[str, dict[str, Any]] = {}
    for system in systems:
        ctx.say(f"cpu: {system} ...")
        work = ctx.out / f"cpu-{system}"
        work.mkdir(parents=True, exist_ok=True)
        argv = run_command(
            system, subset, work / "run", conversations=None, max_questions=max_questions, judge_runs=1,
            concurrency=None, extra=ctx.overrides,
        )  # fmt: skip
        handler = HANDLERS.get(system)
        clock = Clock(load_handler(handler) if handler else None)
        load = os.getloadavg()[0]
        try:  # one system that cannot run (a missing extra, a library's error) must not lose the others
            fig = measure_argv(argv, work, clock, ctx.env)
        except RuntimeError as exc:
            ctx.say(f"cpu: {system} failed: {exc}")
            rows[system] = {"error": str(exc).splitlines()[0]}
            continue
        phase = fig.cpu_s - fig.cpu_to_first_request_s - fig.cpu_after_last_request_s
        rows[system] = {
            **asdict(fig),
            "chat": clock.endpoints.get("chat", 0),
            "embeddings": clock.endpoints.get("embeddings", 0),
            # Between the first request and the last: ingestion, answers, judge, the latency pass.
            "cpu_ms_per_request": 1000 * phase / fig.requests,
            "cpu_ms_per_request_whole_run": 1000 * fig.cpu_s / fig.requests,
            "loadavg_1m": [round(load, 2), round(os.getloadavg()[0], 2)],
            "command": shown(argv),
        }
    return {"command": "cpu", "subset": str(subset), "systems": rows}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:g}%"


def render_targets(res: dict[str, Any]) -> str:
    lines = ["| run | isolated search p50 / p95 (ms) | isolated local p50 / p95 | inline search p50 / p95 "
             "| inline local p50 / p95 | n isolated | load 1m before -> after | CPU steal |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip

    def pair(s: dict[str, Any] | None) -> str:
        return "-" if not s else f"{s['p50']:.2f} / {s['p95']:.2f}"

    for label, run in res["runs"].items():
        iso = run.get("isolated_search_ms") or {}
        lines.append(
            f"| {label} | {pair(iso)} | {pair(run.get('isolated_local_ms'))} | {pair(run.get('inline_search_ms'))} "
            f"| {pair(run.get('inline_local_ms'))} | {iso.get('n', 0)} | {run['loadavg_1m'][0]} -> {run['loadavg_1m'][1]} "
            f"| {_pct(run.get('steal_pct'))} |"
        )
    lines += checks_table(res["checks"])
    return "\n".join(lines)


def render_cpu(res: dict[str, Any]) -> str:
    lines = ["| system | requests (chat / emb.) | wall (s) | CPU (s): before first / between / after last request "
             "| CPU per request between (ms) | CPU per request, whole run (ms) | load 1m |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, r in res["systems"].items():
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error']} |" + " |" * 5)
            continue
        between = r["cpu_s"] - r["cpu_to_first_request_s"] - r["cpu_after_last_request_s"]
        lines.append(
            f"| {name} | {r['requests']} ({r['chat']} / {r['embeddings']}) | {r['wall_s']:.1f} "
            f"| {r['cpu_to_first_request_s']:.2f} / {between:.2f} / {r['cpu_after_last_request_s']:.2f} "
            f"| {r['cpu_ms_per_request']:.2f} | {r['cpu_ms_per_request_whole_run']:.2f} "
            f"| {r['loadavg_1m'][0]} -> {r['loadavg_1m'][1]} |"
        )
    return "\n".join(lines)
