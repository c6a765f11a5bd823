"""`python -m benchmarks startup`: how long a small run takes to start and to finish.

A `run` on the committed fixture (tests/data/locomo_mini.json, one conversation, three questions) against
the stand-in server: the wall time from starting the process to the first LLM request the server receives
(imports, config, preflight, dataset, building the system; the preflight's GET /models just before it is
not stamped), stamped on arrival (with `--latency-ms`, before the reply's delay), to the first request that is not one of the
preflight's probes (`llm.probe`: a tiny structured request, then one embedding; what comes between the
two first requests is start-up too), and from the last request the server receives to the process's exit
(the last reply, aggregation, metrics, files). Fresh LLM cache and run folder each time; the
median of `--repeat` runs per experiment. Hydra composes the config on every run (nothing of it is kept
between runs), so there is one figure per experiment. Each phase is given in wall time and in the harness
process's own CPU time (user + sys, read from /proc when the stand-in sees a request, and from the kernel
at exit): on a shared machine the wall time includes waiting for a core, the CPU time does not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.machine import cpu_ticks, steal_pct
from benchmarks.settings import BENCH_KEY, REPO, harness_env

FIXTURE = REPO / "tests" / "data" / "locomo_mini.json"


@dataclass(frozen=True)
class StartupFigures:
    """One run: seconds to the first request, after the last, and in all; requests seen."""

    to_first_request_s: float
    to_first_work_request_s: float
    """To the first request after the preflight's probes (the run's own work)."""
    after_last_request_s: float
    wall_s: float
    cpu_to_first_request_s: float
    cpu_to_first_work_request_s: float
    cpu_after_last_request_s: float
    cpu_s: float
    requests: int


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float | None:
    """User + sys CPU seconds of a running process (all its threads), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14 and 15 of stat)


Handler = Callable[[str, dict[str, Any]], Any]


class Clock:
    """A stand-in handler that notes when each request arrives (wall, and the harness's CPU so far) and
    lets the stand-in answer it (with `reply`'s answer when given: a library's reply formats)."""

    def __init__(self, reply: Handler | None = None) -> None:
        self.pid = 0
        self.times: list[tuple[float, float | None]] = []
        self.work: tuple[float, float | None] | None = None
        """The first request that is not a preflight probe."""
        # Imported here, before the harness starts: on the first request it would hold up the reply.
        from mem0bench.llm.probes import _EMBED_PROBE, _PROBE_MESSAGES

        self._probes = (_PROBE_MESSAGES, _EMBED_PROBE)
        self.endpoints: Counter[str] = Counter()
        self._reply = reply
        self._lock = threading.Lock()

    def __call__(self, endpoint: str, body: dict[str, Any]) -> Any:
        stamp = (time.perf_counter(), _cpu_s(self.pid) if self.pid else None)
        with self._lock:
            self.times.append(stamp)
            self.endpoints[endpoint] += 1
            if self.work is None and not self._is_probe(body):
                self.work = stamp
        return None if self._reply is None else self._reply(endpoint, body)

    def _is_probe(self, body: dict[str, Any]) -> bool:
        """Whether a request is one of the preflight's probes (mem0bench/llm/probes.py)."""
        messages, embed_input = self._probes
        return body.get("messages") == messages or body.get("input") == embed_input


