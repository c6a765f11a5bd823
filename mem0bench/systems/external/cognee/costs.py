"""The dry run's estimate of cognee's own calls (cognee 1.6.5's cognify, as the `cognee` adapter runs it; no
import of cognee needed).

A conversation's documents are its overview and its sessions' windows of `window_turns` turns (each one
chunk). Per document cognify makes two LLM calls: the knowledge-graph extraction
(`generate_graph_prompt.txt`, 1,038 tokens, and its response schema) and the chunk's summary
(`summarize_content.txt`, 213 tokens, and its schema): 1,736 tokens of fixed prompt per document in all,
measured on conv-26 through the stand-in (171,240 prompt tokens over 152 calls for 76 documents of 19,654
tokens), plus the document itself in each of the two. The embeddings (the chunk, its summary, the entities,
their types, the relations) were 5.5 calls and 377 tokens a document there. improve() made no LLM call.
Per question: one query embedding; with `answer_by=cognee` also cognee's completion (its answer prompt,
the question and the context).
"""

from __future__ import annotations

from mem0bench.data.model import Dataset
from mem0bench.memory.costs import MEMORY_TOKENS, REPLY_TOKENS, CostPlan, MethodConfig, PlanLine
from mem0bench.tokens import count_tokens

__all__ = ["FIXED_PROMPT_PER_DOCUMENT", "cognee_cost_plan", "window_sizes"]

FIXED_PROMPT_PER_DOCUMENT = 1736  # both calls' instructions and response schemas (cl100k), measured
HEADER_TOKENS = (
    30  # "Session n of the conversation between A and B, which took place at <date> (part i of n)."
)
OVERVIEW_TOKENS_PER_SESSION = 20
EMBED_CALLS_PER_DOCUMENT = 5.5
EMBED_TOKENS_PER_DOCUMENT = 377
GRAPH_REPLY_TOKENS = 500  # a real model's nodes and edges for a window of 6 turns (an assumption)
SUMMARY_REPLY_TOKENS = 100
ANSWER_PROMPT_TOKENS = 900  # cognee's LOCOMO answer prompt (qa_prompts/unified.txt) with its user template


def window_sizes(turns: int, size: int) -> list[int]:
    """The windows' sizes of a session of `turns` turns (the eval's `build_session_windows`: a tail
    shorter than max(2, size // 3) folded into the window before it)."""
    sizes = [min(size, turns - start) for start in range(0, turns, size)]
    if len(sizes) > 1 and sizes[-1] < max(2, size // 3):
        tail = sizes.pop()
        sizes[-1] += tail
    return sizes


def cognee_cost_plan(method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
    size = int(method.get("window_turns", 6))
    documents, document_tokens = 0, 0.0
    for conversation in dataset.conversations:
        sessions = [s for s in conversation.sessions if s.turns]
        if method.get("overview", True):
            documents += 1
            document_tokens += 40 + OVERVIEW_TOKENS_PER_SESSION * len(sessions)
        for session in sessions:
            windows = window_sizes(len(session.turns), size)
            documents += len(windows)
            document_tokens += HEADER_TOKENS * len(windows) + sum(
                count_tokens(f"{t.speaker}: {t.text}") for t in session.turns
            )
    per_document = document_tokens / max(documents, 1)
    context = (
        int(method.get("chunks_top_k", 20)) * per_document
        + (int(method.get("entities_top_k", 20)) + int(method.get("facts_top_k", 20))) * MEMORY_TOKENS
    )
    lines = [
        PlanLine("ingest", "graph extraction + summary", 2 * documents,
                 documents * FIXED_PROMPT_PER_DOCUMENT + 2 * document_tokens,
                 documents * (GRAPH_REPLY_TOKENS + SUMMARY_REPLY_TOKENS)),
        PlanLine("ingest", "embeddings (chunks, summaries, entities, relations)",
                 documents * EMBED_CALLS_PER_DOCUMENT, documents * EMBED_TOKENS_PER_DOCUMENT, 0),
        PlanLine("search", "query embedding", n_questions, n_questions * 15, 0),
    ]  # fmt: skip
    if method.get("answer_by", "context") == "cognee":
        lines.append(
            PlanLine("search", "cognee's completion", n_questions,
                     n_questions * (ANSWER_PROMPT_TOKENS + context), n_questions * REPLY_TOKENS["answer"])
        )  # fmt: skip
        context = 40.0  # our answer prompt then sees cognee's answer only
    return CostPlan(
        context_tokens=context, lines=lines, embeds_queries=False,
        assumptions=(f"{GRAPH_REPLY_TOKENS} tokens of graph and {SUMMARY_REPLY_TOKENS} of summary per "
                     f"window of {size} turns (reasoning tokens not included)",),
    )  # fmt: skip
