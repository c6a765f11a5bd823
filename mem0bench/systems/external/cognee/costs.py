"""The dry run's estimate of cognee's own calls (placeholder, calibrated below)."""

from __future__ import annotations

from mem0bench.data.model import Dataset
from mem0bench.memory.costs import CostPlan, MethodConfig

__all__ = ["cognee_cost_plan"]


def cognee_cost_plan(method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
    return CostPlan(context_tokens=0.0, lines=[], embeds_queries=False)
