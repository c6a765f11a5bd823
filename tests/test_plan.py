"""The dry-run plan: each system class states its own calls; the pipeline adds what every method shares."""

from __future__ import annotations

from pathlib import Path

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
    assert {"entities + relations", "conflict resolution", "query entities"} <= set(extra)
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


class PlannedSystem:
    """A system class the pipeline has never heard of: its plan must still be the one used."""

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return CostPlan(
            context_tokens=float(method["size"]), lines=[PlanLine("ingest", "mine", n_questions, 0, 0)]
        )


def test_the_plan_comes_from_the_configured_class(one_conversation: Dataset) -> None:
    method = {"_target_": f"{__name__}.PlannedSystem", "name": "anything", "size": 5}
    system = SystemSpec(name="anything", target=method["_target_"], settings=method, graph={})
    plan = system_cost_plan(system, one_conversation, n_questions=3)
    assert plan == CostPlan(context_tokens=5.0, lines=[PlanLine("ingest", "mine", 3, 0, 0)])
