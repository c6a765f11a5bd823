"""What a system's ingestion and search would cost, for the dry run (`run.dry_run=true`).

Each system class states its own part (`MemorySystem.cost_plan`); the pipeline adds the answer and judge
calls every method shares. What is counted exactly (message pairs, questions, conversation tokens) is
counted; what the replies decide (facts and triplets per pair, reply lengths) uses the round figures
below, which the printout states. Tune them with a real run's metrics.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FACTS_PER_PAIR = 1.0
TRIPLETS_PER_PAIR = 1.0
RECURRENCE_CHECKS_PER_RESOLVE = 0.1
"""Mem0^g's recurrence check follows a conflict resolution only when the resolver names an edge giving the
same thing another time (a second date for one event). A guess, not a measurement (no real model has run
here): a real run's ingest.jsonl gives the rate as `graph.recurrence_checks / graph.resolver_calls`."""
INSTRUCTION_TOKENS = 450  # a prompt's fixed instructions
ANSWER_FRAME_TOKENS = 2_048
"""What a system that cuts its context to the answer model's window (full_context's truncate=oldest) leaves
of the window for the answer prompt around the context: instructions, a suite's intro, the question (the
default prompt's are under 600 tokens; a longer prompt file is still caught by the answer stage's check)."""
MEMORY_TOKENS = 25  # one rendered memory or relation line
REPLY_TOKENS = {"extract": 60, "update": 40, "summary": 250, "graph": 60, "answer": 10, "judge": 40}

MethodConfig = Mapping[str, Any]
"""The `method` config group (the system's hyperparameters), as given to the system's constructor."""


@dataclass(frozen=True)
class PlanLine:
    """One kind of call: how many, and their prompt and completion tokens in total."""

    stage: str
    what: str
    calls: float
    prompt: float
    completion: float
    model: str | None = None
    """Priced as this model when set (a judge.panel member)."""
    cached_prompt: float = 0.0
    """Of `prompt`, the tokens expected from the server's prompt cache (priced at the cached rate)."""


@dataclass(frozen=True)
class CostPlan:
    """A system's own calls for the whole dataset, and the tokens of one answer context."""

    context_tokens: float
    lines: list[PlanLine] = field(default_factory=list)
    embeds_queries: bool = True
    """Whether each question is embedded for the search."""
    repeated_context: bool = False
    """Every question of a conversation gets the same context (the whole conversation): the answer
    prompts of a conversation share their prefix, which a server's prompt cache serves after the first."""
    conversation_tokens: Mapping[str, float] = field(default_factory=dict)
    """For a system whose context is the whole conversation: each conversation's tokens by sample id (the
    dry run checks them against the answer model's context window)."""
    truncates_oldest: bool = False
    """The system cuts a conversation past the window to its newest turns (full_context's truncate=oldest)
    rather than letting its questions fail."""
    assumptions: tuple[str, ...] = ()
    """What the system's lines assume about the replies (e.g. "1.0 fact per message pair"): the dry run's
    footer states these, and only these, for the system planned."""
