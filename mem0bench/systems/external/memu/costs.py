"""The dry run's estimate of memU's own calls (its LOCOMO scripts' steps, as `service.py` runs them).

Per session and speaker: an event extraction and a completeness check, then, while the check finds events
missing (at most `max_iterations` rounds), a refined extraction and another check; each new event line is
embedded once. Per question: up to `max_rounds` rounds of a search (one query embedding), a sufficiency
check and, between rounds, a new query. How often the checks say "not yet" is the model's call: the
figures below are assumptions, stated in the printout; a real run's metrics.json gives them.
"""

from __future__ import annotations

from mem0bench.data.model import Dataset
from mem0bench.memory.costs import CostPlan, MethodConfig, PlanLine
from mem0bench.systems.external.memu import locomo_prompts as prompts
from mem0bench.tokens import count_tokens

__all__ = ["memu_cost_plan"]

EXTRACTIONS_PER_SESSION = 2.0
"""Extraction rounds per speaker and session (the first, and one refinement after a check said "missing")."""
ROUNDS_PER_QUESTION = 2.0
"""Retrieval rounds per question (the first, and one more after a check said "not sufficient")."""
EVENT_TOKENS_PER_TURN = 20
"""Tokens of events a speaker's extraction writes per turn of the session."""
EVENT_TOKENS = 50
"""One event line (a dated paragraph)."""
CHECK_REPLY_TOKENS = 60
QUERY_REPLY_TOKENS = 60


def _template(text: str) -> int:
    return count_tokens(text.replace("{", "").replace("}", ""))


def memu_cost_plan(method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
    iterations = min(EXTRACTIONS_PER_SESSION, float(method.get("max_iterations", 3)))
    rounds = min(ROUNDS_PER_QUESTION, float(method.get("max_rounds", 3)))
    top_k = list(method.get("round_top_k", (25, 15, 15)))
    whole = max(1, round(rounds))
    shown = sum(top_k[:whole])  # events found (before deduplication): the answer context
    checked = sum(sum(top_k[: r + 1]) for r in range(whole))  # events each round's check reads
    sessions = 0.0
    session_tokens = 0.0
    turns = 0.0
    for conversation in dataset.conversations:
        for session in conversation.sessions:
            if session.turns:
                sessions += 2  # each speaker
                session_tokens += 2 * sum(count_tokens(t.text) + 5 for t in session.turns)
                turns += 2 * len(session.turns)
    events = turns * EVENT_TOKENS_PER_TURN
    refinements = iterations - 1.0
    lines = [
        PlanLine("ingest", "event extractions", sessions,
                 sessions * _template(prompts.EVENTS) + session_tokens, events),
        PlanLine("ingest", "event refinements", sessions * refinements,
                 sessions * refinements * _template(prompts.REFINE_EVENTS)
                 + refinements * (session_tokens + events), refinements * events),
        PlanLine("ingest", "completeness checks", sessions * iterations,
                 sessions * iterations * _template(prompts.CHECK_EVENTS) + iterations * (session_tokens + events),
                 sessions * iterations * CHECK_REPLY_TOKENS),
        PlanLine("ingest", "event embeddings", events / EVENT_TOKENS, events, 0),
        PlanLine("search", "query embeddings", n_questions * rounds, n_questions * rounds * 15, 0),
        PlanLine("search", "sufficiency checks", n_questions * rounds,
                 n_questions * (rounds * _template(prompts.CHECK_CONTENT) + checked * EVENT_TOKENS),
                 n_questions * rounds * CHECK_REPLY_TOKENS),
        PlanLine("search", "new queries", n_questions * (rounds - 1),
                 n_questions * (rounds - 1) * (_template(prompts.NEW_QUERY) + 150),
                 n_questions * (rounds - 1) * QUERY_REPLY_TOKENS),
    ]  # fmt: skip
    return CostPlan(
        context_tokens=shown * (EVENT_TOKENS + 5), lines=lines, embeds_queries=False,
        assumptions=(
            f"{EXTRACTIONS_PER_SESSION} extraction rounds per speaker and session",
            f"{ROUNDS_PER_QUESTION} retrieval rounds per question",
            f"{EVENT_TOKENS_PER_TURN} event tokens per speaker and turn, {EVENT_TOKENS} per event line",
        ),
    )  # fmt: skip
