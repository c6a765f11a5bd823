"""Graph snapshots on disk: graph.json (nodes, edges, metadata) + node and edge embedding matrices (.npy).

Both backends write the same format, so inspection and resume never need a running server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mem0bench.common.files import atomic_write, atomic_write_npy
from mem0bench.memory.graph.base import (
    EDGE_VECTORS,
    NODE_VECTORS,
    SNAPSHOT_JSON,
    Edge,
    Node,
    edge_from_json,
    edge_to_json,
    node_from_json,
    node_to_json,
)

FORMAT_VERSION = 1


def write_snapshot(
    directory: Path,
    nodes: list[Node],
    node_vectors: np.ndarray,
    edges: list[Edge],
    edge_vectors: np.ndarray,
    meta: dict[str, Any] | None = None,
) -> None:
    """Write the snapshot; graph.json goes last, so a present graph.json means complete vector files."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_npy(directory / NODE_VECTORS, np.asarray(node_vectors, np.float32))
    atomic_write_npy(directory / EDGE_VECTORS, np.asarray(edge_vectors, np.float32))
    doc = {
        "format": FORMAT_VERSION,
        "meta": meta or {},
        "nodes": [node_to_json(n) for n in nodes],
        "edges": [edge_to_json(e) for e in edges],
    }
    text = json.dumps(doc, ensure_ascii=False, indent=1)
    atomic_write(directory / SNAPSHOT_JSON, text)


def read_snapshot(directory: Path) -> tuple[list[Node], np.ndarray, list[Edge], np.ndarray]:
    """Nodes, node vectors (n, d), edges, edge vectors (e, d); vectors are empty (0, 0) when absent."""
    directory = Path(directory)
    doc = json.loads((directory / SNAPSHOT_JSON).read_text(encoding="utf-8"))
    nodes = [node_from_json(n) for n in doc.get("nodes", [])]
    edges = [edge_from_json(e) for e in doc.get("edges", [])]
    node_vectors = _load_vectors(directory / NODE_VECTORS, len(nodes))
    edge_vectors = _load_vectors(directory / EDGE_VECTORS, len(edges))
    return nodes, node_vectors, edges, edge_vectors


def _load_vectors(path: Path, rows: int) -> np.ndarray:
    if not path.is_file():
        return np.zeros((0, 0), np.float32)
    vectors = np.load(path).astype(np.float32, copy=False)
    if vectors.shape[0] != rows:
        raise ValueError(f"{path}: {vectors.shape[0]} vectors for {rows} items")
    return vectors
