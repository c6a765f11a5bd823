"""Full-context baseline: the whole conversation, with session dates, is the answer context.

A conversation longer than the answer model's context window (BEAM's 1M and 10M scales) cannot be sent
whole. By default (`truncate: none`) its questions fail in the answer stage, each with one line naming the
window and the prompt's tokens (kind `context_window`), and the dry run says how many before anything is
paid. `truncate: oldest` is the labelled alternative: the oldest turns are left out until the rest fits
the window less `ANSWER_FRAME_TOKENS` (the answer prompt's instructions and question) and llm.max_tokens.
"""

from __future__ import annotations

from typing import Literal

from mem0bench.common.errors import ConfigurationError
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.windows import context_window
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemBase, SystemContext
from mem0bench.memory.costs import ANSWER_FRAME_TOKENS, CostPlan, MethodConfig
from mem0bench.tokens import count_tokens

__all__ = ["TRUNCATIONS", "FullContext", "keep_newest"]

Truncation = Literal["none", "oldest"]
TRUNCATIONS: tuple[Truncation, ...] = ("none", "oldest")


def keep_newest(lines: list[str], budget: int) -> tuple[list[str], int]:
    """The newest lines whose tokens (each line's own, and one for its newline) fit `budget`, in order, and
    their token count. Counted line by line: a 1M-token conversation is counted once, not once per cut."""
    kept = 0
    total = 0
    for line in reversed(lines):
        cost = count_tokens(line) + 1
        if total + cost > budget:
            break
        total += cost
        kept += 1
    return lines[len(lines) - kept :], total


class FullContext(SystemBase):
    """Hands the answer stage every turn as '(date) speaker: text' lines; no memory, no search."""

    def __init__(self, *, name: str = "full_context", context: SystemContext, truncate: str = "none") -> None:
        super().__init__()
        if truncate not in TRUNCATIONS:
            raise ConfigurationError(
                f"full_context: method.truncate must be one of {', '.join(TRUNCATIONS)}, not {truncate!r}"
            )
        self.name = name
        self.context = context
        self.truncate: Truncation = truncate  # narrowed by the check above
        self._cache: dict[str, tuple[str, int, tuple[str, ...]]] = {}

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """No calls of its own; the context is a whole conversation (the dataset's mean), each one's tokens
        given for the dry run's window check."""
        each = {c.sample_id: float(count_tokens("\n".join(c.render_lines()))) for c in dataset.conversations}
        mean = sum(each.values()) / max(len(each), 1)
        return CostPlan(
            context_tokens=mean,
            embeds_queries=False,
            repeated_context=True,
            conversation_tokens=each,
            truncates_oldest=method.get("truncate", "none") == "oldest",
        )

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Nothing to build: no LLM call, no memory store."""
        return IngestReport(sample_id=conversation.sample_id, memory_tokens=None)

    def _budget(self) -> int | None:
        """The tokens `truncate: oldest` leaves the conversation (None: no cut, or no window known)."""
        settings = getattr(self.context.client, "settings", None)
        if self.truncate == "none" or settings is None:
            return None
        window = context_window(settings.model, settings.context_window)
        if window is None:
            return None
        return max(window - ANSWER_FRAME_TOKENS - (settings.max_tokens or 0), 0)

    def _rendered(self, conversation: Conversation) -> tuple[str, int, tuple[str, ...]]:
        cached = self._cache.get(conversation.sample_id)
        if cached is None:
            lines = conversation.render_lines()
            dia_ids = tuple(t.dia_id for s in conversation.sessions for t in s.turns)
            text = "\n".join(lines)
            tokens = count_tokens(text)
            budget = self._budget()
            if budget is not None and tokens > budget:
                lines, _ = keep_newest(lines, budget)
                dia_ids = dia_ids[len(dia_ids) - len(lines) :] if lines else ()
                text = "\n".join(lines)
                tokens = count_tokens(text)
            cached = (text, tokens, dia_ids)
            self._cache[conversation.sample_id] = cached
        return cached

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """The whole rendered conversation (tokens counted once per sample); with `truncate: oldest`, its
        newest turns that fit the answer model's window."""
        text, tokens, dia_ids = self._rendered(conversation)
        return RetrievedContext(
            kind="full_context",
            text=text,
            tokens=tokens,
            source_dia_ids=dia_ids,
            search_latency_s=None,
            items=len(dia_ids),
        )
