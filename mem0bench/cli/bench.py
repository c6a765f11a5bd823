"""`python -m mem0bench bench`: how fast and how lean the harness is, measured against a local stand-in.

Every measurement runs the real CLI (`python -m mem0bench run ...`) in its own process, with a fresh LLM
cache and a fresh run directory, against the repository's stand-in OpenAI server
(tests/standin/server.py) started as a separate process, so the server's CPU is never counted as the
harness's. The stand-in counts the HTTP requests it served; the harness's CPU time and peak memory come
from the kernel's accounting of the child process (`os.wait4`: its rusage, the same figures as a
`getrusage(RUSAGE_CHILDREN)` delta around the run, but not mixed with the stand-in's once that is reaped).

    overhead   one system over the whole LOCOMO file (categories 1-4, one judge run) against a
               zero-latency stand-in: wall time, LLM calls, harness CPU per call, peak RSS, ingestion
               cost per turn, search time excluding network
    overlap    two conversations with default settings against a 50 ms stand-in: calls x latency / wall
               time (how much latency overlaps), and the ideal for the available parallelism (with the
               nominal latency, and with a bare client's measured round trip to the same stand-in)
    search     search time excluding network at LOCOMO scale, Mem0 and Mem0^g: in the run (under the
               run's own concurrency) and isolated (the same stores queried one question at a time)
    all        everything above, then a markdown block for docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import select
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
STANDIN_MODULE = REPO / "tests" / "standin" / "server.py"
SHARED = REPO.parent / "shared"
BENCH_KEY_ENV = "MEM0BENCH_BENCH_KEY"
BENCH_KEY = "sk-bench-not-a-real-key"

TARGETS = {
    "cpu_ms_per_call": 2.0,  # harness CPU (user + sys) per LLM call, zero-latency server
    "peak_rss_mb": 1024.0,  # harness peak RSS
    "local_search_p95_ms": {"mem0": 1.0, "mem0g": 5.0},
    "overlap": 3.5,  # (calls x latency) / wall time with a 50 ms server
}


class BenchError(Exception):
    """A measurement could not be made (the run failed, the stand-in did not start, ...)."""


# ---- small helpers ---------------------------------------------------------------------------------
def _default_dataset() -> Path | None:
    for candidate in (REPO / "data" / "locomo10.json", SHARED / "data" / "locomo10.json"):
        if candidate.is_file():
            return candidate
    return None


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)  # numpy's "linear"


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return str(value)


EXTRA_ENV: dict[str, str] = {}
"""`--env KEY=VALUE` settings for the harness processes (diagnostics, e.g. OMP_NUM_THREADS=1)."""


def _env(base_url: str, cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(EXTRA_ENV)
    env.update(
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY=BENCH_KEY,
        MEM0BENCH_CACHE_DIR=str(cache_dir),
        HYDRA_FULL_ERROR="1",
        PYTHONUNBUFFERED="1",
    )
    if "TIKTOKEN_CACHE_DIR" not in env and (SHARED / "tiktoken").is_dir():
        env["TIKTOKEN_CACHE_DIR"] = str(SHARED / "tiktoken")
    return env


def _standin_env() -> dict[str, str]:
    env = dict(os.environ)
    if "TIKTOKEN_CACHE_DIR" not in env and (SHARED / "tiktoken").is_dir():
        env["TIKTOKEN_CACHE_DIR"] = str(SHARED / "tiktoken")
    return env


def machine_info() -> dict[str, Any]:
    """nproc, CPU model, memory, Python, date and load (the machine may be shared)."""
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    return {
        "nproc": usable,
        "cpu_model": model or platform.processor() or "unknown",
        "memory_gb": mem_gb,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


# ---- the stand-in, in its own process ----------------------------------------------------------------
def _serve_standin(argv: list[str]) -> int:
    """Hidden subcommand: run the stand-in; print its port; on each stdin line "stats" print its counters
    as one JSON line; stop at end of input."""
    p = argparse.ArgumentParser(prog="mem0bench bench standin")
    p.add_argument("--latency-ms", type=float, default=0.0)
    a = p.parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import resource

    from tests.standin.server import StandinServer

    server = StandinServer(latency_ms=a.latency_ms).start()
    print(server.port, flush=True)
    try:
        for line in sys.stdin:
            if line.strip() != "stats":
                continue
            with server._lock:
                counts = {f"{ep}:{status}": n for (ep, status), n in server.counts.items()}
                peak = server.max_in_flight
                server.max_in_flight = server.in_flight
            ru = resource.getrusage(resource.RUSAGE_SELF)
            stats = {"counts": counts, "max_in_flight": peak, "cpu_s": ru.ru_utime + ru.ru_stime}
            print(json.dumps(stats), flush=True)
    finally:
        server.stop()
    return 0


class Standin:
    """The stand-in server as a child process (`with Standin(latency_ms) as s: s.base_url, s.stats()`)."""

    def __init__(self, latency_ms: float, log_path: Path):
        self.latency_ms = latency_ms
        self.log_path = log_path
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0

    def __enter__(self) -> Standin:
        if not STANDIN_MODULE.is_file():
            raise BenchError(f"bench needs the repository's stand-in server at {STANDIN_MODULE}")
        self._log = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in __exit__
        cmd = [sys.executable, "-m", "mem0bench", "bench", "standin", "--latency-ms", f"{self.latency_ms:g}"]
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, env=_standin_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._log, text=True, bufsize=1,
        )  # fmt: skip
        line = self._readline(timeout=60)
        try:
            self.port = int(line)
        except ValueError:
            self.__exit__()
            raise BenchError(f"the stand-in did not start (see {self.log_path})") from None
        return self

    def _readline(self, timeout: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return self.proc.stdout.readline().strip() if ready else ""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """Requests served so far per endpoint:status, the peak of requests in flight since the last
        call, and the server's own CPU seconds."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        line = self._readline(timeout=30)
        if not line:
            raise BenchError("the stand-in stopped answering")
        return json.loads(line)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
                self.proc.wait(timeout=15)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        self._log.close()


