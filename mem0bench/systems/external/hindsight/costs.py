"""The dry run's estimate of Hindsight's own calls (hindsight-api-slim 1.1.0; no import needed).

Per session (one retain): fact extraction over the session's one chunk (Hindsight's structured-output
prompt, `EXTRACT_PROMPT_TOKENS`, plus the session's JSON), then one batch embedding of the facts and one of
the entities it resolves. Per question: one query embedding; recall makes no LLM call (its query analysis
is dateparser, its reranking `rrf`). Constants measured on conv-26 through the stand-in (tests).
"""

from __future__ import annotations

import json

from mem0bench.data.model import Dataset
from mem0bench.memory.costs import CostPlan, MethodConfig, PlanLine
from mem0bench.tokens import count_tokens

__all__ = ["hindsight_cost_plan"]

EXTRACT_PROMPT_TOKENS = 4000  # Hindsight's fact-extraction instructions and schema (measured: see tests)
EXTRACT_CALLS_PER_SESSION = 1.0
EMBED_CALLS_PER_SESSION = 2.0
FACTS_PER_SESSION = 12
FACT_TOKENS = 40


def hindsight_cost_plan(method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
    sessions = 0
    content = 0.0
    for conversation in dataset.conversations:
        for session in conversation.sessions:
            if not session.turns:
                continue
            sessions += 1
            turns = [{"speaker": t.speaker, "dia_id": t.dia_id, "text": t.text} for t in session.turns]
            content += count_tokens(json.dumps(turns))
    extract = sessions * EXTRACT_CALLS_PER_SESSION
    lines = [
        PlanLine("ingest", "fact extraction", extract, extract * EXTRACT_PROMPT_TOKENS + content,
                 sessions * FACTS_PER_SESSION * FACT_TOKENS),
        PlanLine("ingest", "fact and entity embeddings", sessions * EMBED_CALLS_PER_SESSION,
                 sessions * FACTS_PER_SESSION * FACT_TOKENS, 0),
        PlanLine("search", "query embeddings", n_questions, n_questions * 15, 0),
    ]  # fmt: skip
    context = int(method.get("max_tokens", 4096)) + (
        int(method.get("max_chunk_tokens", 8192)) if method.get("include_chunks", True) else 0
    ) + (int(method.get("max_entity_tokens", 2048)) if method.get("include_entities", True) else 0)
    return CostPlan(
        context_tokens=context, lines=lines, embeds_queries=False,
        assumptions=(f"{FACTS_PER_SESSION} facts per session, one extraction call per session",),
    )  # fmt: skip
