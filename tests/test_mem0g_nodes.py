"""Mem0^g's node rules and recurring events: names that differ only in case or spacing are one entity,
date-like phrases merge on equal text only, literals are found through an exact-key index, and a second
time for the same event does not invalidate the first unless the new messages contradict it.

Where similarity decides, the vectors are real all-MiniLM-L6-v2 ones; the store-level cases with fixed
vectors run on both graph stores (tests/graph_store_cases.py; FalkorDB in test_falkordb_store.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mem0bench.memory.graph import InProcessGraphStore
from mem0bench.memory.graph.base import Node
from mem0bench.prompts import graph as prompts
from mem0bench.systems.methods.mem0g.nodes import is_literal, is_time_entity, resolve_node
from tests.fakes import FakeCall
from tests.test_mem0g import (  # noqa: F401  (typed_prompt_inputs: autouse, the fakes read prompt inputs)
    D1,
    D2,
    D3,
    FakeClient,
    MiniLMClient,
    conversation,
    minilm,  # noqa: F401 (the module fixture)
    sync,
    system,
    turn,
    typed_prompt_inputs,
)


@pytest.mark.parametrize(
    ("name", "type", "literal"),
    [
        ("early May", "time_period", True),
        ("last summer", "season", True),
        ("last summer", "event", True),  # a time phrase, whatever the extractor typed it
        ("the end of last year", "entity", True),
        ("April", "person", False),  # a person called April
        ("summer camp", "event", False),  # 'camp' is not a time word
        ("20 May 2023", "date", True),
        ("Caroline", "person", False),
    ],
)
def test_what_counts_as_a_literal(name: str, type: str, literal: bool) -> None:
    assert is_literal(name, type) is literal


def test_time_entities() -> None:
    assert is_time_entity("early May", "time_period") and is_time_entity("next week", "entity")
    assert not is_time_entity("May", "person") and not is_time_entity("pottery class", "activity")


class CountingStore(InProcessGraphStore):
    """An in-process store that counts similarity searches."""

    def __init__(self) -> None:
        super().__init__()
        self.searches = 0

    def find_similar_nodes(
        self, vector: np.ndarray, threshold: float, limit: int
    ) -> list[tuple[Node, float]]:
        self.searches += 1
        return super().find_similar_nodes(vector, threshold, limit)


# ---- real MiniLM vectors ----------------------------------------------------------------------------------


def _embed(backend: Any, texts: list[str]) -> np.ndarray:
    return asyncio.run(backend.embed_batch(texts))[0]


@pytest.mark.minilm
def test_literals_come_from_the_key_index_not_the_nearest_nodes(minilm: Any) -> None:  # noqa: F811
    """After 30 date nodes, '20 May 2023' (and '20th May, 2023') still reuse the first '20 May 2023', and
    no similarity search is made for a literal."""
    names = ["20 May 2023"] + [f"{d} May 2023" for d in range(1, 31) if d != 20] + ["1 June 2023"]
    store = CountingStore()
    vectors = _embed(minilm, names + ["20th May, 2023"])
    first = store.add_node(names[0], "date", vectors[0], D1)
    for name, vector in zip(names[1:], vectors[1 : len(names)]):
        store.add_node(name, "date", vector, D2)
    assert len(store.nodes()) == 31
    assert resolve_node(store, "20 May 2023", "date", vectors[0], 0.9) == first
    assert resolve_node(store, "20th May, 2023", "date", vectors[-1], 0.9) == first
    assert resolve_node(store, "21st May 2023", "date", vectors[0], 0.5) is not first
    assert store.searches == 0


def names_and_dates() -> Any:
    return conversation(
        [
            (D1, [turn("Caroline", "D1:1", "ENT: Mary Ann/person, pottery class/activity, early May/time_period "
                   "REL: Mary Ann|joined|pottery class; pottery class|started_in|early May")]),
            (D2, [turn("Caroline", "D2:1", "ENT: MaryAnn/person, hiking trip/event, late May/time_period "
                   "REL: MaryAnn|went_on|hiking trip; hiking trip|happened_in|late May")]),
            (D3, [turn("Caroline", "D3:1", "ENT: maryann/person, EARLY MAY/time_period, last summer/season, "
                   "this summer/season REL: maryann|visited_paris_in|last summer; "
                   "maryann|plans_rome_trip_in|this summer; maryann|met_tom_in|EARLY MAY")]),
        ]
    )  # fmt: skip


@pytest.mark.minilm
@pytest.mark.parametrize("reuse_threshold", [0.5, 0.85, 0.9])
@sync
async def test_minilm_spacing_merges_and_date_phrases_stay_apart(
    tmp_path: Path,
    minilm: Any,  # noqa: F811
    reuse_threshold: float,
) -> None:
    client = MiniLMClient(minilm)
    v = await client.embed(
        ["Mary Ann", "MaryAnn", "early May", "late May", "last summer", "this summer"], stage="t"
    )
    # What similarity alone would do: the spelling variants fall below 0.9, the distinct periods do not stay
    # below every threshold (0.89 and 0.82 here).
    assert float(v[0] @ v[1]) < 0.9 and float(v[2] @ v[3]) > 0.85 and float(v[4] @ v[5]) > 0.8
    mem0g = system(tmp_path, client, per_speaker=False, reuse_threshold=reuse_threshold)
    await mem0g.ingest(names_and_dates())
    nodes, edges = mem0g.graph_snapshot("conv-t")["shared"]
    names = [n.name for n in nodes]
    assert [n for n in names if n.replace(" ", "").lower() == "maryann"] == ["Mary Ann"]
    assert {"early May", "late May", "last summer", "this summer"} <= set(names)
    assert "EARLY MAY" not in names
    by_name = {n.name: n for n in nodes}
    met = next(e for e in edges if e.relation == "met_tom_in")
    assert met.destination_id == by_name["early May"].id and met.destination_name == "EARLY MAY"
    await mem0g.aclose()


# ---- recurring events -------------------------------------------------------------------------------------


class RecurrenceClient(FakeClient):
    """The resolver sees triplets only and, as a model tends to, names an edge with the same source and
    relation obsolete; the recurrence check reads the pair's messages: 'moved' contradicts."""

    def __init__(self) -> None:
        super().__init__()
        self.on(prompts.OBSOLETE_SPEC.name, self._same_source_and_relation)
        self.on(prompts.RECURRENCE_SPEC.name, self._contradicted)

    @staticmethod
    def _same_source_and_relation(call: FakeCall) -> dict[str, Any]:
        source, relation, _ = call.inputs["new"]
        return {
            "obsolete": [i for i, (s, r, _), _ in call.inputs["existing"] if (s, r) == (source, relation)]
        }

    @staticmethod
    def _contradicted(call: FakeCall) -> dict[str, Any]:
        moved = any("moved" in t.text for t in call.inputs["pair"])
        return {"contradicted": [i for i, _, _ in call.inputs["earlier"]] if moved else []}