def _requests(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """HTTP requests served between two stats() calls: chat, embeddings, non-200 replies."""
    out = {"chat": 0, "embeddings": 0, "errors": 0}
    for key, n in after["counts"].items():
        delta = n - before["counts"].get(key, 0)
        endpoint, status = key.rsplit(":", 1)
        if endpoint in ("chat", "embeddings"):
            out[endpoint] += delta
            if status != "200":
                out["errors"] += delta
    out["total"] = out["chat"] + out["embeddings"]
    return out


# ---- one harness process ----------------------------------------------------------------------------
def _run_process(argv: list[str], env: dict[str, str], log_path: Path, timeout_s: float) -> dict[str, Any]:
    """Run `argv` from the repository root; -> wall time, CPU (user, sys) and peak RSS of that process."""
    with open(log_path, "wb") as log:
        started_epoch = time.time()
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "returncode": proc.returncode,
        "started_epoch": started_epoch,
        "wall_s": wall,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "peak_rss_mb": ru.ru_maxrss / 1024.0,  # KB on Linux
        "log": str(log_path),
    }


def _run_command(
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


def _shown(argv: Sequence[str]) -> str:
    """A command line as a person would type it (python -m ..., temp paths kept)."""
    return shlex.join(["python", *argv[1:]])


def measure_run(
    label: str,
    method: str,
    out: Path,
    standin: Standin,
    dataset: Path,
    *,
    conversations: Sequence[str] | None = None,
    max_questions: int | None = None,
    judge_runs: int | None = None,
    concurrency: int | None = None,
    extra: Sequence[str] = (),
    timeout_s: float = 4 * 3600,
    dry_run: bool = False,
) -> dict[str, Any]:
    """One `run` in a fresh run dir with a fresh cache; -> process figures plus server-side counts."""
    run_dir = out / f"{label}-run"
    cache_dir = out / f"{label}-cache"
    argv = _run_command(
        method, dataset, run_dir, conversations=conversations, max_questions=max_questions,
        judge_runs=judge_runs, concurrency=concurrency,
        extra=[*extra, *(["run.dry_run=true"] if dry_run else [])],
    )  # fmt: skip
    before = standin.stats()
    load_before = os.getloadavg()[0]
    proc = _run_process(argv, _env(standin.base_url, cache_dir), out / f"{label}.log", timeout_s)
    after = standin.stats()
    if proc["returncode"] != 0:
        tail = Path(proc["log"]).read_text(encoding="utf-8", errors="replace")[-2000:]
        raise BenchError(f"{label}: the run exited with {proc['returncode']}:\n{tail}")
    proc.update(
        label=label,
        method=method,
        command=_shown(argv),
        run_dir=str(run_dir),
        http=_requests(before, after),
        standin_cpu_s=after["cpu_s"] - before["cpu_s"],
        standin_max_in_flight=after["max_in_flight"],
        loadavg_1m=[round(load_before, 2), round(os.getloadavg()[0], 2)],
    )
    if not dry_run:
        proc.update(_run_dir_figures(run_dir, proc["started_epoch"]))
    return proc


# ---- what a run directory says ----------------------------------------------------------------------
def _config(run_dir: Path) -> dict[str, Any]:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(run_dir / "config.yaml"), resolve=False)  # type: ignore[return-value]


def _turns(dataset_path: str, conversations: Sequence[str]) -> dict[str, int]:
    from mem0bench.data import load_dataset

    data = load_dataset(dataset_path, conversations=list(conversations) or None)
    return {c.sample_id: len(c.turns) for c in data.conversations}


