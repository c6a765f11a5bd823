"""One stream's graph and its files: the graph snapshot and graph_stream.json (graph op counts, failures).

Each stream's graph is saved to ``<sample>/<speaker slug>/graph/`` (graph.json + vectors, for any backend)
in Mem0's ``finish_stream_extra`` hook, i.e. before Mem0's done marker.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mem0bench.common.files import atomic_write
from mem0bench.memory.base import StepFailure
from mem0bench.memory.graph import build_graph_store
from mem0bench.memory.graph.base import GraphStore

__all__ = ["GRAPH_DIR", "GRAPH_STREAM_FILE", "GraphStream", "open_graph_stream", "save_graph_stream"]

GRAPH_DIR = "graph"
"""The graph's folder inside a stream's snapshot folder."""
GRAPH_STREAM_FILE = "graph_stream.json"


@dataclass
class GraphStream:
    """The graph of one stream, with its op counts and failures."""

    store: GraphStore
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[StepFailure] = field(default_factory=list)


def open_graph_stream(
    graph_config: Mapping[str, Any], graph_key: str, directory: Path, *, resume: bool
) -> GraphStream:
    """The stream's graph: from its snapshot in `directory` (with its counts) when resuming, else empty."""
    stream = GraphStream(build_graph_store(graph_config, graph_key, directory, resume=resume))
    meta_path = directory / GRAPH_STREAM_FILE
    if resume and meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        stream.counts.update(meta.get("counts", {}))
        stream.failures.extend(StepFailure.from_dict(row) for row in meta.get("failures", []))
    return stream


def save_graph_stream(stream: GraphStream, directory: Path, *, backend: str, graph_name: str) -> None:
    """The graph snapshot, then graph_stream.json (the server-side graph name, counts and failures)."""
    stream.store.save(directory)
    meta = {
        "backend": backend,
        "graph_name": graph_name,
        "counts": dict(sorted(stream.counts.items())),
        "failures": [failure.to_dict() for failure in stream.failures],
    }
    atomic_write(directory / GRAPH_STREAM_FILE, json.dumps(meta, ensure_ascii=False, indent=1))
