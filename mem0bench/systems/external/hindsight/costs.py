"""The dry run's estimate of Hindsight's own calls (hindsight-api-slim 1.1.0; no import needed).

Per session (one retain): Hindsight cuts the session's JSON into chunks of at most 3,000 characters (at
turn boundaries, so a little more often than every 3,000) and extracts facts from each chunk with one
structured-output call (its instructions and schema, `EXTRACT_PROMPT_TOKENS`, plus the chunk); then it
embeds the facts and the entities it resolves in batches. Per question: one query embedding; recall makes
no LLM call (query analysis is dateparser, reranking `rrf`). Measured on conv-26 through the stand-in
(19 sessions, 419 turns): 46 extraction calls over 39 3,000-character spans, 173,851 prompt tokens
(24,522 of them the sessions' JSON), 30 embedding calls.
"""

from __future__ import annotations

import json

from mem0bench.data.model import Dataset
from mem0bench.memory.costs import CostPlan, MethodConfig, PlanLine
from mem0bench.tokens import count_tokens

__all__ = ["hindsight_cost_plan"]

CHUNK_CHARS = 3000  # Hindsight's DEFAULT_RETAIN_CHUNK_SIZE
CALLS_PER_SPAN = 46 / 39  # chunks end at turn boundaries: more chunks than 3,000-character spans
EXTRACT_PROMPT_TOKENS = 3246  # per extraction call besides the chunk itself (measured, conv-26)
EMBED_CALLS_PER_SESSION = 30 / 19  # measured, conv-26
FACTS_PER_CALL = 6  # a real model's facts per chunk (a guess: the stand-in's replies are not a model's)
FACT_TOKENS = 60  # one extracted fact with its what/when/who/why fields
FACT_JSON_TOKENS = 110  # a recalled fact's other JSON fields (conv-26's answer prompts: ~29k tokens each
# with the stand-in's short facts)


def hindsight_cost_plan(method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
    sessions = 0
    spans = 0
    content = 0.0
    for conversation in dataset.conversations:
        for session in conversation.sessions:
            if not session.turns:
                continue
            sessions += 1
            turns = [{"speaker": t.speaker, "dia_id": t.dia_id, "text": t.text} for t in session.turns]
            text = json.dumps(turns)
            spans += -(-len(text) // CHUNK_CHARS)
            content += count_tokens(text)
    extract = spans * CALLS_PER_SPAN
    facts = extract * FACTS_PER_CALL
    lines = [
        PlanLine("ingest", "fact extraction", extract, extract * EXTRACT_PROMPT_TOKENS + content,
                 facts * FACT_TOKENS),
        PlanLine("ingest", "fact and entity embeddings", sessions * EMBED_CALLS_PER_SESSION,
                 facts * FACT_TOKENS / 2, 0),
        PlanLine("search", "query embeddings", n_questions, n_questions * 15, 0),
    ]  # fmt: skip
    # The context is the recall result as JSON: each fact's text counts against max_tokens, its other
    # fields (ids, dates, scores, chunk id) do not.
    context = (
        int(method.get("max_tokens", 4096)) / FACT_TOKENS * (FACT_TOKENS + FACT_JSON_TOKENS)
        + (int(method.get("max_chunk_tokens", 8192)) if method.get("include_chunks", True) else 0)
        + (int(method.get("max_entity_tokens", 2048)) if method.get("include_entities", True) else 0)
    )
    return CostPlan(
        context_tokens=context, lines=lines, embeds_queries=False,
        assumptions=(f"{FACTS_PER_CALL} facts per extraction call, one per chunk of {CHUNK_CHARS} chars",),
    )  # fmt: skip
