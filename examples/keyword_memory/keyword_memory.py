"""A naive keyword memory: the smallest complete mem0bench system (docs/your_system.md walks through it)."""

from __future__ import annotations

import json
import re

import numpy as np

from mem0bench.common.files import atomic_write
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemBase, SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig, PlanLine
from mem0bench.tokens import count_tokens

WORDS = re.compile(r"[a-z0-9']{3,}")


class KeywordMemory(SystemBase):
    """Keeps every turn; answers with the k turns sharing the most words with the question (ties: the
    embedding similarity)."""

    def __init__(self, *, name: str = "keyword_memory", k: int = 5, context: SystemContext) -> None:
        super().__init__()
        self.name, self.k, self.context = name, k, context

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        turns = [t.text for c in dataset.conversations for t in c.turns]
        embed = PlanLine(
            "ingest", "turn embeddings", len(dataset.conversations), sum(map(count_tokens, turns)), 0
        )
        return CostPlan(context_tokens=40.0 * int(method.get("k", 5)), lines=[embed])  # + 1 query embedding

    async def ingest(self, conversation: Conversation) -> IngestReport:
        file = self.context.state_dir / conversation.sample_id / "keyword_memory.json"
        if not file.exists():  # idempotent: what a finished ingest saved is loaded, never bought again
            lines = conversation.render_lines()
            vectors = await self.context.client.embed(lines, stage="ingest")  # an LLMCallError propagates
            atomic_write(file, json.dumps({"lines": lines, "vectors": vectors.tolist()}))  # saved last
        return IngestReport(conversation.sample_id, memory_tokens=None)

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        file = self.context.state_dir / conversation.sample_id / "keyword_memory.json"
        saved = json.loads(file.read_text(encoding="utf-8"))
        query = await self.context.client.embed([question.question], stage="search")
        similarity = np.asarray(saved["vectors"], dtype=np.float32) @ query[0]
        asked = set(WORDS.findall(question.question.lower()))
        score = [
            len(asked & set(WORDS.findall(line.lower()))) + float(s)
            for line, s in zip(saved["lines"], similarity)
        ]
        best = sorted(range(len(score)), key=lambda i: -score[i])[: self.k]
        text = "\n".join(saved["lines"][i] for i in sorted(best))  # in conversation order
        return RetrievedContext(kind="chunks", text=text, tokens=count_tokens(text), items=len(best))
