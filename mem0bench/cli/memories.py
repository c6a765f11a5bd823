"""`python -m mem0bench memories RUN_DIR --conversation conv-26 [--speaker NAME] [--json]
[--history ID | --export-graphml PATH]`.

Asks the run's system (config.yaml's method._target_) what it saved of a conversation under RUN_DIR/state/
(its `saved_memories` classmethod, memory/base.py) and shows the memories (and relations), the history of
one memory, or writes each speaker's graph as GraphML for a graph viewer. Needs no LLM and no server
(FalkorDB runs are read from their snapshots).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from mem0bench.cli.examples import with_examples
from mem0bench.common.jsonl import read_jsonl
from mem0bench.common.text import one_line
from mem0bench.memory.base import SavedStore, saved_memories
from mem0bench.memory.graph import GraphSnapshot, load_graph_snapshot
from mem0bench.memory.graph.graphml import write_graphml
from mem0bench.memory.records import MemoryOp
from mem0bench.systems.aliases import current_target


class InspectError(Exception):
    """A one-line user error (exit code 2)."""


def _system_class(run_dir: Path) -> tuple[str, type]:
    """The run's method name and system class, from its config.yaml (a moved class's old path resolved)."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise InspectError(f"no config.yaml in {run_dir}: it names the system whose memories to show")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    method = data.get("method") if isinstance(data, dict) else None
    if (
        not isinstance(method, dict)
        or not isinstance(method.get("_target_"), str)
        or "." not in method["_target_"]
    ):
        raise InspectError(f"{path}: method._target_ does not name a system class")
    target = method["_target_"]
    target = current_target(target)
    module, _, name = target.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise InspectError(f"{path}: cannot import the system {target}: {one_line(exc)}") from None
    if not isinstance(cls, type):
        raise InspectError(f"{path}: method._target_ {target} is not a class")
    return str(method.get("name") or target), cls


def load_stores(run_dir: Path, conversation: str) -> list[SavedStore]:
    """What the run's system saved of `conversation`: each store, in the system's order."""
    if not run_dir.is_dir():
        raise InspectError(f"run directory not found: {run_dir}")
    root = run_dir / "state"
    if not root.is_dir():
        raise InspectError(f"no state/ folder in {run_dir} (was a memory system ingested in this run?)")
    method, cls = _system_class(run_dir)
    stores = saved_memories(cls, root, conversation)
    if stores is None:
        raise InspectError(
            f"the {method} system ({cls.__module__}.{cls.__qualname__}) does not show its memories "
            "(it defines no saved_memories, docs/your_system.md)"
        )
    if not stores:
        folders = sorted(p.name for p in root.iterdir() if p.is_dir())
        available = [sid for sid in folders if saved_memories(cls, root, sid)]
        listing = ", ".join(available) or "none"
        raise InspectError(f"no memories for conversation {conversation!r} in {root}; available: {listing}")
    return stores


def read_ops(path: Path) -> list[MemoryOp]:
    """A store's operations; the torn last line of a crashed stream's partial log is skipped
    (`read_jsonl`'s policy), a damaged line elsewhere raises ValueError or KeyError."""
    return [MemoryOp.from_dict(row) for row in read_jsonl(path)]


def _graph(store: SavedStore) -> GraphSnapshot | None:
    return load_graph_snapshot(store.graph) if store.graph is not None else None


def _relations(store: SavedStore) -> list[dict[str, Any]] | None:
    """The store's relations (invalid ones included), or None without a graph snapshot."""
    graph = _graph(store)
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


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], wrap: int = 90) -> str:
    """A plain fixed-width table; the last column is cut at `wrap` characters."""
    rows = [[*r[:-1], (r[-1] if len(r[-1]) <= wrap else r[-1][: wrap - 1] + "…")] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line.rstrip(), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(out)


def _pick(speakers: list[SavedStore], wanted: str | None) -> list[SavedStore]:
    if wanted is None:
        return speakers
    chosen = [s for s in speakers if wanted.lower() in (s.name.lower(), s.slug)]
    if not chosen:
        raise InspectError(f"no speaker {wanted!r}; available: {', '.join(s.name for s in speakers)}")
    return chosen


def _show_memories(speakers: list[SavedStore], as_json: bool) -> str:
    docs: list[dict[str, Any]] = []
    for sp in speakers:
        docs.append(
            {
                "speaker": sp.name,
                "complete": sp.complete,
                "memories": [m.to_dict() for m in sp.memories],
                "relations": _relations(sp),
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


def _show_history(speakers: list[SavedStore], memory_id: str, as_json: bool) -> str:
    found: list[tuple[SavedStore, MemoryOp]] = []
    for sp in speakers:
        if sp.history is not None:
            # A REPLACE ends the replaced memory's history (and starts the new one's).
            found += [(sp, op) for op in read_ops(sp.history) if memory_id in (op.memory_id, op.replaced_id)]
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


def _export_graphml(speakers: list[SavedStore], conversation: str, target: Path, as_json: bool) -> str:
    """Write each speaker's graph as GraphML: to `target` itself for one speaker (unless it is a
    folder), else to `target`/<conversation>_<speaker slug>.graphml."""
    graphs: list[tuple[SavedStore, GraphSnapshot]] = []
    missing: list[str] = []
    for sp in speakers:
        graph = _graph(sp)
        if graph is None:
            missing.append(sp.name)
        else:
            graphs.append((sp, graph))
    if missing:
        raise InspectError(
            f"no graph for {', '.join(missing)} in {conversation} (the system saved none: only finished "
            "Mem0^g streams have one)"
        )
    one_file = len(graphs) == 1 and not target.is_dir()
    written = []
    for sp, graph in graphs:
        path = target if one_file else target / f"{conversation}_{sp.slug}.graphml"
        write_graphml(graph.nodes, graph.edges, path)
        written.append(
            {
                "speaker": sp.name,
                "path": str(path),
                "entities": len(graph.nodes),
                "relations": len(graph.edges),
            }
        )
    if as_json:
        return json.dumps(written, ensure_ascii=False, indent=1)
    return "\n".join(
        f"wrote {w['path']}: {w['speaker']}'s graph, {w['entities']} entities, {w['relations']} relations"
        for w in written
    )


def memories_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `mem0bench memories`; returns the exit code (2 on a user error)."""
    parser = argparse.ArgumentParser(
        prog="mem0bench memories", description="Show a run's memories.", **with_examples("memories")
    )
    parser.add_argument("run_dir", type=Path, help="a run directory (its state/ folder is read)")
    parser.add_argument("--conversation", required=True, help="sample id, e.g. conv-26")
    parser.add_argument("--speaker", help="only this speaker (name or slug)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--history", metavar="MEMORY_ID", help="the operations that touched one memory")
    action.add_argument(
        "--export-graphml",
        metavar="PATH",
        type=Path,
        help="write the speaker's Mem0^g graph as GraphML to PATH (without --speaker: a folder, one file "
        "per speaker)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exit_:  # argparse already printed the usage line
        return int(exit_.code or 0)
    try:
        speakers = _pick(load_stores(args.run_dir, args.conversation), args.speaker)
        if args.history:
            text = _show_history(speakers, args.history, args.json)
        elif args.export_graphml:
            text = _export_graphml(speakers, args.conversation, args.export_graphml, args.json)
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
