"""The default graph store: Python objects plus numpy embedding matrices, exact cosine search.

At LOCOMO scale (a few thousand nodes and edges a stream) one matrix-vector product is well under a
millisecond, so no approximate index is needed and results are exact and reproducible.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path

import numpy as np

from mem0bench.common.vectors import normalize
from mem0bench.memory.graph.base import SCORE_EPS, Edge, Node, entity_key
from mem0bench.memory.graph.graphml import write_graphml
from mem0bench.memory.graph.snapshot import read_snapshot, write_snapshot


class _Matrix:
    """A growable float32 row matrix (amortized O(1) appends) of unit vectors."""

    def __init__(self) -> None:
        self._data = np.zeros((0, 0), np.float32)
        self.rows = 0

    @property
    def view(self) -> np.ndarray:
        return self._data[: self.rows]

    def append(self, vector: np.ndarray) -> None:
        v = normalize(vector)
        if self.rows == 0 and self._data.shape[1] != v.shape[0]:
            self._data = np.zeros((16, v.shape[0]), np.float32)
        if v.shape[0] != self._data.shape[1]:
            raise ValueError(f"embedding has {v.shape[0]} dimensions, the store holds {self._data.shape[1]}")
        if self.rows == self._data.shape[0]:
            grown = np.zeros((self._data.shape[0] * 2, self._data.shape[1]), np.float32)
            grown[: self.rows] = self._data[: self.rows]
            self._data = grown
        self._data[self.rows] = v
        self.rows += 1

    def top(self, vector: np.ndarray, threshold: float, limit: int) -> list[tuple[int, float]]:
        """Row indices with cosine >= threshold (up to float rounding), best first; ties by row order."""
        if self.rows == 0 or limit <= 0:
            return []
        q = self._query(vector)
        # einsum runs single-threaded; a BLAS matmul spreads this small product over threads and, on a
        # busy machine, its p95 jumps from ~1 ms to ~10 ms waiting for them.
        return _ranked(np.einsum("ij,j->i", self.view, q), threshold, limit)

    def top_many(self, vectors: np.ndarray, threshold: float, limit: int) -> list[list[tuple[int, float]]]:
        """`top` for each row of `vectors`, with the same scores to the last bit, in one pass over the
        matrix: each stored row is dotted with every query while it is in cache, not read once per query."""
        if self.rows == 0 or limit <= 0 or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        queries = [self._query(v) for v in vectors]
        # Still einsum, not a BLAS product: each score is the same contiguous dot product `top` computes
        # (tests/test_graph_store.py checks equality on a LOCOMO-sized graph), so results and their order
        # cannot move by a rounding step; "->ik" makes the matrix row the outer loop.
        scores = np.einsum("ij,kj->ik", self.view, np.stack(queries))
        return [_ranked(scores[:, k], threshold, limit) for k in range(len(queries))]

    def _query(self, vector: np.ndarray) -> np.ndarray:
        q = normalize(vector)
        if q.shape[0] != self._data.shape[1]:
            raise ValueError(f"query has {q.shape[0]} dimensions, the store holds {self._data.shape[1]}")
        return q


def _ranked(scores: np.ndarray, threshold: float, limit: int) -> list[tuple[int, float]]:
    """Indices scoring >= threshold (up to float rounding), best first, at most `limit`."""
    hits = np.flatnonzero(scores >= threshold - SCORE_EPS)
    if hits.size == 0:
        return []
    # Stable sort on -score keeps insertion order among equal scores: deterministic results.
    order = hits[np.argsort(-scores[hits], kind="stable")][:limit]
    return [(int(i), float(scores[i])) for i in order]


class InProcessGraphStore:
    """A GraphStore held in memory and snapshotted to disk (see `save` / `load`)."""

    def __init__(self) -> None:
        self._nodes: list[Node] = []
        self._edges: list[Edge] = []
        self._node_vectors = _Matrix()
        self._edge_vectors = _Matrix()
        self._edge_index: dict[str, int] = {}
        self._adjacent: dict[str, list[int]] = defaultdict(list)
        self._by_key: dict[str, list[Node]] = defaultdict(list)

    # ---- writes ---------------------------------------------------------------------------------
    def add_node(self, name: str, type: str, vector: np.ndarray, created_at: str) -> Node:
        node = Node(id=f"n{len(self._nodes) + 1}", name=name, type=type, created_at=created_at)
        self._append_node(node, vector)
        return node

    def _append_node(self, node: Node, vector: np.ndarray) -> None:
        self._node_vectors.append(vector)
        self._nodes.append(node)
        self._by_key[entity_key(node.name)].append(node)

    def add_edge(
        self,
        source: Node,
        relation: str,
        destination: Node,
        text_vector: np.ndarray,
        created_at: str,
        source_dia_ids: tuple[str, ...] | list[str],
        *,
        source_name: str | None = None,
        destination_name: str | None = None,
    ) -> Edge:
        edge = Edge.new(
            f"e{len(self._edges) + 1}",
            source,
            relation,
            destination,
            created_at,
            source_dia_ids,
            source_name=source_name,
            destination_name=destination_name,
        )
        self._append_edge(edge, text_vector)
        return edge

    def _append_edge(self, edge: Edge, vector: np.ndarray) -> None:
        self._edge_vectors.append(vector)
        index = len(self._edges)
        self._edges.append(edge)
        self._edge_index[edge.id] = index
        self._adjacent[edge.source_id].append(index)
        if edge.destination_id != edge.source_id:
            self._adjacent[edge.destination_id].append(index)

    def invalidate(self, edge_id: str, at: str) -> None:
        index = self._edge_index.get(edge_id)
        if index is None:
            raise KeyError(f"no edge {edge_id!r}")
        edge = self._edges[index]
        if edge.valid:  # keep the first invalidation date: that is when it stopped being true
            self._edges[index] = dataclasses.replace(edge, valid=False, invalidated_at=at)

    # ---- reads ----------------------------------------------------------------------------------
    def nodes_with_key(self, key: str) -> list[Node]:
        return list(self._by_key.get(key, ()))

    def find_similar_nodes(
        self, vector: np.ndarray, threshold: float, limit: int
    ) -> list[tuple[Node, float]]:
        return [(self._nodes[i], s) for i, s in self._node_vectors.top(vector, threshold, limit)]

    def find_similar_nodes_many(
        self, vectors: np.ndarray, threshold: float, limit: int
    ) -> list[list[tuple[Node, float]]]:
        return [
            [(self._nodes[i], s) for i, s in hits]
            for hits in self._node_vectors.top_many(vectors, threshold, limit)
        ]

    def search_edges(self, vector: np.ndarray, threshold: float, limit: int) -> list[tuple[Edge, float]]:
        return [(self._edges[i], s) for i, s in self._edge_vectors.top(vector, threshold, limit)]

    def edges_of(self, node_ids: list[str] | tuple[str, ...], include_invalid: bool = True) -> list[Edge]:
        indices = sorted({i for node_id in node_ids for i in self._adjacent.get(node_id, ())})
        edges = [self._edges[i] for i in indices]
        return edges if include_invalid else [e for e in edges if e.valid]

    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def edges(self) -> list[Edge]:
        return list(self._edges)

    # ---- persistence ----------------------------------------------------------------------------
    def save(self, directory: Path) -> None:
        write_snapshot(
            Path(directory),
            self._nodes,
            self._node_vectors.view,
            self._edges,
            self._edge_vectors.view,
            meta={"backend": "inprocess"},
        )

    @classmethod
    def load(cls, directory: Path) -> InProcessGraphStore:
        nodes, node_vectors, edges, edge_vectors = read_snapshot(Path(directory))
        store = cls()
        for i, node in enumerate(nodes):
            store._append_node(node, node_vectors[i])
        for i, edge in enumerate(edges):
            store._append_edge(edge, edge_vectors[i])
        return store

    def export_graphml(self, path: Path) -> None:
        """Write the graph (no embeddings) as GraphML, e.g. for Gephi or networkx."""
        write_graphml(self._nodes, self._edges, path)

    def close(self) -> None:
        """Nothing to release; present for the GraphStore interface."""
