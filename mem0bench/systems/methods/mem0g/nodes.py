"""Node resolution for Mem0^g's ingestion: which existing node an extracted entity name maps to.

Reusing a node must never change a fact. Two rules guard it:

* Names reuse a node only at cosine >= ``reuse_threshold`` (default 0.9, the value mem0's graph code used at
  add time), a threshold of its own, apart from the retrieval threshold (``threshold``). With dense
  embeddings "Caroline" and "caroline" are ~1.0 apart, while unrelated names rarely reach 0.9.
* Literal entities (dates, times, numbers, quantities) never merge by similarity: with dense embeddings
  "7 May 2023" and "20 May 2023" are ~0.85 similar, "May 2023" and "June 2023" ~0.93. A literal maps to an
  existing node only when their normalised texts are equal, and a non-literal name never maps onto a literal
  node. An entity is literal when its extracted type says so or its name holds a digit.
"""

from __future__ import annotations

import re

import numpy as np

from mem0bench.memory.graph.base import GraphStore, Node

__all__ = ["LITERAL_TYPES", "is_literal", "normalised_name", "resolve_node"]

LITERAL_TYPES = frozenset(
    [
        "date",
        "time",
        "datetime",
        "period",
        "year",
        "month",
        "day",
        "weekday",
        "number",
        "quantity",
        "amount",
        "count",
        "duration",
        "age",
        "money",
        "price",
        "cost",
        "percentage",
        "measurement",
        "distance",
        "weight",
        "height",
    ]
)
"""Entity types whose value is the text itself (compared after normalisation, never by similarity)."""

_CANDIDATES = 20
"""Existing nodes looked at per name (best first)."""

_LITERAL_FLOOR = 0.5
"""Similarity above which candidates for an equal-text literal are looked for. Texts equal after
normalisation (case, punctuation, ordinal suffixes) embed far closer than this with any real embedder."""

_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")


def normalised_name(name: str) -> str:
    """Lowercase, punctuation to spaces, '20th' -> '20', whitespace collapsed: '20th May, 2023' -> '20 may 2023'."""
    text = re.sub(r"[^\w\s]|_", " ", name.lower())
    return " ".join(_ORDINAL.sub(r"\1", text).split())


def is_literal(name: str, type: str) -> bool:
    """True for dates, times, numbers and quantities: by the extracted type, or a digit in the name."""
    return type.lower().replace("-", "_") in LITERAL_TYPES or any(ch.isdigit() for ch in name)


def resolve_node(
    store: GraphStore, name: str, type: str, vector: np.ndarray, reuse_threshold: float
) -> Node | None:
    """The existing node `name` (of extracted `type`, embedded as `vector`) maps to; None: a new node."""
    if is_literal(name, type):
        key = normalised_name(name)
        for node, _ in store.find_similar_nodes(vector, min(_LITERAL_FLOOR, reuse_threshold), _CANDIDATES):
            if normalised_name(node.name) == key:
                return node
        return None
    for node, _ in store.find_similar_nodes(vector, reuse_threshold, _CANDIDATES):
        if not is_literal(node.name, node.type):
            return node
    return None
