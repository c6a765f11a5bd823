"""The in-process graph store of Mem0^g."""

from __future__ import annotations

import time
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from mem0bench.common.errors import ConfigurationError
from mem0bench.memory.graph import build_graph_store, graph_name, load_graph_snapshot
from mem0bench.memory.graph.base import GraphStore
from mem0bench.memory.graph.inprocess import InProcessGraphStore
from tests import graph_store_cases as cases


def test_node_reuse_at_and_below_threshold() -> None:
    cases.case_node_reuse_threshold(InProcessGraphStore)


def test_invalidation_keeps_edge_and_history() -> None:
    cases.case_invalidation_keeps_history(InProcessGraphStore)


def test_edges_of_in_and_out() -> None:
    cases.case_edges_of_in_and_out(InProcessGraphStore)


def test_search_edges_order_and_threshold() -> None:
    cases.case_search_edges_order_and_threshold(InProcessGraphStore)


def test_save_and_load(tmp_path: Path) -> None:
    cases.case_save_and_load(InProcessGraphStore, tmp_path / "g", InProcessGraphStore.load)


def test_edge_keeps_extracted_names(tmp_path: Path) -> None:
    cases.case_edge_keeps_extracted_names(InProcessGraphStore, tmp_path / "g", InProcessGraphStore.load)


def test_literal_nodes_merge_only_on_equal_text() -> None:
    cases.case_literal_nodes_merge_only_on_equal_text(InProcessGraphStore)


def test_key_index_resolution() -> None:
    cases.case_key_index_resolution(InProcessGraphStore)


def test_similar_nodes_many_matches_one_by_one() -> None:
    cases.case_similar_nodes_many_matches_one_by_one(InProcessGraphStore)


def test_batched_node_search_is_exact_at_locomo_scale() -> None:
    """A LOCOMO-sized graph (conv-26's ~480 nodes a speaker, 1536-dim embeddings): the batched search gives
    every query's nodes with the same float scores, to the bit, in the same order, near-ties included."""
    rng = np.random.default_rng(18)
    base = rng.standard_normal((60, 1536)).astype(np.float32)
    # Clusters of close names (as "7 May 2023" / "20 May 2023" are) and exact duplicates (equal scores).
    vectors = [base[i % 60] + 0.35 * rng.standard_normal(1536).astype(np.float32) for i in range(470)]
    vectors += [vectors[i] for i in range(0, 100, 10)]
    store = InProcessGraphStore()
    for i, v in enumerate(vectors):
        store.add_node(f"entity {i}", "thing", v, "d")
    queries = np.stack([vectors[7], base[3], *(base[i] + 0.3 * rng.standard_normal(1536) for i in range(6))])
    for threshold in (0.3, 0.7, 0.9):
        batched = store.find_similar_nodes_many(queries, threshold, 5)
        assert batched == [store.find_similar_nodes(q, threshold, 5) for q in queries]
    assert sum(map(len, store.find_similar_nodes_many(queries, 0.7, 5))) >= 10  # the check saw real hits


def test_protocol_and_builder(tmp_path: Path) -> None:
    store = build_graph_store({"backend": "inprocess"}, "k", tmp_path / "g")
    assert isinstance(store, InProcessGraphStore) and isinstance(store, GraphStore)
    a = store.add_node("A", "x", cases.unit(0), "d")
    store.add_edge(a, "is", a, cases.unit(1), "d", [])
    store.save(tmp_path / "g")
    resumed = build_graph_store({"backend": "inprocess"}, "k", tmp_path / "g")
    assert len(resumed.edges()) == 1
    fresh = build_graph_store({"backend": "inprocess"}, "k", tmp_path / "g", resume=False)
    assert fresh.edges() == []
    with pytest.raises(ConfigurationError, match="unknown graph backend"):
        build_graph_store({"backend": "neo4j"}, "k", tmp_path / "g")
    assert graph_name("mem0bench", "ab12_conv-26_caroline") == "mem0bench_ab12_conv-26_caroline"
    assert graph_name("p", "a b/'c") == "p_a_b_c"


def test_graphml_export_opens_with_networkx(tmp_path: Path) -> None:
    store = InProcessGraphStore()
    a = store.add_node("Caroline", "person", cases.unit(0), "8 May 2023")
    b = store.add_node("LGBTQ support group", "event", cases.unit(1), "8 May 2023")
    e1 = store.add_edge(a, "attended", b, cases.unit(2), "8 May 2023", ["D1:3"])
    store.add_edge(a, "attended", b, cases.unit(3), "9 May 2023", ["D2:1"])  # parallel edge kept
    store.invalidate(e1.id, "9 May 2023")
    path = tmp_path / "out" / "graph.graphml"
    store.export_graphml(path)
    graph = nx.read_graphml(path, force_multigraph=True)
    assert graph.number_of_nodes() == 2 and graph.number_of_edges() == 2
    assert graph.nodes["n1"]["name"] == "Caroline"
    data = sorted(graph.get_edge_data("n1", "n2").values(), key=lambda d: d["created_at"])
    assert [d["valid"] for d in data] == [False, True]
    assert data[0]["invalidated_at"] == "9 May 2023"


def test_snapshot_reads_without_store(tmp_path: Path) -> None:
    store = InProcessGraphStore()
    a = store.add_node("A", "x", cases.unit(0), "d")
    store.add_edge(a, "r", a, cases.unit(1), "d", ["D1:1"])
    store.save(tmp_path)
    nodes, edges = load_graph_snapshot(tmp_path)
    assert [n.name for n in nodes] == ["A"] and edges[0].source_dia_ids == ("D1:1",)


def test_search_is_fast_at_locomo_scale() -> None:
    """A few thousand nodes and edges at text-embedding-3-small's 1536 dimensions: a guard against an
    order-of-magnitude regression (a scan turned quadratic), not a speed figure: p95 under 20 ms.

    Measured in this thread's CPU time: the search is single-threaded by design, and CPU time does not
    count the moments a busy test machine gives the core to another process. The figure itself belongs to
    the benchmarks (docs/benchmarks.md): ~1 ms wall on an idle machine before, ~5 ms of CPU on this
    machine's numpy build (OPENBLAS_CORETYPE set), where the old 5 ms bound failed at the base commit too."""
    rng = np.random.default_rng(0)
    store = InProcessGraphStore()
    nodes = [store.add_node(f"e{i}", "x", rng.standard_normal(1536), "d") for i in range(2000)]
    for i in range(3000):
        store.add_edge(nodes[i % 2000], "r", nodes[(i * 7) % 2000], rng.standard_normal(1536), "d", [])
    timings = []
    for _ in range(50):
        query = rng.standard_normal(1536)
        start = time.thread_time()
        store.find_similar_nodes(query, 0.7, 5)
        store.search_edges(query, 0.0, 20)
        store.edges_of([nodes[0].id, nodes[1].id])
        timings.append(time.thread_time() - start)
    assert float(np.percentile(timings, 95)) < 0.020
