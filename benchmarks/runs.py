"""One measured `python -m mem0bench run` process, and the figures its run directory holds."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.machine import cpu_ticks, steal_pct
from benchmarks.settings import REPO, BenchContext, BenchError, harness_env
from benchmarks.standin import Standin, requests_between
from benchmarks.stats import summary_ms
from mem0bench.common.jsonl import read_jsonl as read_rows


@dataclass(frozen=True)
class ProcessFigures:
    """The kernel's accounting of one finished child process."""

    returncode: int
    started_epoch: float
    wall_s: float
    user_s: float
    sys_s: float
    cpu_s: float
    peak_rss_mb: float
    log: str


def run_process(argv: list[str], env: dict[str, str], log_path: Path, timeout_s: float) -> ProcessFigures:
    """Run `argv` from the repository root; -> wall time, CPU (user, sys) and peak RSS of that process."""
    with open(log_path, "wb") as log:
        started_epoch = time.time()
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            # wait4, not wait: the rusage of this child alone (not other children's peak RSS or CPU).
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
    return ProcessFigures(
        returncode=os.waitstatus_to_exitcode(status),
        started_epoch=started_epoch,
        wall_s=wall,
        user_s=ru.ru_utime,
        sys_s=ru.ru_stime,
        cpu_s=ru.ru_utime + ru.ru_stime,
        peak_rss_mb=ru.ru_maxrss / 1024.0,  # KB on Linux
        log=str(log_path),
    )


def run_command(
    method: str,
    dataset: Path,
    run_dir: Path,
    *,
    conversations: Sequence[str] | None,
    max_questions: int | None,
    judge_runs: int | None,
    concurrency: int | None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The `python -m mem0bench run ...` command line; None leaves a setting at the config's value."""
    args = [f"+exp={method}", f"dataset.path={dataset}"]
    if conversations:
        args.append(f"dataset.conversations=[{','.join(conversations)}]")
    if max_questions is not None:
        args.append(f"eval.max_questions={max_questions}")
    if judge_runs is not None:
        args.append(f"judge.runs={judge_runs}")
    if concurrency is not None:
        args.append(f"llm.max_concurrency={concurrency}")
    args += ["run.progress=false", *extra, f"hydra.run.dir={run_dir}"]
    return [sys.executable, "-m", "mem0bench", "run", *args]


def shown(argv: Sequence[str]) -> str:
    """A command line as a person would type it (python -m ..., temp paths kept)."""
    return shlex.join(["python", *argv[1:]])


def measure_run(
    ctx: BenchContext,
    label: str,
    method: str,
    standin: Standin,
    *,
    conversations: Sequence[str] | None = None,
    max_questions: int | None = None,
    judge_runs: int | None = None,
    concurrency: int | None = None,
    timeout_s: float = 4 * 3600,
    dry_run: bool = False,
) -> dict[str, Any]:
    """One `run` in a fresh run dir with a fresh cache; -> process figures plus server-side counts."""
    run_dir = ctx.out / f"{label}-run"
    cache_dir = ctx.out / f"{label}-cache"
    argv = run_command(
        method, ctx.dataset, run_dir, conversations=conversations, max_questions=max_questions,
        judge_runs=judge_runs, concurrency=concurrency,
        extra=[*ctx.overrides, *(["run.dry_run=true"] if dry_run else [])],
    )  # fmt: skip
    before = standin.stats()
    load_before, ticks_before = os.getloadavg()[0], cpu_ticks()
    env = harness_env(standin.base_url, cache_dir, ctx.env)
    figures = run_process(argv, env, ctx.out / f"{label}.log", timeout_s)
    after = standin.stats()
    if figures.returncode != 0:
        tail = Path(figures.log).read_text(encoding="utf-8", errors="replace")[-2000:]
        raise BenchError(f"{label}: the run exited with {figures.returncode}:\n{tail}")
    run = asdict(figures)
    run.update(
        label=label,
        method=method,
        command=shown(argv),
        run_dir=str(run_dir),
        http=requests_between(before, after).as_dict(),
        standin_cpu_s=after.cpu_s - before.cpu_s,
        standin_max_in_flight=after.max_in_flight,
        loadavg_1m=[round(load_before, 2), round(os.getloadavg()[0], 2)],
        steal_pct=steal_pct(ticks_before, cpu_ticks()),
    )
    if not dry_run:  # a dry run writes no usage, metrics or predictions
        run.update(run_dir_figures(run_dir, figures.started_epoch))
    return run


# ---- what a run directory says ----------------------------------------------------------------------
def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSON-lines file ([] when it does not exist), under the package's one reading policy
    (a torn last line skipped)."""
    return list(read_rows(path))


def run_timing(run_dir: Path) -> dict[str, Any]:
    """run.json's `timing` block (stage walls, the ingest chain bound); {} when the run wrote none."""
    try:
        run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    timing = run.get("timing")
    return timing if isinstance(timing, dict) else {}


def local_search_s(rows: list[dict[str, Any]]) -> list[float]:
    """`local_search_s` of each prediction that recorded one."""
    return [r["local_search_s"] for r in rows if r.get("local_search_s") is not None]


def _config(run_dir: Path) -> dict[str, Any]:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(run_dir / "config.yaml"), resolve=False)  # type: ignore[return-value]


