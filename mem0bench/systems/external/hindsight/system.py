"""Hindsight (vectorize-io, hindsight-api-slim 1.1.0) as a MemorySystem (`hindsight`), run in its own venv.

Hindsight pins openai<3, which cannot share the harness's environment: it runs in a venv of its own
(`python -m mem0bench setup-system hindsight`) as a service (`service.py`, with Hindsight's bundled
PostgreSQL) that the shared `OwnEnvSystem` starts and reaches over the HTTP system protocol.

As the authors' LOCOMO harness (hindsight-dev/benchmarks/locomo) ran it: one retain per session with its
date, recall at budget `high` with at most 4,096 tokens of facts, entities (2,048 tokens) and chunks; the
answer context is the whole recall result as JSON, as their answer generator gave it to the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mem0bench.data.model import Conversation, Dataset
from mem0bench.memory.base import SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.systems.external.hindsight.costs import hindsight_cost_plan
from mem0bench.systems.external.hindsight.env import ENV
from mem0bench.systems.external.http_system.wire import SearchItem
from mem0bench.systems.external.own_env.adapter import OwnEnvSystem, Rendered

__all__ = ["Hindsight"]

BUDGETS = ("low", "mid", "high")
RERANKERS = ("rrf", "interleave")


class Hindsight(OwnEnvSystem):
    """Hindsight's MemoryEngine, one bank per conversation, in the service this adapter starts."""

    env = ENV
    service_script = Path(__file__).with_name("service.py")

    def __init__(
        self,
        *,
        name: str = "hindsight",
        budget: str = "high",
        max_tokens: int = 4096,
        include_entities: bool = True,
        max_entity_tokens: int = 2048,
        include_chunks: bool = True,
        max_chunk_tokens: int = 8192,
        reranking: str = "rrf",
        strict_schema: bool = True,
        top_k: int = 1,
        timeout_s: float = 1800.0,
        max_retries: int = 2,
        max_concurrency: int = 8,
        workers: int = 8,
        context: SystemContext,
    ) -> None:
        if budget not in BUDGETS:
            raise ValueError(f"{name}: budget must be one of {BUDGETS}, got {budget!r}")
        if reranking not in RERANKERS:
            raise ValueError(
                f"{name}: reranking must be one of {RERANKERS} (the cross-encoder is a Hugging Face "
                f"download, unreachable here), got {reranking!r}"
            )
        for label, value in (
            ("max_tokens", max_tokens), ("max_entity_tokens", max_entity_tokens),
            ("max_chunk_tokens", max_chunk_tokens),
        ):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {label} must be an integer >= 1, got {value!r}")
        super().__init__(
            name=name, top_k=top_k, timeout_s=timeout_s, max_retries=max_retries,
            max_concurrency=max_concurrency, workers=workers, context=context,
        )  # fmt: skip
        self.budget, self.max_tokens, self.reranking = budget, max_tokens, reranking
        self.include_entities, self.max_entity_tokens = bool(include_entities), max_entity_tokens
        self.include_chunks, self.max_chunk_tokens = bool(include_chunks), max_chunk_tokens
        self.strict_schema = bool(strict_schema)

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return hindsight_cost_plan(method, dataset, n_questions)

    def _recall(self) -> dict[str, Any]:
        return {
            "budget": self.budget, "max_tokens": self.max_tokens, "include_entities": self.include_entities,
            "max_entity_tokens": self.max_entity_tokens, "include_chunks": self.include_chunks,
            "max_chunk_tokens": self.max_chunk_tokens, "reranking": self.reranking,
        }  # fmt: skip

    def memory_settings(self) -> dict[str, Any]:
        # The database's incarnation: a database made anew (lost, or another machine's) holds nothing,
        # so the sessions are ingested again.
        return {
            "strict_schema": self.strict_schema, "recall": self._recall(), "versions": self.versions,
            "database": self._incarnation(),
        }  # fmt: skip

    def _incarnation(self) -> str | None:
        marker = self.service_dir / "data" / "incarnation"
        try:
            return marker.read_text(encoding="utf-8").strip()
        except OSError:
            return None

    def service_settings(self, dims: int) -> dict[str, Any]:
        return {**self._recall(), "reranker": "rrf", "strict_schema": self.strict_schema}

    def ingest_units(self, conversation: Conversation) -> int:
        return sum(1 for s in conversation.sessions if s.turns)

    def render(self, conversation: Conversation, items: list[tuple[dict[str, Any], SearchItem]]) -> Rendered:
        """The recall result as the authors' answer generator gave it to the model: `json.dumps` of the
        whole result (facts, entities, chunks), reassembled from the items in the service's key order."""
        facts: list[Any] = []
        entities: dict[str, Any] = {}
        chunks: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        order: list[str] = ["results", "entities", "chunks"]
        dia_ids: list[str] = []
        for item, parsed in items:
            kind = item.get("kind")
            if kind == "fact":
                facts.append(item["raw"])
                dia_ids.extend(parsed.turn_ids)
            elif kind == "entity":
                entities[str(item["key"])] = item["raw"]
            elif kind == "chunk":
                chunks[str(item["key"])] = item["raw"]
            elif kind == "rest":
                rest, order = dict(item["raw"]), [str(k) for k in item["order"]]
            else:
                raise ValueError(f"an item of unknown kind {kind!r}")
        parts = {"results": facts, "entities": entities or None, "chunks": chunks or None, **rest}
        result = {key: parts.get(key) for key in order}
        return Rendered(json.dumps(result), dia_ids, len(facts))
