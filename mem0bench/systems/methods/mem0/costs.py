"""The dry run's estimate of Mem0's (and Mem0^g's) own calls: extraction, updates, summaries, graph work."""

from __future__ import annotations

from dataclasses import dataclass

from mem0bench.data.model import Dataset
from mem0bench.memory.costs import (
    FACTS_PER_PAIR,
    INSTRUCTION_TOKENS,
    MEMORY_TOKENS,
    RECURRENCE_CHECKS_PER_RESOLVE,
    REPLY_TOKENS,
    TRIPLETS_PER_PAIR,
    CostPlan,
    MethodConfig,
    PlanLine,
)
from mem0bench.memory.stream import message_pairs
from mem0bench.tokens import count_tokens


@dataclass(frozen=True)
class GraphReplies:
    """What Mem0^g's replies decide about its own later calls, per message pair of a stream: the dry run's
    assumptions. Each call of `mem0g.ingestion` follows from one of them (a test runs Mem0^g on the
    stand-in and checks that the plan, given the shares that run had, counts every call it made)."""

    entity_pairs: float = 1.0
    """Share of pairs whose entity reply names something; only those get the relations call."""
    triplet_pairs: float = 1.0
    """Share of pairs whose relations reply holds a triplet; only those get the (one) embedding call."""
    triplets_per_pair: float = TRIPLETS_PER_PAIR
    resolves_per_triplet: float = 1.0
    """Triplets that meet valid edges of their nodes get the conflict-resolution call (the first ones of a
    stream, duplicates and self-loops do not: 1.0 is an upper bound)."""
    recurrence_per_resolve: float = RECURRENCE_CHECKS_PER_RESOLVE


def mem0_cost_plan(
    method: MethodConfig,
    dataset: Dataset,
    n_questions: int,
    *,
    graph: bool,
    replies: GraphReplies = GraphReplies(),
) -> CostPlan:
    """Mem0's ingest calls (with `graph`, every call Mem0^g adds: entities, relations, the pair's graph
    embedding, conflict resolution, recurrence checks, and each question's entities), and the size of the
    memories (and relations) shown for one question. `replies`: what Mem0^g's replies are assumed to be."""
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
    assumptions = [f"{FACTS_PER_PAIR} fact per message pair"]
    if graph:
        r = replies
        assumptions += [
            f"{r.triplets_per_pair} triplet per message pair",
            f"a Mem0^g recurrence check after {r.recurrence_per_resolve:.0%} of conflict resolutions",
        ]
        relation_calls = pairs * r.entity_pairs
        triplets = pairs * r.triplets_per_pair
        resolves = triplets * r.resolves_per_triplet
        rechecks = resolves * r.recurrence_per_resolve
        pair_prompt = INSTRUCTION_TOKENS + 2 * avg_turn  # the pair's two messages and the instructions
        lines += [
            PlanLine("ingest", "graph entities", pairs, pairs * pair_prompt, pairs * REPLY_TOKENS["graph"]),
            PlanLine("ingest", "graph relations", relation_calls, relation_calls * (pair_prompt + 30),
                     relation_calls * REPLY_TOKENS["graph"]),
            PlanLine("ingest", "conflict resolution", resolves,
                     resolves * (INSTRUCTION_TOKENS + 10 * MEMORY_TOKENS), resolves * 20),
            # The earlier times the resolver named, shown with the pair's messages.
            PlanLine("ingest", "recurrence checks", rechecks,
                     rechecks * (pair_prompt + 3 * MEMORY_TOKENS), rechecks * 20),
            # One request a pair: its names and triplet texts together.
            PlanLine("ingest", "embeddings (graph)", pairs * r.triplet_pairs, triplets * 30, 0),
            PlanLine("search", "query entities", n_questions, n_questions * (INSTRUCTION_TOKENS + 30),
                     n_questions * 20),
        ]  # fmt: skip
        context += 2 * int(method.get("relations_top_k", 20)) * MEMORY_TOKENS
    return CostPlan(context_tokens=context, lines=lines, assumptions=tuple(assumptions))
