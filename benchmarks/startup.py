"""`python -m benchmarks startup`: how long a small run takes to start and to finish.

A `run` on the committed fixture (tests/data/locomo_mini.json, one conversation, three questions) against
the stand-in server: the wall time from starting the process to the first LLM request the server receives
(imports, config, preflight, dataset, building the system), and from the last request the server receives
to the process's exit (the last reply, aggregation, metrics, files). Fresh cache and run folder each time;
the median of `--repeat` runs per experiment. The stand-in runs in this process: only wall time is measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.settings import BENCH_KEY, REPO, harness_env

FIXTURE = REPO / "tests" / "data" / "locomo_mini.json"


@dataclass(frozen=True)
class StartupFigures:
    """One run: seconds to the first request, after the last, and in all; requests seen."""

    to_first_request_s: float
    after_last_request_s: float
    wall_s: float
    requests: int


class _Clock:
    """A stand-in handler that notes when each request arrives and lets the stand-in answer it."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, endpoint: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.times.append(time.perf_counter())


def measure_once(method: str, work: Path, extra: list[str]) -> StartupFigures:
    from tests.standin.server import StandinServer

    clock = _Clock()
    with StandinServer(api_key=BENCH_KEY) as server:
        server.set_handler(clock)
        argv = [
            sys.executable, "-m", "mem0bench", "run", f"+exp={method}", f"dataset.path={FIXTURE}",
            "dataset.conversations=[mini-1]", "eval.max_questions=3", "judge.runs=1", "run.progress=false",
            f"hydra.run.dir={work / 'run'}", *extra,
        ]  # fmt: skip
        env = harness_env(server.base_url, work / "cache", {})
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        t_exit = time.perf_counter()
    if done.returncode != 0 or not clock.times:
        raise RuntimeError(f"{method}: run exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return StartupFigures(
        to_first_request_s=clock.times[0] - t0,
        after_last_request_s=t_exit - clock.times[-1],
        wall_s=t_exit - t0,
        requests=len(clock.times),
    )


def startup_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks startup", description=__doc__.split("\n")[0])
    p.add_argument("--methods", default="rag,full_context,mem0,mem0g", help="experiments (+exp=...)")
    p.add_argument("--repeat", type=int, default=5, help="runs per experiment (the median is reported)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="an extra Hydra override")
    p.add_argument("--json", action="store_true", help="print every run's figures as JSON")
    args = p.parse_args(argv)
    results: dict[str, list[StartupFigures]] = {}
    with tempfile.TemporaryDirectory(prefix="mem0bench-startup-") as tmp:
        for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
            runs = []
            for i in range(args.repeat):
                work = Path(tmp) / f"{method}-{i}"
                work.mkdir()
                try:
                    runs.append(measure_once(method, work, args.set))
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    print(f"error: {exc}", file=sys.stderr)
                    return 1
            results[method] = runs
    if args.json:
        print(json.dumps({m: [asdict(r) for r in runs] for m, runs in results.items()}, indent=2))
        return 0
    print("| experiment | to first request (s) | after last request (s) | wall (s) | requests |")
    print("|---|---|---|---|---|")
    for method, runs in results.items():
        med = {k: statistics.median(getattr(r, k) for r in runs) for k in asdict(runs[0])}
        spread = {
            k: f"{min(getattr(r, k) for r in runs):.2f}-{max(getattr(r, k) for r in runs):.2f}"
            for k in ("to_first_request_s", "after_last_request_s")
        }
        print(
            f"| {method} | {med['to_first_request_s']:.2f} ({spread['to_first_request_s']}) "
            f"| {med['after_last_request_s']:.2f} ({spread['after_last_request_s']}) "
            f"| {med['wall_s']:.2f} | {int(med['requests'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(startup_main(sys.argv[1:]))
