"""What the adapter keeps beside mem0's own files in a speaker's folder: a meta file and a done marker.

state_dir/<sample_id>/<speaker slug>/ holds mem0's qdrant collection (qdrant/), history database
(history.db), Kuzu database (graph.kuzu, graph variant), and ours: meta.json (counts, failures, the
relations' session dates), records.json (the final memories, which `Mem0OSS.saved_memories` reads for
`mem0bench memories`) and done.json (memory/saved_state.py's marker), written last, naming the
conversation's fingerprint and the settings that shaped the memories. A folder without a matching marker
is removed and rebuilt.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from mem0bench.common.files import atomic_write
from mem0bench.memory.records import MemoryRecord
from mem0bench.memory.saved_state import DoneMarker
from mem0bench.memory.vector_store import RECORDS_FILE

__all__ = [
    "FORMAT",
    "is_done",
    "is_finished",
    "mark_done",
    "read_meta",
    "reset_folder",
    "write_meta",
    "write_records",
]

FORMAT = 1
META = "meta.json"
DONE = "done.json"
LEGACY_DONE = "done"
"""Where versions before issue 31 wrote the same marker (named after Mem0's, which `memories` read)."""
RECORDS = RECORDS_FILE  # a vector-store snapshot's records file: `read_saved_records` reads it


def is_done(folder: Path, stamp: str) -> bool:
    return any(DoneMarker(folder / name, FORMAT).read(stamp) is not None for name in (DONE, LEGACY_DONE))


def is_finished(folder: Path) -> bool:
    """A marker is there, whatever settings it names (what an inspection asks)."""
    return any(DoneMarker(folder / name, FORMAT).written() is not None for name in (DONE, LEGACY_DONE))


def mark_done(folder: Path, stamp: str) -> None:
    DoneMarker(folder / DONE, FORMAT).write(stamp)


def write_meta(folder: Path, meta: dict[str, Any]) -> None:
    atomic_write(folder / META, json.dumps(meta, ensure_ascii=False, indent=1))


def read_meta(folder: Path) -> dict[str, Any]:
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def write_records(folder: Path, speaker: str, memories: list[dict[str, Any]]) -> None:
    """The speaker's final memories, {"entries": [{"record": MemoryRecord}]} (the layout vector_store's
    `read_saved_records` reads), dated with the session date mem0 kept in their metadata."""
    entries = []
    for item in memories:
        metadata = item.get("metadata") or {}
        date = str(metadata.get("timestamp") or item.get("updated_at") or item.get("created_at") or "")
        record = MemoryRecord(
            id=str(item.get("id", "")),
            text=str(item.get("memory", "")),
            speaker=speaker,
            created_at=date,
            updated_at=date,
            source_dia_ids=tuple(str(d) for d in metadata.get("dia_ids") or ()),
        )
        entries.append({"record": record.to_dict()})
    atomic_write(folder / RECORDS, json.dumps({"entries": entries}, ensure_ascii=False, indent=1))


def reset_folder(folder: Path, state_dir: Path) -> None:
    """An unfinished or stale speaker folder is removed: mem0 restarts from an empty store.

    Only a folder strictly inside the run's `state_dir` is ever removed or made: the loaders refuse an id
    that could climb out (`mem0bench.data.errors.check_path_id`), and this refuses again, so that no path
    built from a file's data can empty a folder elsewhere."""
    root = state_dir.resolve()
    target = folder.resolve()
    if target == root or not target.is_relative_to(root):
        raise ValueError(f"refusing to clear {folder}: it is not inside the run's state folder {state_dir}")
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
