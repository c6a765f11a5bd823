"""`bench pacing`: whole runs under an enforced rate budget (issue 35, item 1's target).

Target: under a budget the run needs, at most 5% of requests answered 429 and at least 85% of the budget
used over the run. Each experiment runs once against a stand-in that enforces a request and token budget
as OpenAI does (429 with `Retry-After`, `x-ratelimit-*` on every reply), over a shortened "minute"
(`--window-s`: the time scale is the only thing changed). The harness has no switch to turn its pacer off,
so every run is paced (its default).

Budget use is what the stand-in charged (prompt tokens plus `max_tokens`, on arrival) from the first
admitted request to the last reply, over what the budget allowed in that span (the full bucket at the start
plus the refill: at most 100%), and over the refill alone, `charged / (rate x span)` (rate: the per-"minute"
figure over the window), which a short run can push past 100% by spending the starting bucket. A run's
last stage, the isolated latency pass, times its calls alone and so cannot fill a budget by design: the
"work stages" figure is the same ratio up to the latency pass's start
(the last reply less run.json `timing.latency.wall_s`; the pass is the run's last stage). Per stage: its
tokens (usage.json, replies' prompt + completion) over the budget across its own span (run.json
`timing`; stages overlap, so these shares are each stage's rate, not parts of one whole). The pacer's wait
is the closing summary's pacing line (summed over requests).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.runs import measure_run, run_timing
from benchmarks.settings import BenchContext, BenchError
from benchmarks.standin import Standin

TARGET_429_SHARE = 0.05
TARGET_USE = 0.85
_PACING_LINE = re.compile(r"pacing: waited ([\d.,]+) s")


def _pacer_wait_s(log: str) -> float | None:
    """The pacer's summed wait from the run's closing summary (None: the run printed no pacing line)."""
    found = _PACING_LINE.findall(Path(log).read_text(encoding="utf-8", errors="replace"))
    return float(found[-1].replace(",", "")) if found else None


def _stage_tokens(run_dir: Path) -> dict[str, int]:
    """Tokens (prompt + completion, every model) per stage, from usage.json's last session."""
    stages = json.loads((run_dir / "usage.json").read_text(encoding="utf-8"))["sessions"][-1]["stages"]
    return {
        name: int(s.get("prompt_tokens", 0)) + int(s.get("completion_tokens", 0))
        for name, s in stages.items()
    }


def _stage_group(usage_stage: str) -> str | None:
    """The run.json `timing` stage a usage.json stage's calls are made in: searches are timed with the
    answers (the latency pass's searches are taken off by time, see `bench_pacing`), the preflight with
    none, everything else (extraction, update, embeddings, ...) with ingest."""
    if usage_stage in ("answer", "search"):
        return "answer"
    if usage_stage == "judge":
        return "judge"
    return None if usage_stage == "preflight" else "ingest"


def _use(tokens: float, limit: float, rate: float, span: float) -> dict[str, float]:
    """Budget use over `span` seconds two ways: over what the budget allowed (the full bucket at the start
    plus the refill: at most 1) and over the refill alone (tokens / (rate x span), which a run shorter than
    a few windows can push above 1 by spending the starting bucket)."""
    return {"allowed": round(tokens / (limit + rate * span), 4), "refill": round(tokens / (rate * span), 4)}


def budget_figures(account: dict[str, Any], timing: dict[str, Any]) -> dict[str, Any]:
    """Budget use over the whole run and over the stages before the latency pass, from the stand-in's
    account (`Standin.budget()`) and run.json `timing`."""
    (_, limit), window_s = account["limits"], float(account["window_s"])
    rate = limit / window_s  # tokens a second
    started, last = account["started"], account["last"]
    if started is None or last is None:
        raise BenchError("the stand-in admitted no request under the budget")
    span = max(last - started, 1e-9)
    charged = float(account["charged"][1])
    latency_s = float((timing.get("latency") or {}).get("wall_s", 0.0))
    cut = last - latency_s
    admitted = account["admitted"]
    seen = sum(tokens for _, tokens in admitted) or 1.0
    before = sum(tokens for t, tokens in admitted if t < cut)
    work_span = max(cut - started, 1e-9)
    # Replies without max_tokens are charged their completion when answered (not in `admitted`): that
    # remainder is shared in proportion.
    work_charged = charged * before / seen
    return {
        "tokens_per_s": rate,
        "tokens_limit": limit,
        "span_s": round(span, 2),
        "tokens_charged": int(charged),
        "use_run": _use(charged, limit, rate, span),
        "use_standin": {k: round(v, 4) for k, v in account["use"].items()},
        "latency_pass_s": round(latency_s, 2),
        "latency_pass_tokens": int(seen - before),
        "work_span_s": round(work_span, 2),
        "use_work_stages": _use(work_charged, limit, rate, work_span) if latency_s else None,
    }


