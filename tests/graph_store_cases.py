"""Behaviour tests every GraphStore must pass, shared by the in-process and FalkorDB test modules.

Each case takes a factory `make() -> GraphStore` (a fresh, empty graph) and a tmp directory.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mem0bench.memory.graph import load_graph_snapshot
from mem0bench.memory.graph.base import GraphStore

Factory = Callable[[], GraphStore]
DIM = 8


def unit(i: int) -> np.ndarray:
    v = np.zeros(DIM, np.float32)
    v[i] = 1.0
    return v


def at_angle(cos: float, a: int = 0, b: int = 1) -> np.ndarray:
    """A unit vector whose cosine with unit(a) is `cos` (in the a-b plane)."""
    v = np.zeros(DIM, np.float32)
    v[a], v[b] = cos, math.sqrt(1.0 - cos * cos)
    return v


def case_node_reuse_threshold(make: Factory) -> None:
    store = make()
    caroline = store.add_node("Caroline", "person", unit(0), "8 May 2023")
    store.add_node("Sweden", "place", unit(3), "8 May 2023")
    exact = store.find_similar_nodes(at_angle(0.75), 0.75, 5)
    assert [n.id for n, _ in exact] == [caroline.id], "a node exactly at the threshold is reused"
    assert abs(exact[0][1] - 0.75) < 1e-4
    assert store.find_similar_nodes(at_angle(0.74), 0.75, 5) == [], "just below the threshold: no match"
    # Best first, limit honoured.
    store.add_node("Carol", "person", at_angle(0.9), "9 May 2023")
    hits = store.find_similar_nodes(unit(0), 0.5, 5)
    assert [n.name for n, _ in hits] == ["Caroline", "Carol"]
    assert [n.name for n, _ in store.find_similar_nodes(unit(0), 0.5, 1)] == ["Caroline"]
    store.close()


def case_invalidation_keeps_history(make: Factory) -> None:
    store = make()
    a = store.add_node("Melanie", "person", unit(0), "1 May 2023")
    b = store.add_node("Boston", "place", unit(1), "1 May 2023")
    c = store.add_node("Denver", "place", unit(2), "9 June 2023")
    old = store.add_edge(a, "lives_in", b, unit(4), "1 May 2023", ["D1:3", "D1:4"])
    new = store.add_edge(a, "lives_in", c, unit(5), "9 June 2023", ("D7:1",))
    store.invalidate(old.id, "9 June 2023")
    store.invalidate(old.id, "1 July 2023")  # a second invalidation keeps the first date
    edges = {e.id: e for e in store.edges()}
    assert set(edges) == {old.id, new.id}, "an invalidated edge is never deleted"
    kept = edges[old.id]
    assert (kept.valid, kept.invalidated_at, kept.created_at) == (False, "9 June 2023", "1 May 2023")
    assert kept.source_dia_ids == ("D1:3", "D1:4")
    assert (kept.source_name, kept.relation, kept.destination_name) == ("Melanie", "lives_in", "Boston")
    assert edges[new.id].valid and edges[new.id].invalidated_at is None
    assert [e.id for e in store.edges_of([a.id], include_invalid=False)] == [new.id]
    assert [e.id for e in store.edges_of([a.id])] == [old.id, new.id]
    store.close()


def case_edges_of_in_and_out(make: Factory) -> None:
    store = make()
    a = store.add_node("A", "x", unit(0), "d")
    b = store.add_node("B", "x", unit(1), "d")
    c = store.add_node("C", "x", unit(2), "d")
    out_edge = store.add_edge(a, "likes", b, unit(3), "d", [])
    in_edge = store.add_edge(c, "knows", a, unit(4), "d", [])
    other = store.add_edge(b, "owns", c, unit(5), "d", [])
    assert [e.id for e in store.edges_of([a.id])] == [out_edge.id, in_edge.id]
    # An edge between two of the asked nodes comes once.
    assert [e.id for e in store.edges_of([a.id, b.id])] == [out_edge.id, in_edge.id, other.id]
    assert store.edges_of([]) == []
    assert store.edges_of(["n999"]) == []
    store.close()


def case_search_edges_order_and_threshold(make: Factory) -> None:
    store = make()
    a = store.add_node("A", "x", unit(0), "d")
    b = store.add_node("B", "x", unit(1), "d")
    low = store.add_edge(a, "r1", b, at_angle(0.3, 6, 7), "d", [])
    high = store.add_edge(a, "r2", b, at_angle(0.9, 6, 7), "d", [])
    mid = store.add_edge(a, "r3", b, at_angle(0.6, 6, 7), "d", [])
    store.invalidate(mid.id, "later")  # invalid edges stay searchable (the timeline)
    hits = store.search_edges(unit(6), 0.4, 10)
    assert [e.id for e, _ in hits] == [high.id, mid.id]
    assert hits[0][1] > hits[1][1] and abs(hits[0][1] - 0.9) < 1e-4
    assert [e.id for e, _ in store.search_edges(unit(6), 0.0, 10)] == [high.id, mid.id, low.id]
    assert [e.id for e, _ in store.search_edges(unit(6), 0.0, 1)] == [high.id]
    assert store.search_edges(unit(6), 0.95, 10) == []
    assert not hits[1][0].valid
    store.close()


def case_save_and_load(make: Factory, tmp: Path, reopen: Callable[[Path], GraphStore]) -> None:
    store = make()
    a = store.add_node("Jon", "person", unit(0), "d1")
    b = store.add_node('Gina\'s "studio"', "place", unit(1), "d1")
    edge = store.add_edge(a, "opened", b, unit(2), "d1", ["D1:1"])
    store.invalidate(edge.id, "d2")
    store.add_edge(b, "located_in", a, unit(3), "d2", ["D2:5"])
    store.save(tmp)
    nodes, edges = load_graph_snapshot(tmp)
    assert nodes == store.nodes() and edges == store.edges()
    store.close()
    again = reopen(tmp)
    assert again.nodes() == nodes and again.edges() == edges
    assert [n.name for n, _ in again.find_similar_nodes(unit(1), 0.9, 3)] == ['Gina\'s "studio"']
    assert [e.relation for e, _ in again.search_edges(unit(3), 0.9, 3)] == ["located_in"]
    # New ids continue after the loaded ones.
    c = again.add_node("New", "x", unit(4), "d3")
    assert c.id not in {n.id for n in nodes}
    again.close()


def case_edge_keeps_extracted_names(make: Factory, tmp: Path, reopen: Callable[[Path], GraphStore]) -> None:
    """An edge written through a reused node keeps the names it was extracted with, across save and reload."""
    store = make()
    caroline = store.add_node("Caroline", "person", unit(0), "d1")
    race = store.add_node("charity race", "event", unit(1), "d1")
    date = store.add_node("20 May 2023", "date", unit(2), "d1")
    plain = store.add_edge(caroline, "ran", race, unit(3), "d1", [])
    named = store.add_edge(
        caroline,
        "signed_up_for",
        race,
        unit(4),
        "d2",
        ["D2:1"],
        source_name="caroline",
        destination_name="the race",
    )
    dated = store.add_edge(race, "happened_on", date, unit(5), "d2", [], destination_name="20 May 2023")
    assert (plain.source_name, plain.destination_name) == ("Caroline", "charity race")
    assert (named.source_name, named.destination_name) == ("caroline", "the race")
    assert (named.source_id, named.destination_id) == (caroline.id, race.id)
    expected = [("Caroline", "charity race"), ("caroline", "the race"), ("charity race", "20 May 2023")]
    assert [(e.source_name, e.destination_name) for e in store.edges()] == expected
    assert [e.id for e in store.edges_of([caroline.id])] == [plain.id, named.id]
    assert store.edges_of([caroline.id])[1].destination_name == "the race"
    assert [e.destination_name for e, _ in store.search_edges(unit(4), 0.9, 1)] == ["the race"]
    assert dated.text == "charity race happened on 20 May 2023"
    store.save(tmp)
    store.close()
    again = reopen(tmp)
    assert [(e.source_name, e.destination_name) for e in again.edges()] == expected
    again.close()


def case_literal_nodes_merge_only_on_equal_text(make: Factory) -> None:
    """Node resolution on a real store: dates never merge by similarity, names do at reuse_threshold."""
    from mem0bench.systems.methods.mem0g.nodes import resolve_node

    store = make()
    may7 = store.add_node("7 May 2023", "date", unit(0), "d1")
    caroline = store.add_node("Caroline", "person", unit(3), "d1")
    # A different date 0.95 similar: a new node, whatever the threshold.
    assert resolve_node(store, "20 May 2023", "date", at_angle(0.95), 0.9) is None
    assert resolve_node(store, "20 May 2023", "date", at_angle(0.95), 0.5) is None
    # The same date written differently: reused.
    assert resolve_node(store, "7th May, 2023", "date", at_angle(0.97), 0.9) == may7
    # A name that is not a date never lands on the date node, however similar.
    assert resolve_node(store, "May", "event", at_angle(0.99), 0.9) is None
    # Names merge at reuse_threshold and not below it.
    assert resolve_node(store, "caroline", "person", at_angle(0.95, 3, 4), 0.9) == caroline
    assert resolve_node(store, "Carolina", "person", at_angle(0.85, 3, 4), 0.9) is None
    store.close()


def case_key_index_resolution(make: Factory) -> None:
    """Case and spacing: one entity below the reuse threshold; date phrases without digits merge only on
    equal text; the exact-key index serves both, whatever the vectors."""
    from mem0bench.systems.methods.mem0g.nodes import resolve_node

    store = make()
    caroline = store.add_node("Caroline", "person", unit(0), "d1")
    mary = store.add_node("Mary Ann", "person", unit(2), "d1")
    early = store.add_node("early May", "time_period", unit(4), "d1")
    summer = store.add_node("last summer", "season", unit(5), "d1")
    assert store.nodes_with_key("caroline") == [caroline]
    # 0.85 is below the reuse threshold: only the key merges these.
    assert resolve_node(store, "caroline", "person", at_angle(0.85), 0.9) == caroline
    assert resolve_node(store, "CAROLINE ", "person", at_angle(0.85), 0.9) == caroline
    assert resolve_node(store, "MaryAnn", "person", at_angle(0.85, 2, 3), 0.9) == mary
    assert resolve_node(store, "Carolina", "person", at_angle(0.85), 0.9) is None
    # Date phrases: a near-identical vector is not enough, equal text is.
    assert resolve_node(store, "late May", "time_period", at_angle(0.99, 4, 6), 0.5) is None
    assert resolve_node(store, "this summer", "season", at_angle(0.99, 5, 6), 0.5) is None
    assert resolve_node(store, "Early May", "time_period", unit(7), 0.9) == early
    assert resolve_node(store, "last  summer", "season", unit(7), 0.9) == summer
    # A plain name never lands on a date node with its text, nor a date on a plain node.
    assert resolve_node(store, "early may", "event", at_angle(0.2, 4, 6), 0.9) == early  # a time phrase
    assert resolve_node(store, "Caroline", "date", unit(0), 0.9) is None
    store.close()


def case_similar_nodes_many_matches_one_by_one(make: Factory) -> None:
    """The batched node search returns, per query, exactly the one-query search: nodes, scores, order."""
    store = make()
    for i, name in enumerate(["Caroline", "caroline twin", "Sweden", "Melanie"]):
        store.add_node(name, "person", unit(0) if i < 2 else at_angle(0.8, i, 0), "d")  # a tie at the top
    queries = np.stack([unit(0), at_angle(0.75), unit(5), at_angle(0.8, 2, 0)])
    for threshold, limit in [(0.75, 5), (0.5, 1), (0.0, 0)]:
        one_by_one = [store.find_similar_nodes(q, threshold, limit) for q in queries]
        assert store.find_similar_nodes_many(queries, threshold, limit) == one_by_one
    assert [n.name for n, _ in store.find_similar_nodes_many(queries, 0.75, 5)[0]] == [
        "Caroline",
        "caroline twin",
    ]
    assert store.find_similar_nodes_many(np.zeros((0, DIM), np.float32), 0.5, 5) == []
    assert make().find_similar_nodes_many(queries, 0.5, 5) == [[], [], [], []]
