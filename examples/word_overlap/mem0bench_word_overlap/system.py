"""Keeps every turn and answers with the k turns sharing the most words with the question: no model, no
call of its own (the answer and judge calls are the harness's)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mem0bench.common.files import atomic_write
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemBase, SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.tokens import count_tokens

_WORDS = re.compile(r"[a-z0-9']{3,}")


class WordOverlap(SystemBase):
    def __init__(self, *, name: str = "word_overlap", k: int = 6, context: SystemContext) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"{name}: k must be an integer >= 1, got {k!r}")
        super().__init__()
        self.name, self.k, self.context = name, k, context

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """No call of its own, no query embedding; a context of k turns (~35 tokens each)."""
        return CostPlan(context_tokens=35.0 * int(method.get("k", 6)), embeds_queries=False)

    def _file(self, conversation: Conversation) -> Path:
        return self.context.state_dir / conversation.sample_id / "word_overlap.json"

    async def ingest(self, conversation: Conversation) -> IngestReport:
        lines = conversation.render_lines()
        if not self._file(conversation).exists():
            ids = [t.dia_id for t in conversation.turns]
            atomic_write(self._file(conversation), json.dumps({"lines": lines, "dia_ids": ids}))
        return IngestReport(conversation.sample_id, memory_tokens=count_tokens("\n".join(lines)))

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        saved = json.loads(self._file(conversation).read_text(encoding="utf-8"))
        asked = set(_WORDS.findall(question.question.lower()))
        overlap = [len(asked & set(_WORDS.findall(line.lower()))) for line in saved["lines"]]
        best = sorted(sorted(range(len(overlap)), key=lambda i: -overlap[i])[: self.k])
        text = "\n".join(saved["lines"][i] for i in best)
        dia_ids = tuple(saved["dia_ids"][i] for i in best)
        return RetrievedContext(
            kind="chunks", text=text, tokens=count_tokens(text), source_dia_ids=dia_ids, items=len(best)
        )
