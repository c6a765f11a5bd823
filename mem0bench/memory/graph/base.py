"""The graph store interface of Mem0^g: entity nodes and relation edges, each with an embedding.

Edges are never deleted: an obsolete relation is marked invalid with the time it stopped being true, so the
timeline survives (the Mem0 paper's point for temporal questions).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

# Similarity comparisons allow this much float32 rounding, so a score "at" a threshold counts as reaching it.
SCORE_EPS = 1e-6


@dataclass(frozen=True)
class Node:
    id: str
    name: str
    type: str
    created_at: str


@dataclass(frozen=True)
class Edge:
    id: str
    source_id: str
    relation: str
    destination_id: str
    source_name: str
    destination_name: str
    valid: bool
    created_at: str
    invalidated_at: str | None
    source_dia_ids: tuple[str, ...]

    @property
    def text(self) -> str:
        """The triplet text that is embedded for the semantic-triplet channel."""
        return triplet_text(self.source_name, self.relation, self.destination_name)

    @classmethod
    def new(
        cls,
        id: str,
        source: Node,
        relation: str,
        destination: Node,
        created_at: str,
        source_dia_ids: Any,
        *,
        source_name: str | None = None,
        destination_name: str | None = None,
    ) -> Edge:
        """A valid edge between two nodes, as every store creates it. The names are the ones the triplet
        was extracted with (default: the nodes' names): a reused node never renames an edge's entity."""
        return cls(
            id=id,
            source_id=source.id,
            relation=relation,
            destination_id=destination.id,
            source_name=source.name if source_name is None else source_name,
            destination_name=destination.name if destination_name is None else destination_name,
            valid=True,
            created_at=created_at,
            invalidated_at=None,
            source_dia_ids=tuple(source_dia_ids),
        )


_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")


def normalised_name(name: str) -> str:
    """Lowercase, punctuation to spaces, '20th' -> '20', whitespace collapsed: '20th May, 2023' -> '20 may 2023'."""
    text = re.sub(r"[^\w\s]|_", " ", name.lower())
    return " ".join(_ORDINAL.sub(r"\1", text).split())


def entity_key(name: str) -> str:
    """The exact-match key of an entity name: `normalised_name` without spaces, so names that differ only
    in case, spacing, punctuation or ordinal suffixes share it ('Mary Ann' / 'maryann', '20th May, 2023' /
    '20 May 2023'). Every store indexes its nodes by it (`GraphStore.nodes_with_key`)."""
    return normalised_name(name).replace(" ", "")


def triplet_text(source: str, relation: str, destination: str) -> str:
    return f"{source} {relation.replace('_', ' ')} {destination}"


def node_to_json(node: Node) -> dict[str, Any]:
    return asdict(node)


def edge_to_json(edge: Edge) -> dict[str, Any]:
    data = asdict(edge)
    data["source_dia_ids"] = list(edge.source_dia_ids)
    return data


def node_from_json(data: dict[str, Any]) -> Node:
    return Node(
        id=str(data["id"]), name=str(data["name"]), type=str(data["type"]), created_at=str(data["created_at"])
    )


def edge_from_json(data: dict[str, Any]) -> Edge:
    return Edge(
        id=str(data["id"]),
        source_id=str(data["source_id"]),
        relation=str(data["relation"]),
        destination_id=str(data["destination_id"]),
        source_name=str(data["source_name"]),
        destination_name=str(data["destination_name"]),
        valid=bool(data["valid"]),
        created_at=str(data["created_at"]),
        invalidated_at=None if data.get("invalidated_at") is None else str(data["invalidated_at"]),
        source_dia_ids=tuple(str(d) for d in data.get("source_dia_ids") or ()),
    )


@runtime_checkable
class GraphStore(Protocol):
    """One graph (one speaker's stream of one conversation). Vectors need not be normalized."""

    def find_similar_nodes(
        self, vector: np.ndarray, threshold: float, limit: int
    ) -> list[tuple[Node, float]]:
        """Nodes whose cosine similarity to `vector` is >= threshold, best first, at most `limit`."""
        ...

    def find_similar_nodes_many(
        self, vectors: np.ndarray, threshold: float, limit: int
    ) -> list[list[tuple[Node, float]]]:
        """`find_similar_nodes` for each row of `vectors` (same nodes, scores and order), in one call."""
        ...

    def nodes_with_key(self, key: str) -> list[Node]:
        """Nodes whose `entity_key(name)` is `key`, oldest first: an exact index, not a similarity search."""
        ...

    def add_node(self, name: str, type: str, vector: np.ndarray, created_at: str) -> Node: ...

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
        """A new valid edge; `source_name` / `destination_name` (default: the nodes' names) are kept as given."""
        ...

    def edges_of(self, node_ids: list[str] | tuple[str, ...], include_invalid: bool = True) -> list[Edge]:
        """Incoming and outgoing edges of the nodes, in creation order, each once."""
        ...

    def search_edges(self, vector: np.ndarray, threshold: float, limit: int) -> list[tuple[Edge, float]]:
        """Edges (valid or not) whose triplet-text similarity is >= threshold, best first, at most `limit`."""
        ...

    def invalidate(self, edge_id: str, at: str) -> None:
        """Mark an edge obsolete as of `at`; it stays in the graph. A second call keeps the first date."""
        ...

    def nodes(self) -> list[Node]: ...

    def edges(self) -> list[Edge]: ...

    def save(self, directory: Path) -> None:
        """Write a snapshot (graph.json + node/edge embeddings .npy) that `load_graph_snapshot` reads."""
        ...

    def close(self) -> None: ...


SNAPSHOT_JSON = "graph.json"
NODE_VECTORS = "node_vectors.npy"
EDGE_VECTORS = "edge_vectors.npy"
