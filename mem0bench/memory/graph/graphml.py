"""GraphML export of a Mem0^g graph, for viewers (Gephi, yEd, Cytoscape) and networkx.

Written with the standard library, so inspection needs no extra package. Embeddings are left out. Edges
keep their ids, so parallel relations between the same two entities (e.g. an invalidated one and its
successor) stay apart; `valid` and `invalidated_at` carry the timeline.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from mem0bench.memory.graph.base import Edge, Node

__all__ = ["write_graphml"]

_NS = "http://graphml.graphdrawing.org/xmlns"

# (element, attribute name, GraphML type); 'label' is what viewers show by default.
_KEYS = (
    ("node", "label", "string"),
    ("node", "name", "string"),
    ("node", "type", "string"),
    ("node", "created_at", "string"),
    ("edge", "label", "string"),
    ("edge", "relation", "string"),
    ("edge", "valid", "boolean"),
    ("edge", "created_at", "string"),
    ("edge", "invalidated_at", "string"),
    ("edge", "source_dia_ids", "string"),
)


def _data(parent: ET.Element, ids: dict[tuple[str, str], str], kind: str, values: dict[str, str]) -> None:
    for name, value in values.items():
        ET.SubElement(parent, "data", key=ids[(kind, name)]).text = value


def write_graphml(nodes: Sequence[Node], edges: Sequence[Edge], path: Path) -> None:
    """Write a directed GraphML file with every node and edge (invalid edges included)."""
    root = ET.Element("graphml", xmlns=_NS)
    ids: dict[tuple[str, str], str] = {}
    for i, (kind, name, type_) in enumerate(_KEYS):
        ids[(kind, name)] = f"d{i}"
        ET.SubElement(root, "key", {"id": f"d{i}", "for": kind, "attr.name": name, "attr.type": type_})
    graph = ET.SubElement(root, "graph", id="G", edgedefault="directed")
    for node in nodes:
        element = ET.SubElement(graph, "node", id=node.id)
        values = {"label": node.name, "name": node.name, "type": node.type, "created_at": node.created_at}
        _data(element, ids, "node", values)
    for edge in edges:
        element = ET.SubElement(graph, "edge", id=edge.id, source=edge.source_id, target=edge.destination_id)
        values = {
            "label": edge.relation,
            "relation": edge.relation,
            "valid": "true" if edge.valid else "false",
            "created_at": edge.created_at,
            "invalidated_at": edge.invalidated_at or "",
            "source_dia_ids": ",".join(edge.source_dia_ids),
        }
        _data(element, ids, "edge", values)
    ET.indent(root)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