def race(second: str) -> Any:
    return conversation(
        [
            (D1, [turn("Caroline", "D1:1", "ENT: Caroline/person, charity race/event, 7 May 2023/date "
                   "REL: Caroline|ran|charity race; charity race|happened_on|7 May 2023")]),
            (D2, [turn("Caroline", "D2:1", f"{second} ENT: charity race/event, 20 May 2023/date "
                   "REL: charity race|happened_on|20 May 2023")]),
        ]
    )  # fmt: skip


async def check_recurring_event(tmp_path: Path, graph: dict[str, Any] | None = None) -> None:
    """A race run again keeps both dates valid; a race moved invalidates the first (shared by FalkorDB)."""
    for second, first_valid in (("We ran the charity race again!", True), ("The race was moved.", False)):
        client = RecurrenceClient()
        mem0g = system(tmp_path / second[:6], client, graph, per_speaker=False)
        report = await mem0g.ingest(race(second))
        _, edges = mem0g.graph_snapshot("conv-t")["shared"]
        dated = {e.destination_name: e for e in edges if e.relation == "happened_on"}
        assert dated["20 May 2023"].valid
        assert dated["7 May 2023"].valid is first_valid
        assert dated["7 May 2023"].invalidated_at == (None if first_valid else D2)
        checks = client.routed(prompts.RECURRENCE_SPEC.name)
        assert len(checks) == 1 and [t.text for t in checks[0].inputs["pair"]][0].startswith(second)
        assert [d for _, (_, _, d), _ in checks[0].inputs["earlier"]] == ["7 May 2023"]
        assert report.details["graph.recurrence_checks"] == 1
        assert report.details.get("graph.recurrences_kept", 0) == int(first_valid)
        assert report.details.get("graph.edges_invalidated", 0) == int(not first_valid)
        await mem0g.aclose()


@sync
async def test_recurring_event_keeps_the_first_date_in_process(tmp_path: Path) -> None:
    await check_recurring_event(tmp_path)


@sync
async def test_a_changed_home_is_not_a_recurrence(tmp_path: Path) -> None:
    """Non-time destinations never reach the recurrence check: the resolver's word stands."""
    moves = conversation(
        [
            (D1, [turn("Caroline", "D1:1", "ENT: Caroline/person, Boston/city REL: Caroline|lives_in|Boston")]),
            (D2, [turn("Caroline", "D2:1", "ENT: Caroline/person, Denver/city REL: Caroline|lives_in|Denver")]),
        ]
    )  # fmt: skip
    client = RecurrenceClient()
    mem0g = system(tmp_path, client, per_speaker=False)
    await mem0g.ingest(moves)
    _, edges = mem0g.graph_snapshot("conv-t")["shared"]
    assert [(e.destination_name, e.valid) for e in edges] == [("Boston", False), ("Denver", True)]
    assert client.routed(prompts.RECURRENCE_SPEC.name) == []
    await mem0g.aclose()


@sync
async def test_a_failed_recurrence_check_keeps_the_edge(tmp_path: Path) -> None:
    from mem0bench.llm.types import CallFailure, LLMCallError

    client = RecurrenceClient()
    client.on(
        prompts.RECURRENCE_SPEC.name,
        lambda call: LLMCallError(CallFailure(stage="ingest", kind="malformed", message="x", attempts=1)),
    )
    mem0g = system(tmp_path, client, per_speaker=False)
    report = await mem0g.ingest(race("The race was moved."))
    _, edges = mem0g.graph_snapshot("conv-t")["shared"]
    assert all(e.valid for e in edges) and report.details["failures.graph_resolve"] == 1
    await mem0g.aclose()
