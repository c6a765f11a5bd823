"""Mem0^g with its graph in a real FalkorDB server, through the real CLI, checked with direct Cypher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from mem0bench.memory.graph import load_graph_snapshot
from tests.falkordb_server import FalkorDBServer

pytestmark = [pytest.mark.slow, pytest.mark.falkordb]


def test_cli_run_leaves_its_graphs_in_falkordb(
    tmp_path: Path,
    falkordb_server: FalkorDBServer,  # noqa: F811
    locomo_mini: Path,
) -> None:
    run_dir = tmp_path / "falkordb-e2e-run"
    args = [
        "run", "+exp=mem0g_falkordb", f"graph.host={falkordb_server.host}", f"graph.port={falkordb_server.port}",
        f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]", "eval.max_questions=3",
        "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST,
    ]  # fmt: skip
    with StandinServer(api_key=TEST_KEY) as llm:
        result = run_cli(args, cli_env(llm.base_url, tmp_path / "cache"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    assert len(read_jsonl(run_dir / "predictions.jsonl")) == 3

    # The run's graphs: one per speaker stream of mini-1, named in graph_stream.json, held by the server.
    streams = sorted((run_dir / "state" / "mini-1").glob("*/graph/graph_stream.json"))
    assert [p.parent.parent.name for p in streams] == ["maya", "tomas"]
    on_server = set(falkordb_server.client().list_graphs())
    totals = {"nodes": 0, "relations": 0}
    for path in streams:
        meta = json.loads(path.read_text())
        name = meta["graph_name"]
        assert meta["backend"] == "falkordb" and name in on_server
        assert name.startswith(f"mem0bench_{run_dir.name}_mini-1_")  # <prefix>_<run id>_<sample>_<speaker>
        nodes = falkordb_server.rows(name, "MATCH (n:Entity) RETURN n.id, n.name ORDER BY n.seq")
        edges = falkordb_server.rows(
            name,
            # Edges hold the names as extracted (a reused node may be spelled differently).
            "MATCH (a:Entity)-[r:REL]->(b:Entity) RETURN r.id, r.source_name, r.relation, r.destination_name, "
            "r.valid ORDER BY r.seq",
        )
        assert nodes and edges, f"{name}: {len(nodes)} entities, {len(edges)} relations"
        # The server holds exactly the graph the run saved (same entities, same relations, same validity).
        snapshot = load_graph_snapshot(path.parent)
        assert [(row[0], row[1]) for row in nodes] == [(n.id, n.name) for n in snapshot.nodes]
        assert [tuple(row) for row in edges] == [
            (e.id, e.source_name, e.relation, e.destination_name, e.valid) for e in snapshot.edges
        ]
        totals["nodes"] += len(nodes)
        totals["relations"] += len(edges)

    # ...and the ingest report counted the same graphs.
    (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
    details = ingest["details"]
    assert ingest["sample_id"] == "mini-1"
    assert details["graph.nodes"] == totals["nodes"] and details["graph.relations"] == totals["relations"]
