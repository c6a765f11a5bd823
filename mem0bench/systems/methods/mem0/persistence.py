"""Stream persistence on disk: the operation log, the store snapshot with its meta.json, the done marker.

Layout under the system's state_dir:

    <sample_id>/<slug>.ops.jsonl          every memory operation of the stream, in order
                                          (``.ops.jsonl.partial`` while the stream runs)
    <sample_id>/<slug>/records.json       the store snapshot (with vectors.npy)
    <sample_id>/<slug>/meta.json          speakers, pair count, summaries, op counts, failures
    <sample_id>/<slug>/done.json          written last (saved_state.DoneMarker): the stream is complete
                                          and need not run again

A stream with a done marker is loaded, not re-run; one without is replayed from its first pair.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from mem0bench.common.files import atomic_write
from mem0bench.memory.base import SavedStore
from mem0bench.memory.records import MemoryOp, MemoryRecord
from mem0bench.memory.saved_state import DoneMarker
from mem0bench.memory.vector_store import FaissVectorStore, read_saved_records
from mem0bench.systems.methods.mem0.streams import StreamState

__all__ = [
    "DONE_MARKER",
    "META_FILE",
    "OpsLog",
    "is_done",
    "load_store",
    "mark_done",
    "ops_log_path",
    "read_meta",
    "save_snapshot",
    "saved_stores",
    "withdraw_done",
]

DONE_MARKER = "done.json"
LEGACY_DONE_MARKER = "done"
"""Before issue 31: a plain-text marker ("ok"), read as done so that earlier run folders resume."""
MARKER_FORMAT = 1
META_FILE = "meta.json"


def ops_log_path(state_dir: Path, sample_id: str, slug: str) -> Path:
    """The finished op log of a stream (the running one has a '.partial' suffix)."""
    return state_dir / sample_id / f"{slug}.ops.jsonl"


class OpsLog:
    """A stream's op log: written to ``.partial`` line by line, renamed by `commit` once the stream ends.

    Opening truncates, so a replayed stream never keeps the ops of an earlier, interrupted attempt.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        self._file: IO[str] | None = None

    def __enter__(self) -> OpsLog:
        self.partial.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.partial, "w", encoding="utf-8")  # noqa: SIM115 - closed in __exit__
        return self

    def write(self, op: MemoryOp) -> None:
        if self._file is None:
            raise RuntimeError("the op log is not open")
        self._file.write(json.dumps(op.to_dict(), ensure_ascii=False) + "\n")
        self._file.flush()  # a crash keeps every op logged so far

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def commit(self) -> None:
        """The stream ended: the partial log becomes the log."""
        os.replace(self.partial, self.path)


def _marker(directory: Path) -> DoneMarker:
    return DoneMarker(directory / DONE_MARKER, MARKER_FORMAT)


def is_done(directory: Path) -> bool:
    """The stream in `directory` finished. Its marker names the stream's key; Mem0's settings are the run
    folder's own, so presence is the test. The plain-text `done` of earlier versions counts too."""
    return _marker(directory).written() is not None or (directory / LEGACY_DONE_MARKER).is_file()


def withdraw_done(directory: Path) -> None:
    """Remove a stale marker before the snapshot is rewritten (a crash then leaves no false 'done')."""
    _marker(directory).withdraw()
    (directory / LEGACY_DONE_MARKER).unlink(missing_ok=True)


def mark_done(directory: Path, key: str) -> None:
    """Written last: everything else in the folder is complete (memory/saved_state.py's marker)."""
    _marker(directory).write(key)


def save_snapshot(directory: Path, state: StreamState) -> dict[str, Any]:
    """Save the stream's store and meta.json; returns the meta."""
    state.store.save(directory)
    meta = {
        **state.spec.to_meta(),
        "key": state.spec.key,
        "pairs": state.pairs,
        "next_id": state.next_id,
        "summaries": [state.summaries[k] for k in sorted(state.summaries)],
        "op_counts": dict(sorted(state.op_counts.items())),
        "failures": [failure.to_dict() for failure in state.failures],
    }
    atomic_write(directory / META_FILE, json.dumps(meta, ensure_ascii=False, indent=1))
    return meta


def read_meta(directory: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
    return meta


def load_store(directory: Path) -> FaissVectorStore[MemoryRecord]:
    return FaissVectorStore.load(directory)


def saved_stores(state_dir: Path, sample_id: str) -> list[SavedStore]:
    """Every stream snapshot of one conversation with its operation log, in folder-name order ([] when it
    has none): what `mem0bench memories` shows. Pure reading: no LLM, no index built."""
    folder = Path(state_dir) / sample_id
    if not folder.is_dir():
        return []
    stores = []
    for directory in sorted(p for p in folder.iterdir() if p.is_dir()):
        memories = read_saved_records(directory)
        if memories is None:
            continue
        meta = read_meta(directory) if (directory / META_FILE).is_file() else {}
        log = OpsLog(ops_log_path(state_dir, sample_id, directory.name))
        history = log.path if log.path.is_file() else (log.partial if log.partial.is_file() else None)
        name = str(meta.get("key") or meta.get("user") or directory.name)
        stores.append(SavedStore(name, directory.name, is_done(directory), tuple(memories), history=history))
    return stores
