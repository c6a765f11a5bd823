"""Mem0^g's graph stores: the in-process default and a FalkorDB server, behind one small interface."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from mem0bench.common.errors import ConfigurationError
from mem0bench.memory.graph.base import SNAPSHOT_JSON, Edge, GraphStore, Node, triplet_text
from mem0bench.memory.graph.inprocess import InProcessGraphStore
from mem0bench.memory.graph.snapshot import read_snapshot

__all__ = [
    "Edge",
    "GraphSnapshot",
    "GraphStore",
    "InProcessGraphStore",
    "Node",
    "build_graph_store",
    "graph_name",
    "has_snapshot",
    "load_graph_snapshot",
    "triplet_text",
]

BACKENDS = ("inprocess", "falkordb")


def graph_name(prefix: str, key: str) -> str:
    """The server-side graph name `<prefix>_<key>`, restricted to characters safe in any tool."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{prefix}_{key}")


def has_snapshot(directory: Path) -> bool:
    return (Path(directory) / SNAPSHOT_JSON).is_file()


def build_graph_store(
    graph_config: Mapping[str, Any], key: str, state_dir: Path, *, resume: bool = True
) -> GraphStore:
    """Open the graph of one stream.

    `state_dir` is the stream's snapshot folder. With `resume` and a snapshot there, the graph starts from
    it (FalkorDB: the server's graph is replaced by the snapshot, unless it already holds the same number
    of nodes and edges); otherwise it starts empty (FalkorDB: an existing graph of that name is dropped).
    """
    backend = str(graph_config.get("backend", "inprocess") or "inprocess").lower()
    snapshot = resume and has_snapshot(state_dir)
    if backend == "inprocess":
        return InProcessGraphStore.load(state_dir) if snapshot else InProcessGraphStore()
    if backend == "falkordb":
        from mem0bench.memory.graph.falkordb_store import FalkorDBGraphStore

        store = FalkorDBGraphStore(
            str(graph_config.get("host") or "127.0.0.1"),
            int(graph_config.get("port", 6379)),
            graph_name(str(graph_config.get("prefix", "mem0bench")), key),
            reset=not snapshot,
        )
        if snapshot:
            nodes, edges = load_graph_snapshot(state_dir)
            if (len(store.nodes()), len(store.edges())) != (len(nodes), len(edges)):
                store.restore(state_dir)
        return store
    raise ConfigurationError(f"unknown graph backend {backend!r}; expected one of {', '.join(BACKENDS)}")


class GraphSnapshot(NamedTuple):
    """A saved graph: unpacks as `(nodes, edges)`, or read `.nodes` / `.edges`."""

    nodes: list[Node]
    edges: list[Edge]


def load_graph_snapshot(path: Path) -> GraphSnapshot:
    """Nodes and edges (invalid ones included) of a saved graph, in creation order, without a server."""
    nodes, _, edges, _ = read_snapshot(Path(path))
    return GraphSnapshot(nodes, edges)