def _turns(dataset_path: str, conversations: Sequence[str]) -> dict[str, int]:
    from mem0bench.data import load_dataset

    data = load_dataset(dataset_path, conversations=list(conversations) or None)
    return {c.sample_id: len(c.turns) for c in data.conversations}


def _ledger(run_dir: Path, embedding_model: str) -> dict[str, dict[str, int]]:
    """The client's ledger per stage: every reply, cached or not ("cached" ones made no HTTP request)."""
    usage = json.loads((run_dir / "usage.json").read_text(encoding="utf-8"))["sessions"][-1]["stages"]
    ledger: dict[str, dict[str, int]] = {}
    for stage, s in usage.items():
        emb = int(s.get("models", {}).get(embedding_model, 0))
        ledger[stage] = {
            "calls": int(s["calls"]),
            "chat": int(s["calls"]) - emb,
            "embeddings": emb,
            "cached": int(s.get("cached_calls", 0)),
        }
    return ledger


def _ingest_per_turn(ingest_rows: list[dict[str, Any]], n_turns: int) -> dict[str, float] | None:
    """Ingestion calls and tokens per LOCOMO turn, from the `usage` of every ingest.jsonl row."""
    if not n_turns:
        return None
    totals: dict[str, list[int]] = {}  # stage -> [calls, prompt tokens, completion tokens]
    for row in ingest_rows:
        for stage, (calls, prompt, completion) in (row.get("usage") or {}).items():
            acc = totals.setdefault(stage, [0, 0, 0])
            acc[0] += calls
            acc[1] += prompt
            acc[2] += completion
    chat = [v for k, v in totals.items() if not k.endswith("_embedding")]
    emb = [v for k, v in totals.items() if k.endswith("_embedding")]
    return {
        "chat_calls": sum(v[0] for v in chat) / n_turns,
        "embedding_calls": sum(v[0] for v in emb) / n_turns,
        "prompt_tokens": sum(v[1] for v in chat) / n_turns,
        "completion_tokens": sum(v[2] for v in chat) / n_turns,
        "embedding_tokens": sum(v[1] for v in emb) / n_turns,
    }


def run_dir_figures(run_dir: Path, started_epoch: float) -> dict[str, Any]:
    """Calls, tokens, per-turn ingestion cost and search latencies from a finished run directory."""
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    config = _config(run_dir)
    ingest_file = run_dir / "ingest.jsonl"
    ingest_rows = read_jsonl(ingest_file)
    predictions = read_jsonl(run_dir / "predictions.jsonl")
    n_turns = sum(_turns(config["dataset"]["path"], [r["sample_id"] for r in ingest_rows]).values())
    search = [r["search_latency_s"] for r in predictions if r.get("search_latency_s") is not None]
    store = [r["memory_tokens"] for r in ingest_rows if r.get("memory_tokens") is not None]
    return {
        "n_questions": int(metrics["n_questions"]),
        "n_conversations": len(ingest_rows),
        "n_turns": n_turns,
        "judge_runs": int(config["judge"]["runs"]),
        "max_concurrency": int(config["llm"]["max_concurrency"]),
        "per_speaker": bool(config["method"].get("per_speaker", True)),
        "ledger": _ledger(run_dir, config["embedder"]["model"]),
        "ingest_per_turn": _ingest_per_turn(ingest_rows, n_turns),
        "ingest_calls_per_conversation": {
            row["sample_id"]: sum(v[0] for v in (row.get("usage") or {}).values()) for row in ingest_rows
        },
        # The runner overlaps ingestion with answering: the last write to ingest.jsonl is when the
        # last conversation finished ingesting.
        "ingest_done_s": ingest_file.stat().st_mtime - started_epoch if ingest_file.exists() else None,
        "memory_tokens_mean": sum(store) / len(store) if store else None,
        "local_search_ms": summary_ms(local_search_s(predictions)),
        "search_latency_ms": summary_ms(search, with_max=False),
    }
