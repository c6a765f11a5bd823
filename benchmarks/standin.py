"""The stand-in OpenAI server in a process of its own, and the request counters it reports.

A separate process so that the server's CPU never counts as the harness's; it talks over a pipe: it
prints its port, then one JSON line of counters for each "stats" line it reads, and stops at end of input.
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import select
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.settings import REPO, STANDIN_MODULE, BenchError, standin_env


@dataclass(frozen=True)
class StandinStats:
    """The stand-in's counters at one moment."""

    counts: dict[str, int]  # requests served so far, per "endpoint:status"
    max_in_flight: int  # peak of requests in flight since the previous stats() call
    cpu_s: float  # the server process's own CPU seconds so far


@dataclass(frozen=True)
class Requests:
    """HTTP requests served between two `StandinStats`."""

    chat: int
    embeddings: int
    errors: int  # non-200 replies, chat and embeddings

    @property
    def total(self) -> int:
        return self.chat + self.embeddings

    def as_dict(self) -> dict[str, int]:
        return {"chat": self.chat, "embeddings": self.embeddings, "errors": self.errors, "total": self.total}


def requests_between(before: StandinStats, after: StandinStats) -> Requests:
    """Chat and embedding requests (and the failed ones among them) served between two stats() calls."""
    served = {"chat": 0, "embeddings": 0, "errors": 0}
    for key, n in after.counts.items():
        delta = n - before.counts.get(key, 0)
        endpoint, status = key.rsplit(":", 1)
        if endpoint in ("chat", "embeddings"):
            served[endpoint] += delta
            if status != "200":
                served["errors"] += delta
    return Requests(**served)


class Standin:
    """The stand-in server as a child process (`with Standin(latency_ms, log) as s: s.base_url, s.stats()`)."""

    def __init__(
        self,
        latency_ms: float,
        log_path: Path,
        handler: str | None = None,
        *,
        ratelimit: tuple[int, int] | None = None,
        ratelimit_window_s: float | None = None,
    ) -> None:
        self.latency_ms = latency_ms
        self.handler = handler  # "module:function" for `StandinServer.set_handler` (a library's replies)
        # An enforced budget (requests, tokens "a minute", refilled in `ratelimit_window_s`): see `budget()`.
        self.ratelimit = ratelimit
        self.ratelimit_window_s = ratelimit_window_s
        self.log_path = log_path
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0

    def __enter__(self) -> Standin:
        if not STANDIN_MODULE.is_file():
            raise BenchError(f"bench needs the repository's stand-in server at {STANDIN_MODULE}")
        self._log = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in __exit__
        cmd = [sys.executable, "-m", "benchmarks", "standin", "--latency-ms", f"{self.latency_ms:g}"]
        if self.handler:
            cmd += ["--handler", self.handler]
        if self.ratelimit is not None and self.ratelimit_window_s is not None:
            cmd += ["--ratelimit", f"{self.ratelimit[0]},{self.ratelimit[1]}"]
            cmd += ["--ratelimit-window-s", f"{self.ratelimit_window_s:g}"]
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, env=standin_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
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
        # select() first: a stand-in that hangs must fail the measurement, not block it forever.
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return self.proc.stdout.readline().strip() if ready else ""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _ask(self, what: str) -> Any:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(f"{what}\n")
        self.proc.stdin.flush()
        line = self._readline(timeout=30)
        if not line:
            raise BenchError("the stand-in stopped answering")
        return json.loads(line)

    def stats(self) -> StandinStats:
        """The counters now (and reset the in-flight peak)."""
        return StandinStats(**self._ask("stats"))

    def budget(self) -> dict[str, Any]:
        """The enforced budget's account so far: `limits` (requests, tokens a "minute"), `window_s`,
        `charged` (requests, tokens), `use` (the stand-in's own share, full bucket at the start included),
        `started` / `last` (monotonic seconds: first admitted request, last reply), and `admitted`: one
        [monotonic seconds, tokens charged on arrival] pair per admitted request."""
        return dict(self._ask("budget"))

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()  # end of input: the server stops
                self.proc.wait(timeout=15)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        self._log.close()


def load_handler(spec: str) -> Callable[[str, dict[str, Any]], Any]:
    """A stand-in reply function from "module:function", or "module:factory()" for one a factory makes."""
    module, _, name = spec.partition(":")
    found = getattr(importlib.import_module(module), name.removesuffix("()"))
    return found() if name.endswith("()") else found


def serve_standin(argv: list[str]) -> int:
    """Hidden subcommand `standin [--latency-ms MS]`: the child side of `Standin`."""
    p = argparse.ArgumentParser(prog="python -m benchmarks standin")
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument(
        "--handler",
        default=None,
        metavar="MODULE:FUNCTION",
        help="the server's reply function (MODULE:FACTORY() to call a factory for it)",
    )
    p.add_argument("--ratelimit", default=None, metavar="REQUESTS,TOKENS", help="an enforced budget")
    p.add_argument("--ratelimit-window-s", type=float, default=None, help="its 'minute', in seconds")
    a = p.parse_args(argv)
    if str(REPO) not in sys.path:  # the server lives in the checkout's tests/, not in the package
        sys.path.insert(0, str(REPO))
    from devtools.standin.server import StandinServer

    ratelimit: tuple[int, int] | None = None
    if a.ratelimit:
        requests_limit, tokens_limit = (int(v) for v in a.ratelimit.split(","))
        ratelimit = (requests_limit, tokens_limit)
    server = StandinServer(
        latency_ms=a.latency_ms, ratelimit=ratelimit, ratelimit_window_s=a.ratelimit_window_s
    ).start()
    if a.handler:
        server.set_handler(load_handler(a.handler))
    admitted = _record_admissions(server.budget)
    print(server.port, flush=True)
    try:
        for line in sys.stdin:
            if line.strip() == "budget":
                print(json.dumps(_budget_account(server, admitted)), flush=True)
                continue
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


def _record_admissions(budget: Any) -> list[list[float]]:
    """[time, tokens] of every request `budget` admits (the stand-in keeps totals only; a run's stages are
    told apart by when their requests came)."""
    admitted: list[list[float]] = []
    if budget is None:
        return admitted
    admit = budget.admit

    def recorded(tokens: int, now: float) -> float | None:
        wait = admit(tokens, now)
        if wait is None:
            admitted.append([now, float(tokens)])
        return wait

    budget.admit = recorded
    return admitted


def _budget_account(server: Any, admitted: list[list[float]]) -> dict[str, Any]:
    budget = server.budget
    if budget is None:
        return {}
    with server._lock:
        return {
            "limits": list(budget.limits),
            "window_s": budget.window_s,
            "charged": list(budget.charged),
            "started": budget.started,
            "last": budget.last,
            "use": budget.use(time.monotonic()),
            "admitted": [list(row) for row in admitted],
        }
