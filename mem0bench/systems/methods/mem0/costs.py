"""The dry run's estimate of Mem0's (and Mem0^g's) own calls: extraction, updates, summaries, graph work."""

from __future__ import annotations

from mem0bench.data.model import Dataset
from mem0bench.memory.costs import (
    FACTS_PER_PAIR,
    INSTRUCTION_TOKENS,
    MEMORY_TOKENS,
    REPLY_TOKENS,
    TRIPLETS_PER_PAIR,
    CostPlan,
    MethodConfig,
    PlanLine,
)
from mem0bench.memory.stream import message_pairs
from mem0bench.tokens import count_tokens


def mem0_cost_plan(method: MethodConfig, dataset: Dataset, n_questions: int, *, graph: bool) -> CostPlan:
    """Mem0's ingest calls (with `graph`, Mem0^g's entity, relation and conflict calls too), and the size
    of the memories (and relations) shown for one question."""
    streams = 2 if method.get("per_speaker", True) else 1
    pairs = sum(len(message_pairs(c)) for c in dataset.conversations) * streams
    turn_tokens = sum(count_tokens(t.text) + 8 for c in dataset.conversations for t in c.turns) * streams
    avg_turn = turn_tokens / max(pairs * 2, 1)
    m, s, every = int(method["m"]), int(method["s"]), int(method["summary_every"])
    facts = pairs * FACTS_PER_PAIR
    refreshes = pairs / max(every, 1)
    lines = [
        PlanLine("ingest", "extraction", pairs, pairs * (INSTRUCTION_TOKENS + 300 + (m + 2) * avg_turn),
                 pairs * REPLY_TOKENS["extract"]),
        PlanLine("ingest", "summary refreshes", refreshes,
                 refreshes * (INSTRUCTION_TOKENS + 300 + 2 * every * avg_turn), refreshes * REPLY_TOKENS["summary"]),
        PlanLine("ingest", "embeddings (facts)", pairs, facts * 20, 0),
    ]  # fmt: skip
    if str(method.get("update", "per_fact")) == "batched":  # one call per pair over all its facts
        lines.insert(1, PlanLine("ingest", "update decisions", pairs, pairs * INSTRUCTION_TOKENS
                                 + facts * s * MEMORY_TOKENS, facts * REPLY_TOKENS["update"]))  # fmt: skip
    else:
        lines.insert(1, PlanLine("ingest", "update decisions", facts, facts * (INSTRUCTION_TOKENS + s * MEMORY_TOKENS),
                                 facts * REPLY_TOKENS["update"]))  # fmt: skip
    context = 2 * int(method["top_k"]) * MEMORY_TOKENS
    if graph:
        triplets = pairs * TRIPLETS_PER_PAIR
        lines += [
            PlanLine("ingest", "entities + relations", 2 * pairs,
                     2 * pairs * (INSTRUCTION_TOKENS + 2 * avg_turn), 2 * pairs * REPLY_TOKENS["graph"]),
            PlanLine("ingest", "conflict resolution", triplets,
                     triplets * (INSTRUCTION_TOKENS + 10 * MEMORY_TOKENS), triplets * 20),
            PlanLine("ingest", "embeddings (graph)", 2 * pairs, triplets * 30, 0),
            PlanLine("search", "query entities", n_questions, n_questions * (INSTRUCTION_TOKENS + 30),
                     n_questions * 20),
        ]  # fmt: skip
        context += 2 * int(method.get("relations_top_k", 20)) * MEMORY_TOKENS
    return CostPlan(context_tokens=context, lines=lines)
