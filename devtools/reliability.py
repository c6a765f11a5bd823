"""Helpers for the reliability tests (crash safety, faults, secrets, preflight): real CLI processes against
the stand-in server, started with Popen so a test can kill them at a chosen moment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devtools.e2e import REPO, TEST_KEY, cli_env, read_jsonl
from devtools.standin.server import Reset

PAID = ("chat", "embeddings")


def small_sample(tmp_path: Path, locomo: Path, sessions: int = 2, questions: int = 6) -> Path:
    """The fixture's mini-1 cut to its first `sessions` sessions and the first questions whose evidence
    lies in them (Mem0 makes ~4 LLM calls per message pair per speaker). Everything else is kept."""
    data = json.loads(locomo.read_text(encoding="utf-8"))
    sample = next(s for s in data if s["sample_id"] == "mini-1")
    conv = sample["conversation"]
    kept = {k: v for k, v in conv.items() if not k.startswith("session_")}
    for n in range(1, sessions + 1):
        kept[f"session_{n}"] = conv[f"session_{n}"]
        kept[f"session_{n}_date_time"] = conv[f"session_{n}_date_time"]
    prefixes = tuple(f"D{n}:" for n in range(1, sessions + 1))
    qa = [
        q
        for q in sample["qa"]
        if q.get("category") != 5 and q.get("evidence") and all(e.startswith(prefixes) for e in q["evidence"])
    ][:questions]
    out = tmp_path / "conv30_small.json"
    out.write_text(json.dumps([{**sample, "conversation": kept, "qa": qa}]), encoding="utf-8")
    return out


def paid(server) -> int:
    """Requests the stand-in answered with a reply that costs money (HTTP 200 chat and embeddings)."""
    return sum(server.count(endpoint, 200) for endpoint in PAID)


def run_args(exp: str, dataset: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        "run", f"+exp={exp}", f"dataset.path={dataset}", "dataset.conversations=[mini-1]",
        f"hydra.run.dir={run_dir}", "llm.backoff_base_s=0.01", "llm.backoff_max_s=0.05",
        "llm.timeout_s=5", "run.progress=false", *extra,
    ]  # fmt: skip


def ctrl_c_reaches_the_child() -> None:
    """Popen's preexec_fn: SIGINT back to its default in the child. A suite started in the background
    (`nohup pytest &`, `trap '' INT`) ignores SIGINT, children inherit that, and Python then installs no
    KeyboardInterrupt handler: a test's Ctrl-C would be lost. A user's terminal has the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_cli(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mem0bench", *args],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=ctrl_c_reaches_the_child,
    )  # fmt: skip


def finish_cli(proc: subprocess.Popen[str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL: no handler, no finally block, no flush runs in the victim."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)


def wait_for(condition: Callable[[], bool], proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(
                f"the run ended (rc {proc.returncode}) before the kill point:\n{err[-3000:]}"
            )
        if time.monotonic() > deadline:
            kill(proc)
            raise AssertionError("the kill point was never reached")
        time.sleep(0.002)


def lines(path: Path) -> int:
    return len(read_jsonl(path)) if path.exists() else 0


# ---- telling the stages apart by their requests -----------------------------------------------------
def request_stage(endpoint: str, body: dict[str, Any]) -> str:
    """Which pipeline stage sent a request (the stand-in sees only HTTP): judge, answer, ingest or search."""
    if endpoint == "embeddings":
        inputs = body.get("input")
        return "ingest" if isinstance(inputs, list) and len(inputs) > 1 else "embed"
    tools = body.get("tools") or []
    names = {(t.get("function") or {}).get("name") for t in tools if isinstance(t, dict)}
    names.add(((body.get("response_format") or {}).get("json_schema") or {}).get("name"))
    if "record_verdict" in names:
        return "judge"
    if "preflight_check" in names:  # the client's structured-output probe, before any work
        return "preflight"
    if not tools and not body.get("response_format"):
        text = " ".join(str(m.get("content") or "") for m in body.get("messages", []))
        return "answer" if "How to answer:" in text and "<context>" in text else "ingest"
    return "ingest"


class StageCount:
    """A stand-in handler that counts the paid requests per pipeline stage (`request_stage`) and answers
    them as usual."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()

    def __call__(self, endpoint: str, body: dict[str, Any]) -> None:
        if endpoint in PAID:
            self.seen[request_stage(endpoint, body)] += 1


class Gate:
    """A stand-in handler that, once `trigger(stage, n)` is true for the n-th request of a stage, holds
    that request and every later one until released, then resets their connections (never a 200, so
    never paid). The process under test is thereby frozen at a known point, and can be killed there."""

    def __init__(self, trigger: Callable[[str, int], bool]):
        self.trigger = trigger
        self.seen: dict[str, int] = {}
        self.tripped = threading.Event()
        self.released = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint not in PAID:
            return None
        stage = request_stage(endpoint, body)
        with self._lock:
            self.seen[stage] = self.seen.get(stage, 0) + 1
            if not self.tripped.is_set() and self.trigger(stage, self.seen[stage]):
                self.tripped.set()
            held = self.tripped.is_set()
        if not held:
            return None
        self.released.wait(60)
        return Reset()


def env_for(server, cache: Path, key: str | None = TEST_KEY) -> dict[str, str]:
    return cli_env(server.base_url, cache, key=key)
