"""cognee (topoteretes/cognee 1.6.x) as a MemorySystem (`cognee`), run in its own environment.

cognee pins openai 2.x and older pandas / SQLAlchemy than the harness holds, so it runs in a venv of its
own (`python -m mem0bench setup-system cognee`, see `env`) as a service (`service.py`) that the shared
`OwnEnvSystem` starts and reaches over the HTTP system protocol (its token, bridge and scope: see
`own_env.adapter`).

As cognee's own LOCOMO evaluation runs it (cognee/eval_framework/locomo/ in the wheel): per conversation
one `remember()` (add + cognify + improve) of an overview document and dated windows of 6 turns, chunks of
4,096 tokens (a window stays one chunk); the HYBRID_COMPLETION retriever with chunks, entities and facts
top_k 20/20/20 and 10 edges per entity. The protocol sends sessions one at a time: the service stores
them, and this adapter's last request of an ingestion asks it to `remember()` them all at once.

The answer: cognee's eval lets cognee complete it (its retriever's completion, with its own answer prompt);
the harness answers with its own answer stage, so by default (`answer_by=context`) the context that completion
would be given is the answer context (a labelled departure, docs/systems.md). `answer_by=cognee` runs cognee's
completion instead and hands it over as the context, worded so that our answer prompt repeats it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mem0bench.data.model import Conversation, Dataset
from mem0bench.llm.types import LLMCallError
from mem0bench.memory.base import IngestReport, StepFailure, SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.systems.external.cognee.costs import cognee_cost_plan
from mem0bench.systems.external.cognee.env import ENV
from mem0bench.systems.external.http_system.system import STEP
from mem0bench.systems.external.http_system.transport import path_of
from mem0bench.systems.external.http_system.wire import SearchItem
from mem0bench.systems.external.own_env.adapter import OwnEnvSystem, Rendered

__all__ = ["Cognee"]

ANSWERS = ("context", "cognee")
COGNEE_ANSWER = (
    "The memory system answered this question itself. Reply with its answer exactly as given:\n{answer}"
)
"""`answer_by=cognee`: the context our answer prompt sees, so that it repeats cognee's own answer."""


def _count(name: str, label: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: {label} must be an integer >= 1, got {value!r}")
    return value


class Cognee(OwnEnvSystem):
    """cognee, one dataset (its own graph and vector databases) per conversation, in the service this
    adapter starts."""

    env = ENV
    service_script = Path(__file__).with_name("service.py")

    def __init__(
        self,
        *,
        name: str = "cognee",
        window_turns: int = 6,
        chunk_size: int = 4096,
        overview: bool = True,
        self_improvement: bool = True,
        chunks_top_k: int = 20,
        entities_top_k: int = 20,
        facts_top_k: int = 20,
        max_edges_per_entity: int = 10,
        answer_by: str = "context",
        temperature: float = 0.0,
        timeout_s: float = 3600.0,
        max_retries: int = 2,
        max_concurrency: int = 8,
        workers: int = 8,
        context: SystemContext,
    ) -> None:
        for label, value in (("window_turns", window_turns), ("chunk_size", chunk_size),
                             ("entities_top_k", entities_top_k), ("facts_top_k", facts_top_k)):  # fmt: skip
            _count(name, label, value)
        if isinstance(max_edges_per_entity, bool) or not isinstance(max_edges_per_entity, int):
            raise ValueError(f"{name}: max_edges_per_entity must be an integer, got {max_edges_per_entity!r}")
        if answer_by not in ANSWERS:
            raise ValueError(f"{name}: answer_by must be one of {', '.join(ANSWERS)}, got {answer_by!r}")
        super().__init__(
            name=name, top_k=chunks_top_k, timeout_s=timeout_s, max_retries=max_retries,
            max_concurrency=max_concurrency, workers=workers, context=context,
        )  # fmt: skip
        self.window_turns, self.chunk_size = window_turns, chunk_size
        self.overview, self.self_improvement = bool(overview), bool(self_improvement)
        self.top_ks = {"chunks_top_k": chunks_top_k, "entities_top_k": entities_top_k,
                       "facts_top_k": facts_top_k, "max_edges_per_entity": max_edges_per_entity}  # fmt: skip
        self.answer_by, self.temperature = answer_by, float(temperature)

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return cognee_cost_plan(method, dataset, n_questions)

    def memory_settings(self) -> dict[str, Any]:
        return {
            "window_turns": self.window_turns, "chunk_size": self.chunk_size, "overview": self.overview,
            "self_improvement": self.self_improvement, "temperature": self.temperature,
            "versions": self.versions,
        }  # fmt: skip

    def service_settings(self, dims: int) -> dict[str, Any]:
        return {**self.memory_settings(), **self.top_ks, "answer_by": self.answer_by}

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """The sessions (stored by the service), then the one `remember()` over all of them."""
        http = await self.service()
        async with self.bridge.scope(conversation.sample_id, stage=http.ingest_stage, stamped=True):
            report = await http.ingest(conversation)
            target = path_of("conversations", http.service_id(conversation), "sessions", "-1")
            try:
                await http.transport.request(
                    "PUT", target, stage=http.ingest_stage,
                    body={"remember": True, "sample": conversation.sample_id},
                )  # fmt: skip
            except LLMCallError as error:
                self.failures.append(
                    StepFailure(
                        system=self.name,
                        sample_id=conversation.sample_id,
                        stage=STEP,
                        kind=error.failure.kind,
                        message=f"remember(): {error.failure.message}"[:2000],
                    )  # fmt: skip
                )
                return IngestReport(
                    report.sample_id, memory_tokens=None, failures=report.failures + 1, details=report.details
                )
        return report

    def render(self, conversation: Conversation, items: list[tuple[dict[str, Any], SearchItem]]) -> Rendered:
        """cognee's hybrid context (passages, entities, facts), as its completion would be given it; with
        `answer_by=cognee`, cognee's answer, worded for our answer prompt to repeat."""
        texts = [parsed.text for _, parsed in items if parsed.text]
        dia_ids = [d for _, parsed in items for d in parsed.turn_ids]
        text = "\n\n".join(texts)
        if self.answer_by == "cognee" and text:
            text = COGNEE_ANSWER.format(answer=text)
        return Rendered(text, dia_ids, len(texts), kind="notes")
