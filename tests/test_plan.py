"""The dry-run plan: each system class states its own calls; the pipeline adds what every method shares."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mem0bench.data.loader import load_dataset
from mem0bench.data.model import Dataset
from mem0bench.memory.costs import INSTRUCTION_TOKENS, MEMORY_TOKENS, CostPlan, MethodConfig, PlanLine
from mem0bench.memory.stream import message_pairs
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.plan import plan_lines, system_cost_plan
from mem0bench.pipeline.spec import SystemSpec
from mem0bench.systems.baselines.full_context import FullContext
from mem0bench.systems.baselines.rag import RAG
from mem0bench.systems.methods.mem0 import Mem0
from mem0bench.systems.methods.mem0.costs import GraphReplies, mem0_cost_plan
from mem0bench.systems.methods.mem0g import Mem0G

MEM0 = {"m": 10, "s": 10, "top_k": 30, "summary_every": 10, "per_speaker": True}


@pytest.fixture(scope="module")
def one_conversation(locomo_path: Path) -> Dataset:
    return load_dataset(locomo_path, conversations=["conv-26"])


def _by_what(plan: CostPlan) -> dict[str, PlanLine]:
    return {line.what: line for line in plan.lines}


def test_mem0_counts_one_extraction_per_message_pair_and_speaker(one_conversation: Dataset) -> None:
    pairs = len(message_pairs(one_conversation.conversations[0]))
    plan = Mem0.cost_plan(MEM0, one_conversation, n_questions=7)
    assert _by_what(plan)["extraction"].calls == 2 * pairs
    shared = Mem0.cost_plan({**MEM0, "per_speaker": False}, one_conversation, n_questions=7)
    assert _by_what(shared)["extraction"].calls == pairs
    assert plan.context_tokens == 2 * 30 * MEMORY_TOKENS and plan.embeds_queries


def test_mem0g_adds_its_graph_calls_to_mem0s(one_conversation: Dataset) -> None:
    mem0 = Mem0.cost_plan(MEM0, one_conversation, n_questions=7)
    mem0g = Mem0G.cost_plan({**MEM0, "relations_top_k": 20}, one_conversation, n_questions=7)
    assert mem0g.lines[: len(mem0.lines)] == mem0.lines
    extra = _by_what(mem0g)
    assert {"graph entities", "graph relations", "conflict resolution", "recurrence checks"} <= set(extra)
    assert {"embeddings (graph)", "query entities"} <= set(extra)
    assert extra["query entities"].calls == 7
    assert mem0g.context_tokens == mem0.context_tokens + 2 * 20 * MEMORY_TOKENS


def test_baselines_state_their_context(one_conversation: Dataset) -> None:
    rag = RAG.cost_plan({"chunk_size": 512, "k": 2}, one_conversation, n_questions=7)
    assert rag.context_tokens == 1024 and [line.what for line in rag.lines] == ["chunk embeddings"]
    full = FullContext.cost_plan({}, one_conversation, n_questions=7)
    assert full.lines == [] and not full.embeds_queries
    assert 16_000 < full.context_tokens < 31_000  # conv-26 rendered (BRIEF: 16,057..30,653 a conversation)


def test_shared_lines_follow_the_system_plan() -> None:
    judge = JudgeSettings(model="gpt-4o-mini", runs=3)
    with_search = plan_lines(CostPlan(context_tokens=100.0), n_questions=4, judge=judge)
    assert [line.what for line in with_search] == ["query embeddings", "answers", "judge x3"]
    answers = with_search[1]
    assert answers.calls == 4 and answers.prompt == 4 * (INSTRUCTION_TOKENS + 100.0)
    assert with_search[2].calls == 12
    own = PlanLine("ingest", "own", 1, 2, 3)
    no_search = plan_lines(CostPlan(context_tokens=0.0, lines=[own], embeds_queries=False), 4, judge)
    assert [line.what for line in no_search] == ["own", "answers", "judge x3"]


def test_the_isolated_latency_pass_prices_every_search_call_again_for_the_timed_questions() -> None:
    judge = JudgeSettings(model="gpt-4o-mini", runs=1)
    agent = PlanLine("search", "agent turns", 8, 800, 80)  # e.g. LangMem's agent retrieval: 2 a question
    plan = CostPlan(context_tokens=100.0, lines=[PlanLine("ingest", "own", 1, 2, 3), agent])
    inline = plan_lines(plan, 4, judge)
    assert not [line for line in inline if line.stage == "latency"]
    timed = [line for line in plan_lines(plan, 4, judge, timed_questions=4) if line.stage == "latency"]
    assert [(line.what, line.calls, line.prompt) for line in timed] == [
        ("timed agent turns", 8, 800), ("timed query embeddings", 4, 60)
    ]  # fmt: skip
    half = [line for line in plan_lines(plan, 4, judge, timed_questions=2) if line.stage == "latency"]
    assert [line.calls for line in half] == [4, 2]


class PlannedSystem:
    """A system class the pipeline has never heard of: its plan must still be the one used."""

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return CostPlan(
            context_tokens=float(method["size"]), lines=[PlanLine("ingest", "mine", n_questions, 0, 0)]
        )


def test_each_dry_run_states_only_its_own_systems_assumptions(locomo_mini: Path) -> None:
    """The total line's footnote: Mem0's facts for Mem0, Mem0^g's triplets and recurrence checks for Mem0^g
    only, and nothing of either for a baseline."""
    from mem0bench.pipeline.plan import assumptions_note
    from mem0bench.systems.external.mem0_oss.costs import mem0_oss_cost_plan

    dataset = load_dataset(locomo_mini)
    rag = assumptions_note(RAG.cost_plan({"chunk_size": 512, "k": 2}, dataset, n_questions=3))
    full = assumptions_note(FullContext.cost_plan({}, dataset, n_questions=3))
    assert rag == full == "(cached calls cost nothing)"
    mem0 = assumptions_note(Mem0.cost_plan(MEM0, dataset, n_questions=3))
    assert mem0 == "(assumes 1.0 fact per message pair; cached calls cost nothing)"
    mem0g = assumptions_note(Mem0G.cost_plan({**MEM0, "relations_top_k": 20}, dataset, n_questions=3))
    assert "1.0 fact per message pair" in mem0g and "1.0 triplet per message pair" in mem0g
    assert "Mem0^g recurrence check after 10% of conflict resolutions" in mem0g
    oss = assumptions_note(mem0_oss_cost_plan({"top_k": 30}, dataset, n_questions=3))
    assert "fact per add of 2 messages" in oss and "Mem0^g" not in oss and "relation" not in oss


def test_the_plan_comes_from_the_configured_class(one_conversation: Dataset) -> None:
    method = {"_target_": f"{__name__}.PlannedSystem", "name": "anything", "size": 5}
    system = SystemSpec(name="anything", target=method["_target_"], settings=method, graph={})
    plan = system_cost_plan(system, one_conversation, n_questions=3)
    assert plan == CostPlan(context_tokens=5.0, lines=[PlanLine("ingest", "mine", 3, 0, 0)])


# ---- Mem0^g's calls, counted on a real run --------------------------------------------------------------

GRAPH_TOOLS = ("record_entities", "record_relations", "mark_obsolete", "mark_contradicted")


class GraphReplier:
    """A stand-in handler for Mem0^g's four graph ingestion calls (every other request gets the stand-in's
    default reply, the same for Mem0 and Mem0^g): replies of a known shape, deterministic per request,
    and a tally of what was asked and what was answered. Some pairs name no entity, some no relation; the
    relations give one person different dates for the same relation, so the resolver (told to name the
    first relation it is shown) makes recurrence checks happen."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()
        self.entity_pairs = self.triplet_pairs = self.triplets = 0
        self.lock = threading.Lock()

    def __call__(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any] | None:
        tool = ((body.get("tool_choice") or {}).get("function") or {}).get("name")
        if endpoint != "chat" or tool not in GRAPH_TOOLS:
            return None
        draw = int(hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest(), 16)
        with self.lock:
            self.asked[tool] += 1
            if tool == "record_entities":
                if draw % 4 == 0:
                    return {"entities": []}
                self.entity_pairs += 1
                return {"entities": [{"name": "Ann", "type": "person"}, {"name": "May", "type": "date"}]}
            if tool == "record_relations":
                day, more = draw % 28 + 1, draw % 3
                if more == 0:
                    return {"relations": []}
                triplets = [{"source": "Ann", "relation": "visited_on", "destination": f"{day} May 2023"}]
                if more == 2:
                    triplets.append({"source": "Ann", "relation": "likes", "destination": f"pottery {day}"})
                self.triplet_pairs += 1
                self.triplets += len(triplets)
                return {"relations": triplets}
            if tool == "mark_obsolete":
                return {"obsolete": [0]}
            return {"contradicted": []}


