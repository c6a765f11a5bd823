"""A stand-in server in its own process, killed as a crashed server would be, and the Mem0 run pointed at
it: shared by tests/test_unreachable.py and scripts/unreachable_stop.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from devtools.e2e import REPO, TEST_KEY

__all__ = ["CONCURRENCY", "QUESTIONS", "SETTINGS", "WINDOW_S", "kill_server", "run_args", "start_server"]

WINDOW_S = 3
QUESTIONS = 4
CONCURRENCY = 4
# Calls would retry for a long time on their own (100 retries each with backoff up to 2 s: minutes per
# call, item after item): only the window can stop the run early.
SETTINGS = (
    f"llm.unreachable_after_s={WINDOW_S}", "llm.max_retries=100", f"llm.max_concurrency={CONCURRENCY}",
    "llm.backoff_base_s=0.5", "llm.backoff_max_s=2", "llm.timeout_s=5", "run.progress=false",
    f"eval.max_questions={QUESTIONS}", "judge.runs=1",
)  # fmt: skip


def run_args(dataset: Path, run_dir: Path) -> list[str]:
    return [
        "run", "+exp=mem0", f"dataset.path={dataset}", "dataset.conversations=[mini-1]",
        f"hydra.run.dir={run_dir}", *SETTINGS,
    ]  # fmt: skip


def start_server(port: int = 0) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "STANDIN_KEY": TEST_KEY}
    proc = subprocess.Popen(
        [sys.executable, "-m", "devtools.standin.server", "--port", str(port), "--latency-ms", "20",
         "--api-key-env", "STANDIN_KEY"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = proc.stdout.readline()
    if not line.strip().isdigit():
        proc.kill()
        raise AssertionError(f"the stand-in did not start: {proc.stderr.read()[-2000:]}")
    return proc, int(line)


def kill_server(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
