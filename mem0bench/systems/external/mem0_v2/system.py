"""mem0's current release (mem0ai 2.x) as a MemorySystem (`mem0_v2`), run in its own environment.

mem0ai 2.x and the 1.0.11 of `mem0_oss` cannot share one environment, so mem0 2.x runs in a venv of its own
(`python -m mem0bench setup-system mem0_v2`, see `env`) as a service (`service.py`) that the shared
`OwnEnvSystem` starts and reaches over the HTTP system protocol (its token, bridge and scope: see
`own_env.adapter`). The answer context is rendered as `mem0_oss`'s: one list of dated memories per speaker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mem0bench.data.model import Conversation, Dataset
from mem0bench.memory.base import SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.systems.external.http_system.wire import SearchItem
from mem0bench.systems.external.mem0_oss.library import HARNESS_INSTRUCTIONS
from mem0bench.systems.external.mem0_oss.render import memory_dia_ids, memory_score, render_sections
from mem0bench.systems.external.mem0_v2.costs import mem0_v2_cost_plan
from mem0bench.systems.external.mem0_v2.env import ENV
from mem0bench.systems.external.own_env.adapter import OwnEnvSystem, Rendered

__all__ = ["Mem0V2"]


class Mem0V2(OwnEnvSystem):
    """mem0ai 2.x's Memory, one per conversation and speaker, in the service this adapter starts."""

    env = ENV
    service_script = Path(__file__).with_name("service.py")

    def __init__(
        self,
        *,
        name: str = "mem0_v2",
        batch_size: int = 2,
        top_k: int = 30,
        harness_instructions: bool = True,
        threshold: float = 0.1,
        temperature: float = 0.0,
        extraction_date: str = "session",
        timeout_s: float = 900.0,
        max_retries: int = 2,
        max_concurrency: int = 8,
        workers: int = 8,
        context: SystemContext,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"{name}: batch_size must be an integer >= 1, got {batch_size!r}")
        if extraction_date not in ("session", "today"):
            raise ValueError(f"{name}: extraction_date must be 'session' or 'today', got {extraction_date!r}")
        super().__init__(
            name=name, top_k=top_k, timeout_s=timeout_s, max_retries=max_retries,
            max_concurrency=max_concurrency, workers=workers, context=context,
        )  # fmt: skip
        self.batch_size, self.extraction_date = batch_size, extraction_date
        self.threshold, self.temperature = float(threshold), float(temperature)
        self.harness_instructions = bool(harness_instructions)

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return mem0_v2_cost_plan(method, dataset, n_questions)

    def memory_settings(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size, "instructions": self.harness_instructions,
            "extraction_date": self.extraction_date, "temperature": self.temperature,
            "versions": self.versions,
        }  # fmt: skip

    def service_settings(self, dims: int) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "batch_size": self.batch_size,
            "instructions": HARNESS_INSTRUCTIONS if self.harness_instructions else "",
            "extraction_date": self.extraction_date,
            "threshold": self.threshold,
        }

    def ingest_units(self, conversation: Conversation) -> int:
        return sum(len(s.turns) // 2 or 1 for s in conversation.sessions if s.turns)

    def render(self, conversation: Conversation, items: list[tuple[dict[str, Any], SearchItem]]) -> Rendered:
        """Each speaker's top_k memories, rendered as `mem0_oss` renders them."""
        speakers = list(conversation.speakers)
        memories: list[list[dict[str, Any]]] = [[] for _ in speakers]
        for item, parsed in items:
            who = item.get("speaker") if isinstance(item, dict) else None
            if who in speakers:
                memories[speakers.index(who)].append(
                    {"memory": parsed.text, "score": parsed.score,
                     "metadata": {"timestamp": parsed.date, "dia_ids": list(parsed.turn_ids)}}
                )  # fmt: skip
        for found in memories:  # mem0's order; equal scores by text (a stable context, a stable cache)
            found.sort(key=lambda m: (-round(memory_score(m), 6), str(m["memory"])))
        dia_ids = [d for found in memories for m in found for d in memory_dia_ids(m)]
        return Rendered(render_sections(speakers, memories), dia_ids, sum(len(m) for m in memories))