def _run_dir_figures(run_dir: Path, started_epoch: float) -> dict[str, Any]:
    """Calls, tokens, per-turn ingestion cost and search latencies from a finished run directory."""
    usage = json.loads((run_dir / "usage.json").read_text(encoding="utf-8"))["sessions"][-1]["stages"]
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    config = _config(run_dir)
    ingest_rows = _read_jsonl(run_dir / "ingest.jsonl")
    predictions = _read_jsonl(run_dir / "predictions.jsonl")
    embedding_model = config["embedder"]["model"]

    # The client's ledger: every reply, cached or not; "cached" ones made no HTTP request.
    ledger: dict[str, dict[str, int]] = {}
    for stage, s in usage.items():
        emb = int(s.get("models", {}).get(embedding_model, 0))
        ledger[stage] = {
            "calls": int(s["calls"]),
            "chat": int(s["calls"]) - emb,
            "embeddings": emb,
            "cached": int(s.get("cached_calls", 0)),
        }

    turns = _turns(config["dataset"]["path"], [r["sample_id"] for r in ingest_rows])
    n_turns = sum(turns.values())
    ingest_usage: dict[str, list[int]] = {}
    per_conversation_calls: dict[str, int] = {}
    for row in ingest_rows:
        per_conversation_calls[row["sample_id"]] = sum(v[0] for v in (row.get("usage") or {}).values())
        for stage, (calls, prompt, completion) in (row.get("usage") or {}).items():
            acc = ingest_usage.setdefault(stage, [0, 0, 0])
            acc[0] += calls
            acc[1] += prompt
            acc[2] += completion
    chat_stages = [k for k in ingest_usage if not k.endswith("_embedding")]
    emb_stages = [k for k in ingest_usage if k.endswith("_embedding")]
    per_turn = None
    if n_turns:
        per_turn = {
            "chat_calls": sum(ingest_usage[k][0] for k in chat_stages) / n_turns,
            "embedding_calls": sum(ingest_usage[k][0] for k in emb_stages) / n_turns,
            "prompt_tokens": sum(ingest_usage[k][1] for k in chat_stages) / n_turns,
            "completion_tokens": sum(ingest_usage[k][2] for k in chat_stages) / n_turns,
            "embedding_tokens": sum(ingest_usage[k][1] for k in emb_stages) / n_turns,
        }
    ingest_file = run_dir / "ingest.jsonl"
    local = [r["local_search_s"] for r in predictions if r.get("local_search_s") is not None]
    search = [r["search_latency_s"] for r in predictions if r.get("search_latency_s") is not None]
    store = [r["memory_tokens"] for r in ingest_rows if r.get("memory_tokens") is not None]

    def ms(values: list[float], q: float) -> float | None:
        v = _percentile(values, q)
        return None if v is None else v * 1000.0

    return {
        "n_questions": int(metrics["n_questions"]),
        "n_conversations": len(ingest_rows),
        "n_turns": n_turns,
        "judge_runs": int(config["judge"]["runs"]),
        "max_concurrency": int(config["llm"]["max_concurrency"]),
        "per_speaker": bool(config["method"].get("per_speaker", True)),
        "ledger": ledger,
        "ingest_per_turn": per_turn,
        "ingest_calls_per_conversation": per_conversation_calls,
        "ingest_done_s": ingest_file.stat().st_mtime - started_epoch if ingest_file.exists() else None,
        "memory_tokens_mean": sum(store) / len(store) if store else None,
        "local_search_ms": {
            "n": len(local),
            "p50": ms(local, 50),
            "p95": ms(local, 95),
            "max": ms(local, 100),
        },  # fmt: skip
        "search_latency_ms": {"n": len(search), "p50": ms(search, 50), "p95": ms(search, 95)},
    }


