"""The dry run's estimate of mem0's own calls, from mem0 1.0.11's pipeline (no library import needed).

Per add (one batch of `batch_size` messages, per speaker): one fact-extraction call (the library's 878-token
prompt, + the harness's instructions, + the messages); if any facts, one update call (the 1,507-token update
prompt, + up to 5 similar memories per fact); one embedding per fact (the similar-memory search) and about
one more per ADD/UPDATE whose text differs from the fact. Graph (Kuzu): per add, entity extraction, relation
extraction and a delete decision (tool calls), two embeddings per relation plus one per entity; per question
and speaker, one entity-extraction call and one embedding per entity. Replies decide facts and relations:
FACTS_PER_PAIR facts per add (each one update decision's worth of similar memories, two embeddings) and
TRIPLETS_PER_PAIR relations per add are the assumptions (the dry run's footer states them).
"""

from __future__ import annotations

from mem0bench.data.model import Dataset
from mem0bench.memory.costs import (
    FACTS_PER_PAIR,
    MEMORY_TOKENS,
    REPLY_TOKENS,
    TRIPLETS_PER_PAIR,
    CostPlan,
    MethodConfig,
    PlanLine,
)
from mem0bench.tokens import count_tokens

EXTRACT_PROMPT_TOKENS = 878
HARNESS_INSTRUCTIONS_TOKENS = 250
UPDATE_PROMPT_TOKENS = 1507
GRAPH_PROMPT_TOKENS = 360  # the relation prompt or the entity system message, with its tool schema
GRAPH_DELETE_PROMPT_TOKENS = 575
SIMILAR_PER_FACT = 5  # mem0 shows the update call the 5 most similar memories of each fact


def add_calls(dataset: Dataset, batch: int) -> tuple[float, float]:
    """(add calls, message tokens they send): each speaker adds every session in batches of `batch` turns."""
    adds = 0.0
    message_tokens = 0.0
    for conversation in dataset.conversations:
        for session in conversation.sessions:
            adds += 2 * -(-len(session.turns) // batch)
            message_tokens += 2 * sum(count_tokens(t.text) + 10 for t in session.turns)
    return adds, message_tokens


def mem0_oss_cost_plan(method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
    """mem0's ingest and search calls for `dataset` (two speakers, each adding every batch)."""
    batch = int(method.get("batch_size", 2))
    graph = bool(method.get("graph", False))
    adds, message_tokens = add_calls(dataset, batch)
    instructions = EXTRACT_PROMPT_TOKENS + (
        HARNESS_INSTRUCTIONS_TOKENS if method.get("harness_instructions", True) else 0
    )
    facts = adds * FACTS_PER_PAIR
    lines = [
        PlanLine("ingest", "fact extraction", adds, adds * instructions + message_tokens,
                 adds * REPLY_TOKENS["extract"]),
        PlanLine("ingest", "update decisions", adds,
                 adds * UPDATE_PROMPT_TOKENS + facts * SIMILAR_PER_FACT * MEMORY_TOKENS,
                 facts * REPLY_TOKENS["update"]),
        PlanLine("ingest", "fact embeddings", 2 * facts, 2 * facts * 20, 0),
        PlanLine("search", "query embeddings x2", 2 * n_questions, 2 * n_questions * 15, 0),
    ]  # fmt: skip
    context = 2 * int(method["top_k"]) * MEMORY_TOKENS
    assumptions = [f"{FACTS_PER_PAIR} fact per add of {batch} messages"]
    if graph:
        assumptions.append(f"{TRIPLETS_PER_PAIR} relation per add")
        triplets = adds * TRIPLETS_PER_PAIR
        per_add = message_tokens / max(adds, 1)
        lines += [
            PlanLine("ingest", "graph entities+relations", 2 * adds,
                     2 * adds * (GRAPH_PROMPT_TOKENS + per_add), 2 * adds * REPLY_TOKENS["graph"]),
            PlanLine("ingest", "graph delete decisions", adds,
                     adds * (GRAPH_DELETE_PROMPT_TOKENS + per_add + 5 * MEMORY_TOKENS), adds * 20),
            PlanLine("ingest", "graph embeddings",
                     4 * triplets, 4 * triplets * 5, 0),
            PlanLine("search", "graph query entities x2", 2 * n_questions,
                     2 * n_questions * (GRAPH_PROMPT_TOKENS + 20), 2 * n_questions * 20),
            PlanLine("search", "graph entity embeddings", 4 * n_questions, 4 * n_questions * 5, 0),
        ]  # fmt: skip
        context += 2 * int(method["top_k"]) * 15
    # The query embedding is mem0's own (one per speaker), counted above.
    return CostPlan(context_tokens=context, lines=lines, embeds_queries=False, assumptions=tuple(assumptions))
