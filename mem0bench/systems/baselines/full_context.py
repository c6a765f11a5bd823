"""Full-context baseline: the whole conversation, with session dates, is the answer context."""

from __future__ import annotations

from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemBase, SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.tokens import count_tokens

__all__ = ["FullContext"]


class FullContext(SystemBase):
    """Hands the answer stage every turn as '(date) speaker: text' lines; no memory, no search."""

    def __init__(self, *, name: str = "full_context", context: SystemContext) -> None:
        super().__init__()
        self.name = name
        self.context = context
        self._cache: dict[str, tuple[str, int, tuple[str, ...]]] = {}

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """No calls of its own; the context is a whole conversation (the dataset's mean)."""
        total = sum(count_tokens("\n".join(c.render_lines())) for c in dataset.conversations)
        mean = total / max(len(dataset.conversations), 1)
        return CostPlan(context_tokens=mean, embeds_queries=False, repeated_context=True)

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Nothing to build: no LLM call, no memory store."""
        return IngestReport(sample_id=conversation.sample_id, memory_tokens=None)

    def _rendered(self, conversation: Conversation) -> tuple[str, int, tuple[str, ...]]:
        cached = self._cache.get(conversation.sample_id)
        if cached is None:
            text = "\n".join(conversation.render_lines())
            dia_ids = tuple(t.dia_id for t in conversation.turns)
            cached = (text, count_tokens(text), dia_ids)
            self._cache[conversation.sample_id] = cached
        return cached

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """The whole rendered conversation (tokens counted once per sample)."""
        text, tokens, dia_ids = self._rendered(conversation)
        return RetrievedContext(
            kind="full_context",
            text=text,
            tokens=tokens,
            source_dia_ids=dia_ids,
            search_latency_s=None,
            items=len(dia_ids),
        )