# ---- overhead ---------------------------------------------------------------------------------------
def bench_overhead(
    out: Path,
    dataset: Path,
    *,
    method: str = "mem0",
    conversations: Sequence[str] | None = None,
    max_questions: int | None = None,
    judge_runs: int = 1,
    ingest_run: bool = True,
    startup_run: bool = True,
    extra: Sequence[str] = (),
    log: Any = None,
) -> dict[str, Any]:
    """The whole file through `method` against a zero-latency stand-in; see the module docstring."""
    result: dict[str, Any] = {
        "command": "overhead", "method": method, "latency_ms": 0.0, "dataset": str(dataset),
        "conversations": list(conversations or []) or "all", "judge_runs": judge_runs,
    }  # fmt: skip
    common = {"conversations": conversations, "extra": extra}
    with Standin(0.0, out / f"overhead-{method}-standin.log") as standin:
        if startup_run:
            _say(log, f"[overhead {method}] startup (dry run: imports, config, dataset; no call)")
            result["startup"] = measure_run(
                f"overhead-{method}-startup", method, out, standin, dataset, dry_run=True, **common
            )
        if ingest_run:
            # `eval.max_questions` must be >= 1: the ingestion run answers and judges one question a
            # conversation (3-4 calls each, next to thousands of ingestion calls).
            _say(log, f"[overhead {method}] ingestion run (eval.max_questions=1)")
            result["ingest_run"] = measure_run(
                f"overhead-{method}-ingest", method, out, standin, dataset, max_questions=1,
                judge_runs=judge_runs, **common,
            )  # fmt: skip
        _say(log, f"[overhead {method}] full run: ingest, answer, judge x{judge_runs}")
        full = measure_run(
            f"overhead-{method}-full", method, out, standin, dataset, max_questions=max_questions,
            judge_runs=judge_runs, **common,
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
    key = "mem0g" if "mem0g" in method else "mem0"
    result["checks"] = [
        _check("harness CPU per LLM call (ms)", full.get("cpu_ms_per_call"), "<=", TARGETS["cpu_ms_per_call"]),
        _check("harness peak RSS (MB)", full["peak_rss_mb"], "<=", TARGETS["peak_rss_mb"]),
        _check(
            "local search p95 (ms)", full["local_search_ms"]["p95"], "<=",
            TARGETS["local_search_p95_ms"].get(key, 1.0),
        ),
    ]  # fmt: skip
    return result


def _check(name: str, value: float | None, op: str, target: float) -> dict[str, Any]:
    ok = None if value is None else (value <= target if op == "<=" else value >= target)
    return {"figure": name, "value": value, "target": f"{op} {target:g}", "pass": ok}


def _say(log: Any, text: str) -> None:
    if log is not None:
        print(text, file=log, flush=True)


# ---- overlap ----------------------------------------------------------------------------------------
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
    out: Path,
    dataset: Path,
    *,
    method: str = "mem0",
    conversations: Sequence[str] = ("conv-26", "conv-30"),
    latency_ms: float = 50.0,
    max_questions: int | None = None,
    judge_runs: int | None = None,
    concurrency: int | None = None,
    startup_run: bool = True,
    calibrate: bool = True,
    extra: Sequence[str] = (),
    log: Any = None,
) -> dict[str, Any]:
    """Default settings against a stand-in with `latency_ms` per call (chat and embeddings alike)."""
    result: dict[str, Any] = {
        "command": "overlap", "method": method, "latency_ms": latency_ms, "dataset": str(dataset),
        "conversations": list(conversations),
    }  # fmt: skip
    with Standin(latency_ms, out / f"overlap-{method}-standin.log") as standin:
        if startup_run:
            _say(log, f"[overlap {method}] startup (dry run)")
            result["startup"] = measure_run(
                f"overlap-{method}-startup", method, out, standin, dataset, conversations=conversations,
                dry_run=True, extra=extra,
            )  # fmt: skip
        _say(log, f"[overlap {method}] full run, {latency_ms:g} ms a call")
        run = measure_run(
            f"overlap-{method}-full", method, out, standin, dataset, conversations=conversations,
            max_questions=max_questions, judge_runs=judge_runs, concurrency=concurrency, extra=extra,
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
        # What one call really takes here, outside the harness: a bare client (the same SDK call the
        # harness makes) in as many parallel chains as the run has ingest streams, same stand-in.
        _say(log, f"[overlap {method}] bare-client round trip, {ideal['parallel_streams']} chains")
        with Standin(latency_ms, out / f"overlap-{method}-roundtrip-standin.log") as standin:
            argv = [sys.executable, "-m", "mem0bench", "bench", "roundtrip", standin.base_url,
                    str(ideal["parallel_streams"]), "40"]  # fmt: skip
            done = subprocess.run(
                argv, cwd=REPO, env=_standin_env(), capture_output=True, text=True, timeout=600
            )
        if done.returncode == 0:
            rtt = json.loads(done.stdout.strip().splitlines()[-1])
            measured = ideal_wall(run, rtt["mean_s"], method)
            measured["roundtrip_ms"] = {k.replace("_s", ""): v * 1000.0 for k, v in rtt.items()}
            run["ideal_measured_roundtrip"] = measured
            run["achieved_over_ideal_measured"] = measured["wall_s"] / run["wall_s"]
    result["run"] = run
    result["checks"] = [_check("calls x latency / wall", run["overlap"], ">=", TARGETS["overlap"])]
    return result


# ---- search -----------------------------------------------------------------------------------------
async def _isolated_search(run_dir: Path, base_url: str) -> list[float]:
    """Re-run each question's retrieval on the run's final stores, one question at a time (no other work
    in the event loop): local_search_s per question."""
    from omegaconf import OmegaConf

    from mem0bench.data import load_dataset
    from mem0bench.pipeline.experiment import build_client, build_system
    from mem0bench.pipeline.rundir import RunDirectory

    cfg = OmegaConf.load(run_dir / "config.yaml")
    cfg.cache.enabled = False
    cfg.llm.base_url = base_url
    cfg.llm.api_key_env = BENCH_KEY_ENV
    os.environ.setdefault(BENCH_KEY_ENV, BENCH_KEY)
    rows = _read_jsonl(run_dir / "predictions.jsonl")
    wanted = {r["qid"] for r in rows}
    data = load_dataset(cfg.dataset.path, conversations=sorted({r["conversation"] for r in rows}))
    client = build_client(cfg)
    try:
        system = build_system(cfg, client, RunDirectory(run_dir))
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


def _serve_roundtrip(argv: list[str]) -> int:
    """Hidden subcommand: `roundtrip BASE_URL CHAINS CALLS`: CHAINS parallel chains of CALLS sequential
    function-call requests (a ~850-token prompt, the size of an ingestion call) through the OpenAI SDK,
    as the harness sends them; prints the mean and p50 seconds per call as JSON."""
    base_url, chains, calls = argv[0], int(argv[1]), int(argv[2])
    import httpx2
    import openai

    words = " ".join(f"word{i % 97} fact about the session" for i in range(170))
    tool = {"type": "function", "function": {"name": "facts", "parameters": {
        "type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
        "required": ["facts"]}}}  # fmt: skip

    async def main() -> dict[str, float]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key=BENCH_KEY, max_retries=0)
        times: list[float] = []

        async def chain(c: int) -> None:
            for i in range(calls):
                body = {"model": "gpt-4o-mini", "temperature": 0, "tools": [tool],
                        "messages": [{"role": "user", "content": f"{c} {i} {words}"}]}  # fmt: skip
                content = json.dumps(body).encode()
                t0 = time.perf_counter()
                response = await client.post("/chat/completions", cast_to=httpx2.Response, content=content)
                response.json()
                times.append(time.perf_counter() - t0)

        await chain(-1)  # warm-up: connection, first-use costs
        times.clear()
        await asyncio.gather(*(chain(c) for c in range(chains)))
        await client.close()
        return {"mean_s": sum(times) / len(times), "p50_s": _percentile(times, 50) or 0.0}

    print(json.dumps(asyncio.run(main())))
    return 0


