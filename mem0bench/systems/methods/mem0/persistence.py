"""Stream persistence on disk: the operation log, the store snapshot with its meta.json, the done marker.

Layout under the system's state_dir:

    <sample_id>/<slug>.ops.jsonl          every memory operation of the stream, in order
                                          (``.ops.jsonl.partial`` while the stream runs)
    <sample_id>/<slug>/records.json       the store snapshot (with vectors.npy)
    <sample_id>/<slug>/meta.json          speakers, pair count, summaries, op counts, failures
    <sample_id>/<slug>/done               written last: the stream is complete and need not run again

A stream with a done marker is loaded, not re-run; one without is replayed from its first pair.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from mem0bench.common.files import atomic_write
from mem0bench.memory.records import MemoryOp, MemoryRecord
from mem0bench.memory.vector_store import FaissVectorStore
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
    "withdraw_done",
]

DONE_MARKER = "done"
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


def is_done(directory: Path) -> bool:
    return (directory / DONE_MARKER).is_file()


def withdraw_done(directory: Path) -> None:
    """Remove a stale marker before the snapshot is rewritten (a crash then leaves no false 'done')."""
    (directory / DONE_MARKER).unlink(missing_ok=True)


def mark_done(directory: Path) -> None:
    """Written last: everything else in the folder is complete."""
    (directory / DONE_MARKER).write_text("ok\n", encoding="utf-8")


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
