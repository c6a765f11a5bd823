"""The dry run's estimate of mem0 2.x's own calls (mem0ai 2.2.1's additive pipeline; no import needed).

Per add (one batch of `batch_size` messages, per speaker): one embedding of the messages (the search for
existing memories), one extraction call (the 7,671-token ADD-only system prompt, + up to 10 existing
memories, the last 10 messages, the new ones and the harness's instructions) and, if it found facts, one
batch embedding of them. No update call: 2.x only adds. Per question and speaker: one query embedding.
"""

from __future__ import annotations

from mem0bench.data.model import Dataset
from mem0bench.memory.costs import (
    FACTS_PER_PAIR,
    MEMORY_TOKENS,
    REPLY_TOKENS,
    CostPlan,
    MethodConfig,
    PlanLine,
)
from mem0bench.systems.external.mem0_oss.costs import HARNESS_INSTRUCTIONS_TOKENS, add_calls

__all__ = ["mem0_v2_cost_plan"]

EXTRACT_PROMPT_TOKENS = 7671  # mem0 2.2.1's ADDITIVE_EXTRACTION_PROMPT (cl100k_base)
CONTEXT_MEMORIES = 10
LAST_MESSAGES = 10


def mem0_v2_cost_plan(method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
    batch = int(method.get("batch_size", 2))
    adds, message_tokens = add_calls(dataset, batch)
    per_message = message_tokens / max(adds * batch, 1)
    instructions = (
        EXTRACT_PROMPT_TOKENS
        + 60
        + (HARNESS_INSTRUCTIONS_TOKENS if method.get("harness_instructions", True) else 0)
    )
    context = CONTEXT_MEMORIES * MEMORY_TOKENS + LAST_MESSAGES * per_message
    lines = [
        PlanLine("ingest", "message embeddings", adds, message_tokens, 0),
        PlanLine("ingest", "additive extraction", adds, adds * (instructions + context) + message_tokens,
                 adds * FACTS_PER_PAIR * REPLY_TOKENS["extract"]),
        PlanLine("ingest", "fact embeddings", adds, adds * FACTS_PER_PAIR * 20, 0),
        PlanLine("search", "query embeddings x2", 2 * n_questions, 2 * n_questions * 15, 0),
    ]  # fmt: skip
    return CostPlan(
        context_tokens=2 * int(method["top_k"]) * MEMORY_TOKENS, lines=lines, embeds_queries=False,
        assumptions=(f"{FACTS_PER_PAIR} fact per add of {batch} messages",),
    )  # fmt: skip