def _serve_isolated(argv: list[str]) -> int:
    """Hidden subcommand: `isolated RUN_DIR BASE_URL` -> one JSON list of local_search_s on stdout."""
    run_dir, base_url = Path(argv[0]), argv[1]
    print(json.dumps(asyncio.run(_isolated_search(run_dir, base_url))))
    return 0


def search_figures(run_dir: Path, method: str, out: Path) -> dict[str, Any]:
    """In-run local search (predictions.jsonl) and isolated local search (a fresh process re-queries the
    run's final stores one question at a time, against a zero-latency stand-in, cache off)."""
    rows = _read_jsonl(run_dir / "predictions.jsonl")
    in_run = [r["local_search_s"] for r in rows if r.get("local_search_s") is not None]
    with Standin(0.0, out / f"search-{method}-standin.log") as standin:
        argv = [sys.executable, "-m", "mem0bench", "bench", "isolated", str(run_dir), standin.base_url]
        done = subprocess.run(
            argv, cwd=REPO, env=_env(standin.base_url, out / f"search-{method}-cache"),
            capture_output=True, text=True, timeout=3600,
        )  # fmt: skip
    if done.returncode != 0:
        raise BenchError(f"isolated search on {run_dir} failed:\n{done.stderr[-2000:]}")
    isolated = json.loads(done.stdout.strip().splitlines()[-1])

    def summary(values: list[float]) -> dict[str, Any]:
        def ms(q: float) -> float | None:
            v = _percentile(values, q)
            return None if v is None else v * 1000.0

        return {"n": len(values), "p50": ms(50), "p95": ms(95), "max": ms(100)}

    key = "mem0g" if "mem0g" in method else "mem0"
    target = TARGETS["local_search_p95_ms"].get(key, 1.0)
    result = {
        "method": method,
        "run_dir": str(run_dir),
        "in_run_ms": summary(in_run),
        "isolated_ms": summary(isolated),
    }
    result["checks"] = [
        _check(f"{method} local search p95, in run (ms)", result["in_run_ms"]["p95"], "<=", target),
        _check(f"{method} local search p95, isolated (ms)", result["isolated_ms"]["p95"], "<=", target),
    ]
    return result


def bench_search(
    out: Path,
    dataset: Path,
    *,
    methods: Sequence[str] = ("mem0", "mem0g"),
    runs: dict[str, Path] | None = None,
    conversations: Sequence[str] | None = None,
    max_questions: int | None = None,
    extra: Sequence[str] = (),
    log: Any = None,
) -> dict[str, Any]:
    runs = dict(runs or {})
    result: dict[str, Any] = {"command": "search", "methods": {}}
    for method in methods:
        run_dir = runs.get(method)
        if run_dir is None:
            _say(log, f"[search {method}] full run against a zero-latency stand-in (judge.runs=1)")
            with Standin(0.0, out / f"search-{method}-run-standin.log") as standin:
                run = measure_run(
                    f"search-{method}", method, out, standin, dataset, conversations=conversations,
                    max_questions=max_questions, judge_runs=1, extra=extra,
                )  # fmt: skip
            run_dir = Path(run["run_dir"])
        _say(log, f"[search {method}] isolated retrieval on {run_dir}")
        result["methods"][method] = search_figures(run_dir, method, out)
    result["checks"] = [c for m in result["methods"].values() for c in m["checks"]]
    return result


