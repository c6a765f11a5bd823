"""The dry run's estimate of A-Mem's own calls, from the library's prompts (measured once in cl100k tokens:
analysis ~220 + schema, evolution ~430 + schema) and round figures for what the replies decide."""

from __future__ import annotations

from mem0bench.data.model import Dataset
from mem0bench.memory.costs import CostPlan, MethodConfig, PlanLine
from mem0bench.tokens import count_tokens

ANALYSIS_PROMPT = 300  # the analysis instructions and JSON schema
EVOLUTION_PROMPT = 600  # the evolution instructions and JSON schema
NOTE_TOKENS = 80  # one note as the library shows it: content, context, keywords, tags, time
NEIGHBOURS = 5  # the library evolves a new note against its 5 nearest notes
UPDATED_NEIGHBOURS = 2.0  # assumed: neighbours re-embedded per turn after an update_neighbor decision
LINKED_SHARE = 0.5  # assumed: linked notes shown per retrieved note
KEYWORDS_PROMPT = 90


def amem_cost_plan(method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
    """Per turn: one analysis call, one evolution call (all but each conversation's first note), and
    ~2 + UPDATED_NEIGHBOURS embedding calls (the note, its neighbour search, re-embedded neighbours);
    per question: one keywords call (`query=keywords`) and one query embedding."""
    turns = sum(len(c.turns) for c in dataset.conversations)
    evolutions = max(turns - len(dataset.conversations), 0)
    turn_tokens = sum(count_tokens(t.text) + 8 for c in dataset.conversations for t in c.turns)
    avg_turn = turn_tokens / max(turns, 1)
    k = int(method.get("k", 10))
    lines = [
        PlanLine("ingest", "note analysis", turns, turns * (ANALYSIS_PROMPT + avg_turn), turns * 80),
        PlanLine("ingest", "memory evolution", evolutions,
                 evolutions * (EVOLUTION_PROMPT + avg_turn + NEIGHBOURS * NOTE_TOKENS), evolutions * 150),
        PlanLine("ingest", f"note embeddings (~{2 + UPDATED_NEIGHBOURS:g}/turn)",
                 turns * (2 + UPDATED_NEIGHBOURS), turns * (2 + UPDATED_NEIGHBOURS) * NOTE_TOKENS, 0),
    ]  # fmt: skip
    if str(method.get("query", "keywords")) == "keywords":
        lines.append(PlanLine("search", "query keywords", n_questions,
                              n_questions * KEYWORDS_PROMPT, n_questions * 15))  # fmt: skip
    return CostPlan(context_tokens=k * (1 + LINKED_SHARE) * NOTE_TOKENS, lines=lines)
