"""Issue 37, item 4: does a run's cost grow linearly with the work? A generated LongMemEval-shaped file at
several sizes (haystacks), each run through the systems against the zero-latency stand-in, in a fresh run
folder and cache: harness CPU per question, peak RSS, and the disk a haystack's saved state takes.

Targets (from the smallest size to the one 4x its haystacks): peak RSS at most 1.5x, CPU per question
within 1.25x. The generated file is deterministic (a seed), so a rerun measures the same work.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.runs import run_process, shown
from benchmarks.settings import BenchContext, BenchError, harness_env
from benchmarks.standin import Standin

RSS_GROWTH_TARGET = 1.5  # peak RSS at 4x the haystacks
CPU_GROWTH_TARGET = 1.25  # CPU per question at 4x the haystacks

QUESTION_TYPES = (
    "single-session-user", "single-session-assistant", "single-session-preference", "multi-session",
    "temporal-reasoning", "knowledge-update",
)  # fmt: skip
_TOPICS = (
    "hiking", "baking sourdough", "learning Italian", "a used bicycle", "my sister's wedding", "tax forms",
    "a trip to Lisbon", "the garden", "running shoes", "a jazz concert", "my new job", "the dentist",
    "a birthday gift", "moving flats", "a pottery class", "the car's brakes", "a chess club", "houseplants",
)  # fmt: skip
_WORDS = (
    "really", "maybe", "next", "week", "cheap", "early", "quiet", "friend", "planned", "again", "since",
    "bought", "tried", "liked", "missed", "started", "finished", "booked", "found", "lost", "kept", "small",
)  # fmt: skip


def _sentence(rng: random.Random, topic: str, words: int) -> str:
    return f"About {topic}: " + " ".join(rng.choice(_WORDS) for _ in range(words)) + "."


def generate_longmemeval(
    haystacks: int, *, sessions: int = 50, turns: int = 2, words: int = 30, seed: int = 0
) -> list[dict[str, Any]]:
    """A LongMemEval_S-shaped file (the released fields, one question per haystack): `haystacks`
    questions, each with `sessions` dated user-assistant sessions of `turns` turns of about `words` words.
    The answer sits in one session (marked `has_answer`), as in the release."""
    rng = random.Random(seed)
    items = []
    for h in range(haystacks):
        qtype = QUESTION_TYPES[h % len(QUESTION_TYPES)]
        answer_at = rng.randrange(sessions)
        fact = f"{rng.choice(_TOPICS)} costs {rng.randrange(10, 999)} euros"
        ids, dates, bodies = [], [], []
        for s in range(sessions):
            day = 1 + s % 28
            dates.append(f"2023/{1 + (s // 28) % 12:02d}/{day:02d} (Mon) {8 + s % 12:02d}:{(7 * s) % 60:02d}")
            ids.append(f"answer_{h:04d}_{s}" if s == answer_at else f"gen_{h:04d}_{s}")
            body = []
            for t in range(turns):
                role = "user" if t % 2 == 0 else "assistant"
                text = _sentence(rng, rng.choice(_TOPICS), words)
                turn: dict[str, Any] = {"role": role, "content": text}
                if s == answer_at:
                    turn["has_answer"] = t == 0
                    if t == 0:
                        turn["content"] = f"I checked: {fact}. " + text
                body.append(turn)
            bodies.append(body)
        items.append({
            "question_id": f"g{h:04d}",
            "question_type": qtype,
            "question": f"What did I say about {fact.split(' costs ')[0]}?",
            "answer": fact,
            "question_date": "2023/12/30 (Sat) 10:00",
            "haystack_session_ids": ids,
            "haystack_dates": dates,
            "haystack_sessions": bodies,
            "answer_session_ids": [ids[answer_at]],
        })  # fmt: skip
    return items


def _disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def growth_run(
    ctx: BenchContext,
    standin: Standin,
    method: str,
    dataset: Path,
    haystacks: int,
    *,
    timeout_s: float,
    dry_run: bool = False,
) -> dict[str, Any]:
    """One measured run of `method` over the generated file of `haystacks` haystacks (a dry run: the
    process's start-up, config and dataset loading, and the plan, and no call)."""
    label = f"growth-{method}-{haystacks}" + ("-dry" if dry_run else "")
    run_dir, cache_dir = ctx.out / f"{label}-run", ctx.out / f"{label}-cache"
    argv = [
        sys.executable, "-m", "mem0bench", "run", f"+exp={method}", "dataset=longmemeval_s",
        f"dataset.path={dataset}", "judge.runs=1", "run.progress=false", *ctx.overrides,
        *(["run.dry_run=true"] if dry_run else []), f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    ctx.say(f"growth: {method} at {haystacks} haystacks ...")
    env = harness_env(standin.base_url, cache_dir, ctx.env)
    figures = run_process(argv, env, ctx.out / f"{label}.log", timeout_s)
    if figures.returncode != 0:
        tail = Path(figures.log).read_text(encoding="utf-8", errors="replace")[-2000:]
        raise BenchError(f"{label}: the run exited with {figures.returncode}:\n{tail}")
    if dry_run:
        return {
            "command": shown(argv),
            "cpu_s": round(figures.cpu_s, 2),
            "peak_rss_mb": round(figures.peak_rss_mb, 1),
        }
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    n_questions = int(metrics["n_questions"])
    state = _disk_bytes(run_dir / "state")
    return {
        "method": method,
        "haystacks": haystacks,
        "command": shown(argv),
        "n_questions": n_questions,
        "wall_s": round(figures.wall_s, 2),
        "cpu_s": round(figures.cpu_s, 2),
        "cpu_ms_per_question": round(1000 * figures.cpu_s / max(n_questions, 1), 1),
        "peak_rss_mb": round(figures.peak_rss_mb, 1),
        "state_kb_per_haystack": round(state / 1024 / haystacks, 1),
        "run_dir_kb_per_haystack": round(_disk_bytes(run_dir) / 1024 / haystacks, 1),
        "run_dir": str(run_dir),
    }


def growth_checks(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each method, each size against the smallest: RSS and CPU per question, with the targets where
    the size is 4x the smallest (the issue's)."""
    checks = []
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["haystacks"])
        base = mine[0]
        for r in mine[1:]:
            rss = r["peak_rss_mb"] / base["peak_rss_mb"]
            cpu = r["net_cpu_ms_per_question"] / base["net_cpu_ms_per_question"]
            check: dict[str, Any] = {
                "method": method,
                "from": base["haystacks"],
                "to": r["haystacks"],
                "rss_ratio": round(rss, 3),
                "cpu_per_question_ratio": round(cpu, 3),
                "total_cpu_per_question_ratio": round(
                    r["cpu_ms_per_question"] / base["cpu_ms_per_question"], 3
                ),
            }
            if r["haystacks"] == 4 * base["haystacks"]:
                check["rss_ok"] = rss <= RSS_GROWTH_TARGET
                check["cpu_ok"] = cpu <= CPU_GROWTH_TARGET
            checks.append(check)
    return checks


def bench_growth(
    ctx: BenchContext,
    *,
    methods: Sequence[str],
    sizes: Sequence[int],
    sessions: int,
    turns: int,
    words: int,
    timeout_s: float = 4 * 3600,
) -> dict[str, Any]:
    """Every method at every size; -> rows, checks and the generator's settings."""
    if not sizes or not methods:
        raise BenchError("growth needs at least one size and one method")
    files = {}
    for n in sizes:
        path = ctx.out / f"longmemeval_gen_{n}.json"
        path.write_text(json.dumps(generate_longmemeval(n, sessions=sessions, turns=turns, words=words)))
        files[n] = path
    rows = []
    startup: dict[str, Any] = {}
    with Standin(0.0, ctx.out / "growth-standin.log") as standin:
        for method in methods:
            # The fixed cost of a process (imports, config, the smallest file loaded, the plan): without
            # it, CPU per question would fall with size only because the start-up is shared by more.
            small = min(sizes)
            startup[method] = growth_run(
                ctx, standin, method, files[small], small, timeout_s=600, dry_run=True
            )
            for n in sizes:
                row = growth_run(ctx, standin, method, files[n], n, timeout_s=timeout_s)
                net = max(row["cpu_s"] - startup[method]["cpu_s"], 0.0)
                row["net_cpu_ms_per_question"] = round(1000 * net / max(row["n_questions"], 1), 1)
                rows.append(row)
                ctx.say(json.dumps(row))
    return {
        "command": "growth",
        "generator": {"sessions": sessions, "turns": turns, "words": words, "seed": 0},
        "startup": startup,
        "rows": rows,
        "checks": growth_checks(rows),
    }


def render_growth(result: dict[str, Any]) -> str:
    """The rows as a markdown table, then the checks."""
    lines = [
        "| system | haystacks | questions | CPU s | CPU ms/question | less start-up | peak RSS MB | "
        "state KB/haystack | run folder KB/haystack | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['method']} | {r['haystacks']} | {r['n_questions']} | {r['cpu_s']} | "
            f"{r['cpu_ms_per_question']} | {r['net_cpu_ms_per_question']} | {r['peak_rss_mb']} | "
            f"{r['state_kb_per_haystack']} | "
            f"{r['run_dir_kb_per_haystack']} | {r['wall_s']} |"
        )
    lines.append("")
    for method, dry in result.get("startup", {}).items():
        lines.append(
            f"- {method}'s start-up (a dry run, smallest file): {dry['cpu_s']} s CPU, {dry['peak_rss_mb']} MB"
        )
    for c in result["checks"]:
        verdict = ""
        if "rss_ok" in c:
            verdict = (
                f" (targets: RSS <= {RSS_GROWTH_TARGET}x {'met' if c['rss_ok'] else 'MISSED'}, "
                f"CPU/question <= {CPU_GROWTH_TARGET}x {'met' if c['cpu_ok'] else 'MISSED'})"
            )
        lines.append(
            f"- {c['method']} {c['from']} -> {c['to']} haystacks: peak RSS x{c['rss_ratio']}, "
            f"CPU per question less start-up x{c['cpu_per_question_ratio']} "
            f"(with it x{c['total_cpu_per_question_ratio']}){verdict}"
        )
    return "\n".join(lines)