# ---- printing ---------------------------------------------------------------------------------------
def _table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))
    return "\n".join(out)


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else "PASS" if ok else "FAIL"


def overhead_rows(res: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    full = res["full_run"]
    checks = {c["figure"]: c for c in res["checks"]}

    def target(name: str) -> tuple[str, str]:
        c = checks.get(name)
        return (c["target"], _verdict(c["pass"])) if c else ("", "")

    rows = [
        ("conversations / turns / questions", f"{full['n_conversations']} / {full['n_turns']:,} / "
         f"{full['n_questions']:,}", "", ""),
        ("wall time, full run (s)", _fmt(full["wall_s"], 1), "", ""),
        ("HTTP requests: chat / embeddings", f"{full['http']['chat']:,} / {full['http']['embeddings']:,}",
         "", ""),
        ("client calls incl. in-run cache hits", _fmt(sum(s["calls"] for s in full["ledger"].values())), "", ""),
        ("harness CPU user+sys (s)", f"{full['cpu_s']:.1f} ({full['user_s']:.1f} + {full['sys_s']:.1f})",
         "", ""),
        ("harness CPU per LLM call (ms)", _fmt(full.get("cpu_ms_per_call"), 3),
         *target("harness CPU per LLM call (ms)")),
    ]  # fmt: skip
    if "startup" in res:
        st = res["startup"]
        rows.append(
            ("  startup alone (dry run): CPU s / wall s", f"{st['cpu_s']:.2f} / {st['wall_s']:.2f}", "", "")
        )
        rows.append(
            ("  CPU per call after startup (ms)", _fmt(full.get("cpu_ms_per_call_after_startup"), 3), "", "")
        )
    rows += [
        ("harness peak RSS (MB)", _fmt(full["peak_rss_mb"], 0), *target("harness peak RSS (MB)")),
        ("stand-in CPU, own process (s)", _fmt(full["standin_cpu_s"], 1), "", ""),
        ("ingestion finished after (s, in full run)", _fmt(full["ingest_done_s"], 1), "", ""),
    ]
    ing = res.get("ingest_run")
    if ing:
        rows += [
            ("ingestion run (1 question/conv.): wall (s)", _fmt(ing["wall_s"], 1), "", ""),
            ("ingestion run: HTTP chat / embeddings", f"{ing['http']['chat']:,} / {ing['http']['embeddings']:,}",
             "", ""),
            ("ingestion run: CPU per call (ms)", _fmt(ing.get("cpu_ms_per_call"), 3), "", ""),
        ]  # fmt: skip
    pt = full["ingest_per_turn"] or {}
    rows += [
        ("ingest per turn: chat / embedding calls", f"{_fmt(pt.get('chat_calls'))} / "
         f"{_fmt(pt.get('embedding_calls'))}", "", ""),
        ("ingest per turn: prompt / completion tokens", f"{_fmt(pt.get('prompt_tokens'), 0)} / "
         f"{_fmt(pt.get('completion_tokens'), 0)}", "", ""),
        ("memory store per conversation (tokens)", _fmt(full["memory_tokens_mean"], 0), "", ""),
        ("local search p50 / p95 / max (ms)", f"{_fmt(full['local_search_ms']['p50'], 3)} / "
         f"{_fmt(full['local_search_ms']['p95'], 3)} / {_fmt(full['local_search_ms']['max'], 1)}",
         *target("local search p95 (ms)")),
        ("search latency p50 / p95 (ms)", f"{_fmt(full['search_latency_ms']['p50'], 2)} / "
         f"{_fmt(full['search_latency_ms']['p95'], 2)}", "", ""),
    ]  # fmt: skip
    return rows


def overlap_rows(res: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    run = res["run"]
    ideal = run["ideal"]
    check = res["checks"][0]
    rows = [
        ("conversations / questions / judge runs", f"{run['n_conversations']} / {run['n_questions']} / "
         f"{run['judge_runs']}", "", ""),
        ("latency per call (ms)", _fmt(res["latency_ms"], 0), "", ""),
        ("HTTP requests: chat / embeddings", f"{run['http']['chat']:,} / {run['http']['embeddings']:,}", "", ""),
        ("wall time (s)", _fmt(run["wall_s"], 1), "", ""),
        ("calls x latency / wall", _fmt(run["overlap"], 2), check["target"], _verdict(check["pass"])),
    ]  # fmt: skip
    if "overlap_after_startup" in run:
        rows.append(
            ("  same, startup (dry-run wall) excluded", _fmt(run["overlap_after_startup"], 2), "", "")
        )
    rows += [
        ("peak requests in flight (stand-in)", _fmt(run["standin_max_in_flight"]), "", ""),
        ("llm.max_concurrency / ingest streams", f"{ideal['max_concurrency']} / {ideal['parallel_streams']}", "", ""),
        ("ideal wall: critical path / capacity (s)", f"{ideal['critical_path_s']:.1f} / "
         f"{ideal['capacity_bound_s']:.1f}", "", ""),
        ("ideal calls x latency / wall", _fmt(ideal["parallelism"], 2), "", ""),
        ("achieved / ideal (ideal wall / wall)", _fmt(run["achieved_over_ideal"], 2), "", ""),
    ]  # fmt: skip
    measured = run.get("ideal_measured_roundtrip")
    if measured:
        rt = measured["roundtrip_ms"]
        rows += [
            (f"bare-client round trip, {measured['parallel_streams']} chains: mean / p50 (ms)",
             f"{rt['mean']:.1f} / {rt['p50']:.1f}", "", ""),
            ("ideal wall with that round trip (s)", _fmt(measured["wall_s"], 1), "", ""),
            ("achieved / that ideal", _fmt(run["achieved_over_ideal_measured"], 2), "", ""),
        ]  # fmt: skip
    rows += [
        ("harness CPU (s) / peak RSS (MB)", f"{run['cpu_s']:.1f} / {run['peak_rss_mb']:.0f}", "", ""),
    ]  # fmt: skip
    return rows


def search_rows(res: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    rows = []
    for method, m in res["methods"].items():
        for where, key, check in (("in run", "in_run_ms", 0), ("isolated", "isolated_ms", 1)):
            s = m[key]
            c = m["checks"][check]
            rows.append(
                (
                    f"{method} local search, {where}: p50 / p95 / max (ms), n={s['n']}",
                    f"{_fmt(s['p50'], 3)} / {_fmt(s['p95'], 3)} / {_fmt(s['max'], 2)}",
                    c["target"],
                    _verdict(c["pass"]),
                )
            )
    return rows


HEADER = ("figure", "value", "target", "result")


def render_text(results: list[dict[str, Any]]) -> str:
    parts = []
    for res in results:
        if res["command"] == "overhead":
            title = f"overhead: {res['method']}, zero-latency stand-in, judge.runs={res['judge_runs']}"
            parts.append(title + "\n" + _table(overhead_rows(res), HEADER))
        elif res["command"] == "overlap":
            title = f"overlap: {res['method']}, {res['latency_ms']:g} ms a call, default settings"
            parts.append(title + "\n" + _table(overlap_rows(res), HEADER))
        elif res["command"] == "search":
            parts.append("search time excluding network\n" + _table(search_rows(res), HEADER))
    return "\n\n".join(parts)


def _md_table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c).strip() for c in r) + " |" for r in rows]
    return "\n".join(out)