def measure_once(
    method: str,
    run_dir: Path,
    work: Path,
    extra: list[str],
    latency_ms: float = 0.0,
    checkout: Path = REPO,
    env_extra: dict[str, str] | None = None,
) -> StartupFigures:
    """One run of `method` with its LLM cache under `work`; the run folder `run_dir` is removed afterwards,
    so the next run has the same command line and starts anew."""
    argv = [
        sys.executable, "-m", "mem0bench", "run", f"+exp={method}", f"dataset.path={FIXTURE}",
        "dataset.conversations=[mini-1]", "eval.max_questions=3", "judge.runs=1", "run.progress=false",
        f"hydra.run.dir={run_dir}", *extra,
    ]  # fmt: skip
    try:
        return measure_argv(argv, work, Clock(), env_extra, latency_ms, checkout)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def measure_argv(
    argv: list[str],
    work: Path,
    clock: Clock,
    env_extra: dict[str, str] | None = None,
    latency_ms: float = 0.0,
    checkout: Path = REPO,
) -> StartupFigures:
    """Run `argv` (a `python -m mem0bench run ...`, from `checkout`) against a stand-in in this process that
    stamps every request with `clock`; its cache under `work`."""
    from devtools.standin.server import StandinServer, warm_tokenizers

    warm_tokenizers()  # else the stand-in's first reply waits for its own tiktoken load
    with StandinServer(api_key=BENCH_KEY, latency_ms=latency_ms) as server:
        server.set_handler(clock)
        env = harness_env(server.base_url, work / "cache", env_extra or {})
        log = work / "run.stderr"
        with open(log, "wb") as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(argv, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=err)
            clock.pid = proc.pid
            _, status, usage = os.wait4(proc.pid, 0)
            t_exit = time.perf_counter()
    code = os.waitstatus_to_exitcode(status)
    if code != 0 or not clock.times:
        raise RuntimeError(f"{' '.join(argv[3:5])}: run exited {code}: {log.read_text()[-2000:]}")
    cpu_total = usage.ru_utime + usage.ru_stime
    (first, cpu_first), (last, cpu_last) = clock.times[0], clock.times[-1]
    at_work, cpu_work = clock.work or (float("nan"), None)
    return StartupFigures(
        to_first_request_s=first - t0,
        to_first_work_request_s=at_work - t0,
        after_last_request_s=t_exit - last,
        wall_s=t_exit - t0,
        cpu_to_first_request_s=cpu_first if cpu_first is not None else float("nan"),
        cpu_to_first_work_request_s=cpu_work if cpu_work is not None else float("nan"),
        cpu_after_last_request_s=cpu_total - cpu_last if cpu_last is not None else float("nan"),
        cpu_s=cpu_total,
        requests=len(clock.times),
    )


def startup_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks startup", description=__doc__.split("\n")[0])
    p.add_argument("--methods", default="rag,full_context,mem0,mem0g", help="experiments (+exp=...)")
    p.add_argument("--repeat", type=int, default=5, help="runs per experiment (the median is reported)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="an extra Hydra override")
    p.add_argument(
        "--latency-ms", type=float, default=0.0, help="the stand-in's delay per request (an API's)"
    )
    p.add_argument("--json", action="store_true", help="print every run's figures as JSON")
    p.add_argument(
        "--base", type=Path, default=None,
        help="another checkout (a source tree) to measure too, its runs alternating with this one's",
    )  # fmt: skip
    args = p.parse_args(argv)
    checkouts = {"this": REPO, **({"base": args.base.resolve()} if args.base else {})}
    results: dict[tuple[str, str], list[StartupFigures]] = {}
    ticks = cpu_ticks()
    # Older checkouts (before issue 31) cache Hydra's composed config unless told not to: off, so that
    # `--base` measures what every run of theirs would pay the first time.
    no_compose_cache = {"MEM0BENCH_COMPOSE_CACHE": "off"}
    with tempfile.TemporaryDirectory(prefix="mem0bench-startup-") as tmp:
        for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
            # The two checkouts' runs alternate, so a drift in the machine's load falls on both.
            for i in range(args.repeat):
                for side in checkouts:
                    work = Path(tmp) / f"{side}-{method}-{i}"
                    work.mkdir()
                    run_dir = Path(tmp) / f"run-{side}-{method}"
                    try:
                        fig = measure_once(
                            method,
                            run_dir,
                            work,
                            args.set,
                            args.latency_ms,
                            checkouts[side],
                            no_compose_cache,
                        )
                    except (RuntimeError, subprocess.TimeoutExpired) as exc:
                        print(f"error: {exc}", file=sys.stderr)
                        return 1
                    results.setdefault((side, method), []).append(fig)
    if args.json:
        print(
            json.dumps(
                {f"{side} {m}": [asdict(r) for r in runs] for (side, m), runs in results.items()}, indent=2
            )
        )
        return 0
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs, CPU steal "
        f"{steal_pct(ticks, cpu_ticks())}%; medians of {args.repeat} runs; stand-in latency {args.latency_ms:g} ms"
    )
    if args.base:
        print(f"this: {REPO}; base: {checkouts['base']}")
    print("| checkout | experiment | to first request: wall / CPU (s) | to first request after the probes: wall / CPU (s) "
          "| after last request: wall / CPU (s) | whole run: wall / CPU (s) | requests |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for (side, method), runs in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        med = {k: statistics.median(getattr(r, k) for r in runs) for k in asdict(runs[0])}
        print(
            f"| {side} | {method} | {med['to_first_request_s']:.2f} / {med['cpu_to_first_request_s']:.2f} "
            f"| {med['to_first_work_request_s']:.2f} / {med['cpu_to_first_work_request_s']:.2f} "
            f"| {med['after_last_request_s']:.2f} / {med['cpu_after_last_request_s']:.2f} "
            f"| {med['wall_s']:.2f} / {med['cpu_s']:.2f} | {int(med['requests'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(startup_main(sys.argv[1:]))