async def _calls(system_class: type[Mem0], server: Any, tmp_path: Path, dataset: Dataset) -> int:
    """Ingest and search calls (the ledger's count, cached or not) of `system_class` over `dataset`."""
    from devtools.e2e import TEST_KEY
    from mem0bench.llm.cache import ResponseCache
    from mem0bench.llm.client import LLMClient
    from mem0bench.llm.embedders import OpenAIEmbeddingBackend
    from mem0bench.llm.settings import LLMSettings
    from mem0bench.memory.base import SystemContext

    settings = LLMSettings(base_url=server.base_url, api_key=TEST_KEY, timeout_s=10.0, max_retries=1)
    cache = ResponseCache(tmp_path / "cache.sqlite")  # each system its own: the calls are counted afresh
    client = LLMClient(settings, OpenAIEmbeddingBackend("text-embedding-3-small"), cache)
    context = SystemContext(client=client, state_dir=tmp_path / "state", graph={"backend": "inprocess"})
    system = system_class(context=context, **{k: v for k, v in MEM0.items() if k != "per_speaker"})
    try:
        for conversation in dataset.conversations:
            await system.ingest(conversation)
            for question in conversation.questions:
                await system.retrieve(conversation, question)
        assert not system.failures, system.failures[:3]
        stages = client.ledger.stages
        return sum(stages[s].calls for s in ("ingest", "search") if s in stages)
    finally:
        await system.aclose()
        await client.aclose()
        cache.close()