def render_markdown(results: list[dict[str, Any]], machine: dict[str, Any], bench_command: str) -> str:
    lines = [
        f"Measured {machine['date']} on {machine['nproc']} CPUs ({machine['cpu_model']}), "
        f"{machine['memory_gb']} GB RAM, Python {machine['python']}; load average at start "
        f"{machine['loadavg_1m']}.",
        "",
        f"    {bench_command}",
        "",
    ]
    for res in results:
        if res["command"] == "overhead":
            lines.append(
                f"### overhead: {res['method']} (zero-latency stand-in, judge.runs={res['judge_runs']})"
            )
            lines.append("")
            lines.append(_md_table(overhead_rows(res), HEADER))
            runs = [res.get("startup"), res.get("ingest_run"), res["full_run"]]
        elif res["command"] == "overlap":
            lines.append(f"### overlap: {res['method']} ({res['latency_ms']:g} ms a call, default settings)")
            lines.append("")
            lines.append(_md_table(overlap_rows(res), HEADER))
            runs = [res.get("startup"), res["run"]]
        elif res["command"] == "search":
            lines.append("### search time excluding network")
            lines.append("")
            lines.append(_md_table(search_rows(res), HEADER))
            runs = []
        else:
            continue
        shown = [r for r in runs if r]
        if shown:
            lines += ["", "Commands run (each with its own fresh `MEM0BENCH_CACHE_DIR`):", ""]
            lines += [f"    {r['command']}" for r in shown]
            loads = ", ".join(f"{r['label']}: {r['loadavg_1m'][0]} -> {r['loadavg_1m'][1]}" for r in shown)
            lines += ["", f"Load average (1 min) before -> after: {loads}."]
        lines.append("")
    return "\n".join(lines)


# ---- the command ------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mem0bench bench",
        description="Harness speed and memory, measured against the local stand-in OpenAI server "
        "(run from the repository checkout).",
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

    s = sub.add_parser("search", help="local search time for Mem0 and Mem0^g at LOCOMO scale")
    common(s)
    s.add_argument("--methods", default="mem0,mem0g")
    s.add_argument(
        "--run", action="append", default=[], metavar="METHOD=RUN_DIR",
        help="reuse a finished run instead of running one (repeatable)",
    )  # fmt: skip
    s.add_argument("--conversations", default=None)
    s.add_argument("--max-questions", type=int, default=None)

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


