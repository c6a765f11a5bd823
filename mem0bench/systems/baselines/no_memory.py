"""The no-memory bound: the answer model gets the question and nothing else. Its J is the floor of this
answer model under this judge (what guessing, world knowledge and a generous judge give without any
memory); a system below it is worse than none."""

from __future__ import annotations

from mem0bench.data.model import Conversation, Question
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemBase, SystemContext

__all__ = ["NoMemory"]


class NoMemory(SystemBase):
    """Keeps nothing; every context is empty (kind 'none', which the answer prompt words as such)."""

    empty_context_expected = True  # the floor: no end-of-run warning that most contexts were empty
    bound = "floor"

    def __init__(self, *, name: str = "no_memory", context: SystemContext) -> None:
        super().__init__()
        self.name = name
        self.context = context

    async def ingest(self, conversation: Conversation) -> IngestReport:
        return IngestReport(sample_id=conversation.sample_id, memory_tokens=None)

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        return RetrievedContext(kind="none", text="", tokens=0, search_latency_s=None, items=0)