def _own_calls(plan: CostPlan) -> float:
    return sum(line.calls for line in plan.lines)


@pytest.mark.slow
def test_mem0g_plan_counts_every_call_mem0g_makes_beyond_mem0(tmp_path: Path, locomo_mini: Path) -> None:
    """Mem0 and Mem0^g ingest the mini conversations and answer their questions' searches on the stand-in.
    Given the shares the replies had (entities named, triplets, resolutions, recurrence checks: counted at
    the stand-in, not by Mem0^g), the plan's extra calls of Mem0^g over Mem0 equal the measured extra calls
    exactly (tolerance: none, beyond float rounding). A kind of call the plan did not count (the
    recurrence check, before) would show as a difference."""
    import asyncio

    from devtools.e2e import TEST_KEY
    from devtools.standin.server import StandinServer

    dataset = load_dataset(locomo_mini)
    n_questions = sum(len(c.questions) for c in dataset.conversations)
    replier = GraphReplier()
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(replier)
        mem0_calls = asyncio.run(_calls(Mem0, server, tmp_path / "mem0", dataset))
        assert not replier.asked  # Mem0 makes no graph call
        mem0g_calls = asyncio.run(_calls(Mem0G, server, tmp_path / "mem0g", dataset))
    asked = replier.asked
    pairs = asked["record_entities"]
    assert pairs == 2 * sum(len(message_pairs(c)) for c in dataset.conversations)  # every pair, per speaker
    # The run exercised every graph call, the recurrence check included, and the shares are not all 1.
    assert all(asked[tool] > 0 for tool in GRAPH_TOOLS), asked
    assert 0 < replier.entity_pairs < pairs and 0 < replier.triplet_pairs < replier.entity_pairs
    replies = GraphReplies(
        entity_pairs=replier.entity_pairs / pairs,
        triplet_pairs=replier.triplet_pairs / pairs,
        triplets_per_pair=replier.triplets / pairs,
        resolves_per_triplet=asked["mark_obsolete"] / replier.triplets,
        recurrence_per_resolve=asked["mark_contradicted"] / asked["mark_obsolete"],
    )
    mem0_plan = mem0_cost_plan(MEM0, dataset, n_questions, graph=False)
    mem0g_plan = mem0_cost_plan(
        {**MEM0, "relations_top_k": 20}, dataset, n_questions, graph=True, replies=replies
    )
    planned_extra = _own_calls(mem0g_plan) - _own_calls(mem0_plan)
    assert planned_extra == pytest.approx(mem0g_calls - mem0_calls, abs=1e-6)
    # The class's own plan is the same planner at its stated assumptions.
    assert Mem0G.cost_plan({**MEM0, "relations_top_k": 20}, dataset, n_questions) == mem0_cost_plan(
        {**MEM0, "relations_top_k": 20}, dataset, n_questions, graph=True
    )