def bench_main(argv: list[str]) -> int:
    if argv[:1] == ["standin"]:
        return _serve_standin(argv[1:])
    if argv[:1] == ["isolated"]:
        return _serve_isolated(argv[1:])
    if argv[:1] == ["roundtrip"]:
        return _serve_roundtrip(argv[1:])
    args = _parser().parse_args(argv)
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"error: --env wants KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        EXTRA_ENV[key] = value
    dataset = args.dataset or _default_dataset()
    if dataset is None or not Path(dataset).is_file():
        print("error: no LOCOMO file: pass --dataset PATH (locomo10.json)", file=sys.stderr)
        return 2
    dataset = Path(dataset).resolve()
    if args.out is not None:
        out = args.out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        tmp = None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="mem0bench-bench-")
        out = Path(tmp.name)
    log = sys.stderr
    machine = machine_info()
    bench_command = shlex.join(["python", "-m", "mem0bench", "bench", *argv])
    machine["harness_env"] = dict(EXTRA_ENV)
    common = {"extra": args.set, "log": log}
    results: list[dict[str, Any]] = []
    errors: list[str] = []
    startup = not args.no_startup

    def save() -> None:
        if tmp is None:  # partial results survive a failed or interrupted section
            payload = {
                "machine": machine,
                "bench_command": bench_command,
                "results": results,
                "errors": errors,
            }
            (out / "bench.json").write_text(json.dumps(payload, indent=2), encoding="utf-8")

    def section(name: str, fn: Any) -> dict[str, Any] | None:
        try:
            res = fn()
        except BenchError as exc:
            errors.append(f"{name}: {exc}")
            print(f"error: {name}: {exc}", file=sys.stderr)
            save()
            return None
        results.append(res)
        save()
        return res

    try:
        if args.command == "overhead":
            section("overhead", lambda: bench_overhead(
                out, dataset, method=args.method, conversations=_ids(args.conversations),
                max_questions=args.max_questions, judge_runs=args.judge_runs,
                ingest_run=not args.no_ingest_run, startup_run=startup, **common,
            ))  # fmt: skip
        elif args.command == "overlap":
            section("overlap", lambda: bench_overlap(
                out, dataset, method=args.method, conversations=_ids(args.conversations) or [],
                latency_ms=args.latency_ms, max_questions=args.max_questions, judge_runs=args.judge_runs,
                concurrency=args.concurrency, startup_run=startup, **common,
            ))  # fmt: skip
        elif args.command == "search":
            runs = {}
            for item in args.run:
                method, sep, path = item.partition("=")
                if not sep:
                    print(f"error: --run wants METHOD=RUN_DIR, got {item!r}", file=sys.stderr)
                    return 2
                runs[method] = Path(path).resolve()
            section("search", lambda: bench_search(
                out, dataset, methods=_ids(args.methods) or [], runs=runs,
                conversations=_ids(args.conversations), max_questions=args.max_questions, **common,
            ))  # fmt: skip
        else:  # all
            runs = {}
            for method in _ids(args.methods) or []:
                res = section(f"overhead {method}", lambda m=method: bench_overhead(
                    out, dataset, method=m, conversations=_ids(args.conversations),
                    max_questions=args.max_questions, judge_runs=1, ingest_run=not args.no_ingest_run,
                    startup_run=startup, **common,
                ))  # fmt: skip
                if res is not None:
                    runs[method] = Path(res["full_run"]["run_dir"])
            for method in _ids(args.overlap_methods) or []:
                section(f"overlap {method}", lambda m=method: bench_overlap(
                    out, dataset, method=m, startup_run=startup, **common
                ))  # fmt: skip
            if runs:
                section("search", lambda: bench_search(out, dataset, methods=list(runs), runs=runs, **common))
        machine["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
        save()
        checks = [c for r in results for c in r.get("checks", [])]
        if args.json:
            print(json.dumps({"machine": machine, "bench_command": bench_command, "results": results,
                              "checks": checks, "errors": errors}, indent=2))  # fmt: skip
        else:
            print(f"machine: {machine['nproc']} CPUs ({machine['cpu_model']}), {machine['memory_gb']} GB, "
                  f"Python {machine['python']}, load {machine['loadavg_1m']} -> {machine['loadavg_1m_end']}")  # fmt: skip
            print(render_text(results))
            for error in errors:
                print(f"\nerror: {error}")
            if args.command == "all":
                print("\n---- markdown for docs/benchmarks.md ----\n")
                print(render_markdown(results, machine, bench_command))
        if args.command == "all" and args.markdown is not None:
            args.markdown.write_text(render_markdown(results, machine, bench_command), encoding="utf-8")
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 1 if errors else 0
