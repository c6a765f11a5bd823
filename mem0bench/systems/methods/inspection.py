"""Reading what Mem0 (and Mem0^g) left in a run's state/ folder: each speaker's store snapshot
(<slug>/records.json, meta.json), operation log (<slug>.ops.jsonl) and, for Mem0^g, graph snapshot
(<slug>/graph/). Pure reading, no LLM and no server; the `memories` command formats what this returns."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem0bench.common.jsonl import read_jsonl
from mem0bench.memory.graph import GraphSnapshot, has_snapshot, load_graph_snapshot
from mem0bench.memory.records import MemoryOp, MemoryRecord
from mem0bench.memory.vector_store import RECORDS_FILE
from mem0bench.systems.methods.mem0.persistence import DONE_MARKER, META_FILE
from mem0bench.systems.methods.mem0g.persistence import GRAPH_DIR


class InspectError(Exception):
    """A one-line user error (exit code 2)."""


@dataclass(frozen=True)
class SpeakerState:
    name: str
    slug: str
    directory: Path
    complete: bool
    memories: list[MemoryRecord]
    ops_path: Path | None


def _state_root(run_dir: Path) -> Path:
    if not run_dir.is_dir():
        raise InspectError(f"run directory not found: {run_dir}")
    root = run_dir / "state"
    if not root.is_dir():
        raise InspectError(f"no state/ folder in {run_dir} (was a memory system ingested in this run?)")
    return root


def _conversations(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir() and any(p.glob(f"*/{RECORDS_FILE}")))


def load_speakers(run_dir: Path, conversation: str) -> list[SpeakerState]:
    """Every stream snapshot of one conversation, in file-name order."""
    root = _state_root(run_dir)
    folder = root / conversation
    available = _conversations(root)
    if conversation not in available:
        listing = ", ".join(available) or "none"
        raise InspectError(f"no memories for conversation {conversation!r} in {root}; available: {listing}")
    speakers = []
    for directory in sorted(p for p in folder.iterdir() if (p / RECORDS_FILE).is_file()):
        meta_path = directory / META_FILE
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        doc = json.loads((directory / RECORDS_FILE).read_text(encoding="utf-8"))
        memories = [MemoryRecord.from_dict(e["record"]) for e in doc.get("entries", [])]
        ops = folder / f"{directory.name}.ops.jsonl"
        partial = ops.with_name(ops.name + ".partial")
        ops_path = ops if ops.is_file() else (partial if partial.is_file() else None)
        name = meta.get("key") or meta.get("user") or directory.name
        speakers.append(
            SpeakerState(
                name, directory.name, directory, (directory / DONE_MARKER).is_file(), memories, ops_path
            )
        )
    return speakers


def read_ops(path: Path) -> list[MemoryOp]:
    """The stream's operations; the torn last line of a crashed stream's partial log is skipped
    (`read_jsonl`'s policy), a damaged line elsewhere raises ValueError or KeyError."""
    return [MemoryOp.from_dict(row) for row in read_jsonl(path)]


def speaker_graph(directory: Path) -> GraphSnapshot | None:
    """The speaker's Mem0^g graph snapshot, or None (a Mem0 run, or a stream that never finished)."""
    graph_dir = directory / GRAPH_DIR
    return load_graph_snapshot(graph_dir) if has_snapshot(graph_dir) else None


def speaker_relations(directory: Path) -> list[dict[str, Any]] | None:
    """The speaker's Mem0^g relations (invalid ones included), or None without a graph snapshot."""
    graph = speaker_graph(directory)
    if graph is None:
        return None
    return [
        {
            "source": edge.source_name,
            "relation": edge.relation,
            "destination": edge.destination_name,
            "valid": edge.valid,
            "created_at": edge.created_at,
            "invalidated_at": edge.invalidated_at,
        }
        for edge in graph.edges
    ]