def bench_pacing(
    ctx: BenchContext,
    *,
    methods: Sequence[str] = ("rag",),
    conversations: Sequence[str] = ("conv-26",),
    rpm: int = 5_000,
    tpm: int = 60_000,
    window_s: float = 6.0,
    latency_ms: float = 20.0,
    max_questions: int | None = None,
    judge_runs: int | None = None,
) -> dict[str, Any]:
    """One paced run per method under the budget; -> requests, 429 share, budget use, stages, pacer wait."""
    result: dict[str, Any] = {
        "command": "pacing", "rpm": rpm, "tpm": tpm, "window_s": window_s, "latency_ms": latency_ms,
        "conversations": list(conversations), "runs": [],
    }  # fmt: skip
    for method in methods:
        label = f"pacing-{method}"
        ctx.say(f"[pacing {method}] budget {rpm:,} requests / {tpm:,} tokens per {window_s:g} s 'minute'")
        with Standin(
            latency_ms, ctx.out / f"{label}-standin.log", ratelimit=(rpm, tpm), ratelimit_window_s=window_s
        ) as standin:
            run = measure_run(
                ctx, label, method, standin, conversations=conversations, max_questions=max_questions,
                judge_runs=judge_runs,
            )  # fmt: skip
            account = standin.budget()
        run_dir = Path(run["run_dir"])
        timing = run_timing(run_dir)
        figures = budget_figures(account, timing)
        rate = figures["tokens_per_s"]
        tokens = _stage_tokens(run_dir)
        stages = []
        for name, entry in timing.items():
            if name == "latency":
                stage_tokens = figures["latency_pass_tokens"]
            else:
                stage_tokens = sum(n for stage, n in tokens.items() if _stage_group(stage) == name)
                if name == "answer":  # less the latency pass's searches, counted in usage.json's "search"
                    stage_tokens = max(stage_tokens - figures["latency_pass_tokens"], 0)
            wall = float(entry["wall_s"])
            stages.append(
                {
                    "stage": name,
                    "wall_s": wall,
                    "calls": int(entry.get("calls", 0)),
                    "tokens": stage_tokens,
                    "use": round(stage_tokens / (rate * wall), 4) if wall > 0 else None,
                }
            )
        http = run["http"]
        result["runs"].append(
            {
                "method": method,
                "command": run["command"],
                "process_wall_s": round(run["wall_s"], 1),
                "requests": http["total"],
                "answered_429": http["errors"],
                "share_429": round(http["errors"] / max(http["total"], 1), 4),
                "pacer_wait_s": _pacer_wait_s(run["log"]),
                **figures,
                "stages": stages,
                "loadavg_1m": run["loadavg_1m"],
                "steal_pct": run["steal_pct"],
            }
        )
    return result


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _both(use: dict[str, float]) -> str:
    met = "met" if use["allowed"] >= TARGET_USE else "missed"
    return f"{_pct(use['allowed'])} ({met}) / {_pct(use['refill'])}"


def render_pacing(res: dict[str, Any]) -> str:
    """The markdown tables of one `pacing` result: one row a run, then its stages."""
    lines = [
        f"budget {res['rpm']:,} requests / {res['tpm']:,} tokens a 'minute' of {res['window_s']:g} s, "
        f"stand-in {res['latency_ms']:g} ms a call, {', '.join(res['conversations'])}",
        "",
        "Budget use: tokens charged over what the budget allowed (the full bucket at the start plus the "
        "refill), then over the refill alone (tokens / (budget a second x span)). Work stages: up to the "
        "isolated latency pass. Pacer wait: summed over requests (concurrent waits add up).",
        "",
        "| run | requests | answered 429 | budget use, run | budget use, work stages | pacer wait | wall |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in res["runs"]:
        ok_429 = "met" if run["share_429"] <= TARGET_429_SHARE else "missed"
        work = run["use_work_stages"]
        lines.append(
            f"| `+exp={run['method']}` | {run['requests']:,} | {run['answered_429']:,} "
            f"({_pct(run['share_429'])}, {ok_429}) | {_both(run['use_run'])} over {run['span_s']:.1f} s "
            f"| {_both(work) if work else '-'} over {run['work_span_s']:.1f} s "
            f"| {run['pacer_wait_s'] if run['pacer_wait_s'] is not None else '-'} s "
            f"| {run['process_wall_s']:.1f} s |"
        )
    for run in res["runs"]:
        lines += [
            "",
            f"`+exp={run['method']}` by stage (stages overlap; use = the stage's tokens over the budget's "
            "refill across its own span, so a stage shorter than the window may draw on the full bucket):",
            "",
            "| stage | wall | calls | tokens | budget use |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {s['stage']} | {s['wall_s']:.1f} s | {s['calls']:,} | {s['tokens']:,} | {_pct(s['use'])} |"
            for s in run["stages"]
        ]
    return "\n".join(lines)
