"""`python -m mem0bench memories RUN_DIR --conversation conv-26 [--speaker NAME] [--history ID] [--json]`.

Reads what Mem0 (and Mem0^g) left under RUN_DIR/state/<conversation>/: each speaker's store snapshot
(<slug>/records.json, meta.json), operation log (<slug>.ops.jsonl) and, for Mem0^g, graph snapshot
(<slug>/graph/). Needs no LLM and no server.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem0bench.memory.records import MemoryOp, MemoryRecord
from mem0bench.memory.vector_store import RECORDS_FILE

_META = "meta.json"
_DONE = "done"


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
        meta_path = directory / _META
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        doc = json.loads((directory / RECORDS_FILE).read_text(encoding="utf-8"))
        memories = [MemoryRecord.from_dict(e["record"]) for e in doc.get("entries", [])]
        ops = folder / f"{directory.name}.ops.jsonl"
        partial = ops.with_name(ops.name + ".partial")
        ops_path = ops if ops.is_file() else (partial if partial.is_file() else None)
        name = meta.get("key") or meta.get("user") or directory.name
        speakers.append(
            SpeakerState(name, directory.name, directory, (directory / _DONE).is_file(), memories, ops_path)
        )
    return speakers


def read_ops(path: Path) -> list[MemoryOp]:
    ops = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                ops.append(MemoryOp.from_dict(json.loads(line)))
            except (ValueError, KeyError):
                continue  # a torn last line of a crashed stream's partial log
    return ops


def _relations(directory: Path) -> list[dict[str, Any]] | None:
    """The speaker's Mem0^g relations, or None without a graph snapshot or graph package."""
    graph_dir = directory / "graph"
    if not graph_dir.is_dir():
        return None
    try:
        from mem0bench.memory.graph import load_graph_snapshot  # provided by Mem0^g; optional here
    except ImportError:
        return None
    snapshot = load_graph_snapshot(graph_dir)
    edges = getattr(snapshot, "edges", None)
    if edges is None and isinstance(snapshot, tuple):  # (nodes, node_vectors, edges, edge_vectors)
        edges = snapshot[2] if len(snapshot) > 2 else []
    rows = []
    for edge in edges or []:
        get = edge.get if isinstance(edge, dict) else (lambda key, e=edge: getattr(e, key, None))
        rows.append(
            {
                "source": get("source_name") or get("source"),
                "relation": get("relation"),
                "destination": get("destination_name") or get("destination"),
                "valid": get("valid") if get("valid") is not None else True,
                "created_at": get("created_at"),
                "invalidated_at": get("invalidated_at"),
            }
        )
    return rows


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], wrap: int = 90) -> str:
    """A plain fixed-width table; the last column is cut at `wrap` characters."""
    rows = [[*r[:-1], (r[-1] if len(r[-1]) <= wrap else r[-1][: wrap - 1] + "…")] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line.rstrip(), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(out)


def _pick(speakers: list[SpeakerState], wanted: str | None) -> list[SpeakerState]:
    if wanted is None:
        return speakers
    chosen = [s for s in speakers if wanted.lower() in (s.name.lower(), s.slug)]
    if not chosen:
        raise InspectError(f"no speaker {wanted!r}; available: {', '.join(s.name for s in speakers)}")
    return chosen


def _show_memories(speakers: list[SpeakerState], as_json: bool) -> str:
    docs = []
    for sp in speakers:
        docs.append(
            {
                "speaker": sp.name,
                "complete": sp.complete,
                "memories": [m.to_dict() for m in sp.memories],
                "relations": _relations(sp.directory),
            }
        )
    if as_json:
        return json.dumps(docs, ensure_ascii=False, indent=1)
    out = []
    for sp, doc in zip(speakers, docs):
        status = "" if sp.complete else " (incomplete: no done marker)"
        out.append(f"== {sp.name}: {len(sp.memories)} memories{status}")
        rows = [
            [
                m.id,
                m.created_at,
                m.updated_at if m.updated_at != m.created_at else "",
                ",".join(m.source_dia_ids),
                m.text,
            ]
            for m in sp.memories
        ]
        out.append(
            _table(["id", "created", "updated", "sources", "memory"], rows) if rows else "(no memories)"
        )
        relations = doc["relations"]
        if relations is not None:
            out.append(f"-- {sp.name}: {len(relations)} relations")
            for r in relations:
                state = "" if r["valid"] else f"  [invalid since {r['invalidated_at']}]"
                out.append(
                    f"{r['source']} -[{r['relation']}]-> {r['destination']}  ({r['created_at']}){state}"
                )
        out.append("")
    return "\n".join(out).rstrip()


def _show_history(speakers: list[SpeakerState], memory_id: str, as_json: bool) -> str:
    found: list[tuple[SpeakerState, MemoryOp]] = []
    for sp in speakers:
        if sp.ops_path is not None:
            found += [(sp, op) for op in read_ops(sp.ops_path) if op.memory_id == memory_id]
    if not found:
        raise InspectError(f"no operation touched memory {memory_id!r}")
    if as_json:
        return json.dumps(
            [{"speaker": sp.name, **op.to_dict()} for sp, op in found], ensure_ascii=False, indent=1
        )
    rows = [
        [
            str(op.pair_index),
            op.session_date,
            op.kind.value,
            ",".join(op.source_dia_ids),
            f"{op.before or ''} -> {op.after or ''}" if op.before else (op.after or ""),
        ]
        for _, op in found
    ]
    title = f"== history of {memory_id} ({found[0][0].name})"
    return title + "\n" + _table(["pair", "session date", "op", "sources", "text"], rows, wrap=160)


def memories_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `mem0bench memories`; returns the exit code (2 on a user error)."""
    parser = argparse.ArgumentParser(prog="mem0bench memories", description="Show a run's memories.")
    parser.add_argument("run_dir", type=Path, help="a run directory (its state/ folder is read)")
    parser.add_argument("--conversation", required=True, help="sample id, e.g. conv-26")
    parser.add_argument("--speaker", help="only this speaker (name or slug)")
    parser.add_argument("--history", metavar="MEMORY_ID", help="the operations that touched one memory")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exit_:  # argparse already printed the usage line
        return int(exit_.code or 0)
    try:
        speakers = _pick(load_speakers(args.run_dir, args.conversation), args.speaker)
        if args.history:
            text = _show_history(speakers, args.history, args.json)
        else:
            text = _show_memories(speakers, args.json)
    except InspectError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as error:  # a damaged snapshot: say which, no traceback
        print(f"error: cannot read the memories of {args.conversation}: {error}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(memories_main())
