"""heartbeat.json: which process works on a run directory, how far it got, and how to start it again.

A running `mem0bench run` rewrites the file every few seconds from a background thread (so a process
stuck waiting on a slow server still beats) with its pid, host, working directory, the overrides it was
started with and its progress counters. On a clean exit (finished, failed, Ctrl-C) it writes `ended`. A
process killed outright (SIGKILL, OOM killer, a cluster's time limit) leaves the file as it was: `status`
then finds the pid gone (same host) or the heartbeat old (another host, e.g. a cluster node).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mem0bench.rundir.directory import write_json

HEARTBEAT_FILE = "heartbeat.json"
INTERVAL_S = 5.0
STALE_AFTER_S = 60.0
"""A heartbeat older than this from another host means that process has most likely stopped."""


@dataclass(frozen=True)
class ProgressSnapshot:
    """Where a live run stands (what the heartbeat file carries for `mem0bench status`)."""

    done: dict[str, int]
    totals: dict[str, int]
    units: dict[str, str]
    eta_s: float | None
    """Seconds left for every stage still to come (None before there is anything to measure)."""
    calls: int
    cost_usd: float


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class HeartbeatInfo:
    """What heartbeat.json holds."""

    pid: int
    host: str
    session: str
    cwd: str
    overrides: list[str]
    """The run's task overrides as Hydra received them (the resume command repeats them)."""
    started: str
    updated: str
    ended: str | None = None
    progress: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, run_dir: Path) -> HeartbeatInfo | None:
        """The file's content; None when absent or unreadable (not a mem0bench heartbeat)."""
        try:
            data = json.loads((Path(run_dir) / HEARTBEAT_FILE).read_text(encoding="utf-8"))
            return cls(
                pid=int(data["pid"]), host=str(data["host"]), session=str(data.get("session", "")),
                cwd=str(data.get("cwd", "")), overrides=[str(o) for o in data.get("overrides", [])],
                started=str(data.get("started", "")), updated=str(data["updated"]), ended=data.get("ended"),
                progress=dict(data.get("progress") or {}),
            )  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def age_s(self, now: datetime | None = None) -> float | None:
        try:
            updated = datetime.fromisoformat(self.updated)
        except ValueError:
            return None
        return max(((now or datetime.now(UTC)) - updated).total_seconds(), 0.0)


@dataclass(frozen=True)
class Liveness:
    working: bool | None
    """True: a process is working on the run; False: none is; None: cannot tell (another host, recent beat)."""
    detail: str


def _pid_runs_mem0bench(pid: int) -> bool:
    """The pid exists and (where /proc says) is a mem0bench process, not a reused pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, another user's
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
    except OSError:
        return True  # no /proc (macOS): the pid exists, take it
    for i, arg in enumerate(args):
        if arg == "-m" and i + 1 < len(args) and args[i + 1] == "mem0bench":  # python -m mem0bench
            return True
        if Path(arg).name == "mem0bench" or arg.endswith("mem0bench/__main__.py"):  # a script, a checkout
            return True
    return False


def liveness(info: HeartbeatInfo | None, now: datetime | None = None) -> Liveness:
    if info is None:
        return Liveness(None, "unknown: no heartbeat.json (the run never started, or predates heartbeats)")
    age = info.age_s(now)
    ago = "?" if age is None else _ago(age)
    if info.ended:
        return Liveness(
            False, f"no process: the last one (pid {info.pid} on {info.host}) exited at {info.ended}"
        )
    if info.host == socket.gethostname():
        if _pid_runs_mem0bench(info.pid):
            return Liveness(True, f"pid {info.pid} on this host is working on it (last heartbeat {ago} ago)")
        return Liveness(False, f"no process: pid {info.pid} stopped without exiting cleanly (killed?); "
                               f"last heartbeat {ago} ago")  # fmt: skip
    if age is not None and age <= STALE_AFTER_S:
        return Liveness(True, f"pid {info.pid} on {info.host} beat {ago} ago: probably still working")
    return Liveness(None, f"pid {info.pid} on {info.host} last beat {ago} ago: probably stopped")


def _ago(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def with_heartbeat_cost(run_dir: Path, sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """usage.json's entries, with what the last heartbeat's process paid where usage.json lacks it or says
    less: a process killed between two saves of usage.json beat after its last save (or never saved)."""
    info = HeartbeatInfo.read(run_dir)
    beat = float((info.progress or {}).get("cost_usd") or 0.0) if info is not None else 0.0
    if info is None or beat <= 0:
        return list(sessions)
    out, seen = [], False
    for entry in sessions:
        if entry.get("session") == info.session:
            seen = True
            if float(entry.get("cost_usd", 0.0)) < beat:
                entry = {**entry, "cost_usd": beat, "cost_from": HEARTBEAT_FILE}
        out.append(entry)
    if not seen:
        calls = int((info.progress or {}).get("calls") or 0)
        out.append({"session": info.session, "cost_usd": beat, "calls": calls, "cost_from": HEARTBEAT_FILE})
    return out


def job_overrides() -> list[str]:
    """The current Hydra job's task overrides (one job's values in a multirun); [] outside Hydra."""
    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = [str(o) for o in HydraConfig.get().overrides.task]
    except (ImportError, ValueError):
        return []
    return [_masked(o) for o in overrides]


def _masked(override: str) -> str:
    """A key-like value never reaches the file (the CLI has already taken `llm.api_key` off the command
    line); the name of the variable holding a key (`llm.api_key_env=...`) is not a secret."""
    name, sep, _ = override.partition("=")
    secret = sep and "key" in name.lower() and not name.lower().endswith("_env")
    return f"{name}=***" if secret else override


class Heartbeat:
    """Keeps heartbeat.json current while a run works on the folder (a context manager)."""

    def __init__(
        self,
        run_dir: Path,
        *,
        session: str,
        overrides: list[str],
        snapshot: Callable[[], ProgressSnapshot],
        interval_s: float = INTERVAL_S,
    ) -> None:
        self.path = Path(run_dir) / HEARTBEAT_FILE
        self.snapshot = snapshot
        self.interval_s = interval_s
        self.info = HeartbeatInfo(
            pid=os.getpid(), host=socket.gethostname(), session=session, cwd=os.getcwd(),
            overrides=list(overrides), started=_now(), updated=_now(),
        )  # fmt: skip
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat_until_stopped, name="heartbeat", daemon=True)

    def beat(self, *, ended: bool = False) -> None:
        data = asdict(self.info)
        with contextlib.suppress(Exception):  # a progress read racing the run must never kill the run
            data["progress"] = asdict(self.snapshot())
        data["updated"] = _now()
        if ended:
            data["ended"] = data["updated"]
        with contextlib.suppress(OSError):  # a full disk stops the heartbeat, not the run
            write_json(self.path, data)

    def _beat_until_stopped(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.beat()

    def __enter__(self) -> Heartbeat:
        self.beat()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval_s + 1)
        self.beat(ended=True)


@contextlib.contextmanager
def beating(run_dir: Path, session: str, snapshot: Callable[[], ProgressSnapshot]) -> Iterator[Heartbeat]:
    """A heartbeat for a `run` process, with the Hydra job's overrides."""
    with Heartbeat(run_dir, session=session, overrides=job_overrides(), snapshot=snapshot) as beat:
        yield beat
