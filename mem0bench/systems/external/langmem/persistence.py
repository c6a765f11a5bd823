"""A conversation's LangGraph InMemoryStore on disk, so `memories`, resume and a later `retrieve` work.

InMemoryStore keeps everything in memory. After a conversation is ingested its items (namespace, key,
value, timestamps) and their index vectors are written under `state_dir/<sample_id>/langmem/` (with the
agent's threads, in agent mode), with our own annotations of each memory (the session date and dia_id of the message that last wrote it), and a
`done.json` marker written last. Loading restores the items and vectors into a fresh store directly (the
store's `_data` and `_vectors` maps, which LangGraph documents as stable names), so a restore makes no
embedding call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mem0bench.common.files import atomic_write, atomic_write_npy
from mem0bench.memory.base import SavedStore
from mem0bench.memory.records import MemoryRecord
from mem0bench.memory.saved_state import DoneMarker, conversation_folder
from mem0bench.systems.external.langmem.render import memory_text

__all__ = ["Annotation", "Snapshot", "clear", "load", "save", "stores"]

FORMAT = 1
"""Bump when the layout on disk changes (an older snapshot is then rebuilt)."""


@dataclass(frozen=True)
class Annotation:
    """What we know of a memory that LangMem does not keep: the message that last wrote it."""

    date: str
    dia_id: str
    speaker: str

    def to_dict(self) -> dict[str, str]:
        return {"date": self.date, "dia_id": self.dia_id, "speaker": self.speaker}


@dataclass
class Snapshot:
    """The store's annotations and the ingest's summary (what `done.json` holds besides the format)."""

    annotations: dict[tuple[tuple[str, ...], str], Annotation] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    threads: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Agent ingest: each namespace key's thread, as LangChain's message dicts (`threads.json`)."""


def folder(state_dir: Path, sample_id: str) -> Path:
    return conversation_folder(state_dir, sample_id, "langmem")


def _marker(directory: Path) -> DoneMarker:
    return DoneMarker(directory / "done.json", FORMAT)


def clear(directory: Path) -> None:
    """Withdraw the done marker (the snapshot is being rebuilt)."""
    _marker(directory).withdraw()


def save(directory: Path, store: Any, snapshot: Snapshot, fingerprint: str) -> None:
    """Write the store's items, vectors and annotations; the done marker (naming `fingerprint`) last."""
    directory.mkdir(parents=True, exist_ok=True)
    clear(directory)
    items = []
    for namespace, by_key in sorted(store._data.items()):
        for key, item in sorted(by_key.items()):
            items.append(
                {
                    "namespace": list(namespace),
                    "key": key,
                    "value": item.value,
                    "created_at": item.created_at.isoformat(),
                    "updated_at": item.updated_at.isoformat(),
                }
            )
    rows: list[list[Any]] = []
    vectors: list[list[float]] = []
    for namespace, by_key in sorted(store._vectors.items()):
        for key, by_path in sorted(by_key.items()):
            for path, vector in sorted(by_path.items()):
                rows.append([list(namespace), key, path])
                vectors.append(list(vector))
    matrix = np.asarray(vectors, dtype=np.float32) if vectors else np.zeros((0, 0), dtype=np.float32)
    notes = [
        {"namespace": list(ns), "key": key, **ann.to_dict()}
        for (ns, key), ann in sorted(snapshot.annotations.items())
    ]
    body = {"items": items, "vector_rows": rows, "annotations": notes}
    atomic_write(directory / "store.json", json.dumps(body, ensure_ascii=False))
    atomic_write_npy(directory / "vectors.npy", matrix)
    if snapshot.threads:
        atomic_write(directory / "threads.json", json.dumps(snapshot.threads, ensure_ascii=False))
    else:  # an earlier agent ingest's threads are not this store's
        (directory / "threads.json").unlink(missing_ok=True)
    _marker(directory).write(fingerprint, snapshot.meta)


def load(directory: Path, store: Any, fingerprint: str) -> Snapshot | None:
    """Fill `store` (fresh) from a finished snapshot; None if absent, stale, incomplete or unreadable."""
    meta = _marker(directory).read(fingerprint)
    if meta is None:
        return None
    try:
        body = json.loads((directory / "store.json").read_text(encoding="utf-8"))
        matrix = np.load(directory / "vectors.npy", allow_pickle=False)
        rows = body["vector_rows"]
        if len(rows) and matrix.shape[0] != len(rows):
            return None
        from langgraph.store.base import Item

        for raw in body["items"]:
            namespace = tuple(raw["namespace"])
            store._data[namespace][raw["key"]] = Item(
                value=raw["value"],
                key=raw["key"],
                namespace=namespace,
                created_at=raw["created_at"],
                updated_at=raw["updated_at"],
            )
        for (namespace, key, path), vector in zip(rows, matrix):
            store._vectors[tuple(namespace)][key][path] = [float(x) for x in vector]
        annotations = {
            (tuple(a["namespace"]), a["key"]): Annotation(a["date"], a["dia_id"], a["speaker"])
            for a in body["annotations"]
        }
        threads_file = directory / "threads.json"
        threads = json.loads(threads_file.read_text(encoding="utf-8")) if threads_file.is_file() else {}
    except (OSError, ValueError, KeyError, TypeError, ImportError):
        return None
    return Snapshot(annotations=annotations, meta=meta, threads=threads)


def stores(state_dir: Path, sample_id: str) -> list[SavedStore]:
    """The saved store as `mem0bench memories` shows it: one store per namespace (a speaker's, or the
    shared one), each memory dated with the session of the message that last wrote it. Reads store.json
    only: LangGraph is not needed."""
    directory = folder(state_dir, sample_id)
    try:
        body = json.loads((directory / "store.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    notes = {(tuple(a["namespace"]), a["key"]): a for a in body.get("annotations", [])}
    by_namespace: dict[str, list[MemoryRecord]] = {}
    for raw in body.get("items", []):
        namespace = tuple(raw["namespace"])
        owner = str(namespace[-1]) if namespace else "shared"
        note = notes.get((namespace, raw["key"]), {})
        date = str(note.get("date") or raw.get("updated_at") or "")
        dia_ids = (str(note["dia_id"]),) if note.get("dia_id") else ()
        record = MemoryRecord(str(raw["key"]), memory_text(raw["value"]), owner, date, date, dia_ids)
        by_namespace.setdefault(owner, []).append(record)
    complete = _marker(directory).written() is not None
    return [
        SavedStore(owner, owner.lower().replace(" ", "_"), complete, tuple(records))
        for owner, records in by_namespace.items()
    ]
