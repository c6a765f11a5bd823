"""Mem0^g as a MemorySystem: Mem0's memories plus one directed labelled graph per stream.

The graph step of each pair (`ingestion`) has two parts, through Mem0's hooks: entity and relation
extraction with their embeddings read the pair alone and run ahead with Mem0's extraction
(``prepare_pair_extra``); the graph updates run on the stream's chain concurrently with Mem0's update
decisions (``apply_pair_extra``), and Mem0 awaits them before the next pair, so a stream's graph sees its
pairs strictly in order. Each graph is saved before Mem0's done marker (`persistence`), and a transient
failure of the graph step withholds that marker exactly as Mem0's own transient failures do, so the next
run replays the stream (free from the LLM cache) and retries the failed calls. Retrieval adds up to
`relations_top_k` relations per speaker from two channels (`retrieval`) to Mem0's memories.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm import timing
from mem0bench.llm.types import FailureKind
from mem0bench.memory.base import IngestReport, RetrievedContext, SavedStore, StepFailure, SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.memory.graph import graph_name, has_snapshot
from mem0bench.memory.graph.base import Edge, Node
from mem0bench.memory.stream import PairContext
from mem0bench.systems.methods.mem0 import SHARED, Mem0
from mem0bench.systems.methods.mem0.costs import mem0_cost_plan
from mem0bench.systems.methods.mem0.failures import has_transient
from mem0bench.systems.methods.mem0.retrieval import dia_ids_of, render_hits
from mem0bench.systems.methods.mem0g.ingestion import GraphIngestion, PairTriplets
from mem0bench.systems.methods.mem0g.persistence import (
    GRAPH_DIR,
    GraphStream,
    open_graph_stream,
    save_graph_stream,
)
from mem0bench.systems.methods.mem0g.retrieval import (
    query_entities,
    render_relations,
    run_store_work,
    search_graph,
)
from mem0bench.tokens import count_tokens

__all__ = ["Mem0G"]


class Mem0G(Mem0):
    """Mem0^g as a MemorySystem: Mem0 plus one relation graph per stream."""

    @staticmethod
    def uses_graph_server(graph: Mapping[str, Any]) -> bool:
        """A FalkorDB server is needed for `graph.backend=falkordb` (the run starts one if no host is set)."""
        return str(graph.get("backend", "inprocess") or "inprocess").lower() == "falkordb"

    @classmethod
    def saved_memories(cls, state_dir: Path, sample_id: str) -> list[SavedStore] | None:
        """Mem0's stores, each with its graph snapshot (a stream that never finished has none)."""
        stores = super().saved_memories(state_dir, sample_id) or []
        graphs = [Path(state_dir) / sample_id / store.slug / GRAPH_DIR for store in stores]
        return [
            replace(store, graph=graph if has_snapshot(graph) else None)
            for store, graph in zip(stores, graphs)
        ]

    def __init__(
        self,
        *,
        name: str = "mem0g",
        threshold: float = 0.7,
        reuse_threshold: float = 0.9,
        triplet_threshold: float = 0.4,
        relations_top_k: int = 20,
        conflict_candidates: int = 20,
        context: SystemContext,
        **mem0_kwargs: Any,
    ) -> None:
        super().__init__(name=name, context=context, **mem0_kwargs)
        if not all(-1.0 <= float(t) <= 1.0 for t in (threshold, reuse_threshold, triplet_threshold)):
            raise ValueError(
                "threshold, reuse_threshold and triplet_threshold are cosine similarities in [-1, 1]"
            )
        if int(relations_top_k) < 1 or int(conflict_candidates) < 1:
            raise ValueError("relations_top_k and conflict_candidates must be >= 1")
        self.threshold = float(threshold)
        """Retrieval: query entities match nodes at least this similar."""
        self.reuse_threshold = float(reuse_threshold)
        """Ingestion: an extracted name reuses a node at least this similar (literals: equal text only)."""
        self.triplet_threshold = float(triplet_threshold)
        self.relations_top_k = int(relations_top_k)
        self.conflict_candidates = int(conflict_candidates)
        self.graph_config: Mapping[str, Any] = dict(context.graph or {})
        # Server-side graph names are <prefix>_<run>_<sample>_<speaker slug>: the harness passes the run id;
        # without one, a stable tag of the state directory keeps runs apart (and a resumed run on its graph).
        run_id = self.graph_config.get("run_id")
        self._run_tag = (
            str(run_id) if run_id else hashlib.sha1(str(self.state_dir.resolve()).encode()).hexdigest()[:8]
        )
        self._graphs: dict[str, dict[str, GraphStream]] = {}
        self._ingestion = GraphIngestion(
            self.client, self.reuse_threshold, self.conflict_candidates, self.record_failure
        )

    # ---- layout and lifecycle (Mem0's hooks) --------------------------------------------------------

    def graph_dir(self, sample_id: str, key: str) -> Path:
        return self.stream_dir(sample_id, key) / GRAPH_DIR

    def _graph_key(self, sample_id: str, key: str) -> str:
        return f"{self._run_tag}_{sample_id}_{self.stream_dir(sample_id, key).name}"

    def _open(self, sample_id: str, key: str, *, resume: bool) -> GraphStream:
        old = self._graphs.get(sample_id, {}).pop(key, None)
        if old is not None:
            old.store.close()
        stream = open_graph_stream(
            self.graph_config, self._graph_key(sample_id, key), self.graph_dir(sample_id, key), resume=resume
        )
        self._graphs.setdefault(sample_id, {})[key] = stream
        return stream

    async def begin_stream_extra(self, sample_id: str, key: str) -> None:
        """A stream replays from its first pair: start its graph empty."""
        self._open(sample_id, key, resume=False)

    async def finish_stream_extra(self, sample_id: str, key: str, stream_dir: Path) -> None:
        """Save the graph snapshot and its op counts (Mem0 writes its done marker after this)."""
        save_graph_stream(
            self._graphs[sample_id][key],
            stream_dir / GRAPH_DIR,
            backend=str(self.graph_config.get("backend", "inprocess")),
            graph_name=graph_name(
                str(self.graph_config.get("prefix", "mem0bench")), self._graph_key(sample_id, key)
            ),
        )

    def stream_complete_extra(self, sample_id: str, key: str) -> bool:
        """False after a transient graph failure: no done marker, so the next ingest replays the stream."""
        return not has_transient(self._graphs[sample_id][key].failures)

    async def load_stream_extra(self, sample_id: str, key: str, stream_dir: Path) -> None:
        self._open(sample_id, key, resume=True)

    def _ensure_graphs(self, conversation: Conversation) -> dict[str, GraphStream]:
        """The graphs of an ingested conversation, loaded from their snapshots if this process lacks them."""
        sid = conversation.sample_id
        for key in self._stores.get(sid, {}):
            if key not in self._graphs.get(sid, {}):
                if not has_snapshot(self.graph_dir(sid, key)):
                    raise RuntimeError(
                        f"{self.name}: {sid} has no graph snapshot at {self.graph_dir(sid, key)}"
                    )
                self._open(sid, key, resume=True)
        return self._graphs[sid]

    def release(self, sample_id: str) -> None:
        """Mem0's stores and the conversation's graphs, closed (a server keeps them; `retrieve` reopens)."""
        super().release(sample_id)
        if sample_id in self._stores:  # kept by Mem0 (a stream has no done snapshot): its graphs too
            return
        for stream in self._graphs.pop(sample_id, {}).values():
            stream.store.close()

    def close(self) -> None:
        """Release graph connections (FalkorDB); in-process graphs need nothing."""
        for streams in self._graphs.values():
            for stream in streams.values():
                stream.store.close()

    async def aclose(self) -> None:
        """The harness's shutdown hook (it awaits ``aclose`` after a run): `close`."""
        self.close()

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return mem0_cost_plan(method, dataset, n_questions, graph=True)

    # ---- ingest ---------------------------------------------------------------------------------------

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Mem0's ingest; the report adds graph counts, graph failures and the relations' tokens."""
        report = await super().ingest(conversation)
        sid = conversation.sample_id
        details: Counter[str] = Counter(report.details)
        failures = report.failures
        for stream in self._graphs.get(sid, {}).values():
            for name, n in stream.counts.items():
                details[f"graph.{name}"] += int(n)
            for failure in stream.failures:
                details[f"failures.{failure.stage}"] += 1
                failures += 1
            details["graph.nodes"] += len(stream.store.nodes())
            details["graph.relations"] += len(stream.store.edges())
        return IngestReport(
            sample_id=sid,
            memory_tokens=count_tokens(self._render_everything(sid)),
            failures=failures,
            details=dict(sorted(details.items())),
        )

    def _render_everything(self, sample_id: str) -> str:
        """All memories and all relations, rendered as in the answer context (memory store size)."""
        graphs = self._graphs.get(sample_id, {})
        relations = render_relations(
            [
                (self.stream_title(sample_id, key), graphs[key].store.edges())
                for key in self.stream_keys(sample_id)
                if key in graphs
            ]
        )
        return f"{self.render_all_memories(sample_id)}\n\n{relations}"

    async def prepare_pair_extra(self, ctx: PairContext) -> PairTriplets:
        """The graph step's entities, relations and embeddings of one pair: the pair alone (runs ahead)."""
        return await self._ingestion.extract_pair(ctx, shared=self.stream_key(ctx.speaker) == SHARED)

    async def apply_pair_extra(self, ctx: PairContext, prepared: Any) -> None:
        """The graph updates of one pair (node resolution, conflicts, new edges), on its stream's graph."""
        key = self.stream_key(ctx.speaker)
        stream = self._graphs[ctx.sample_id][key]
        await self._ingestion.store_pair(stream, key, ctx, prepared)

    # ---- retrieval ------------------------------------------------------------------------------------

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """Each speaker's top_k memories plus up to relations_top_k relations from both graph channels."""
        self._ensure_loaded(conversation)
        graphs = self._ensure_graphs(conversation)
        sid = conversation.sample_id
        with timing.measure() as measured:
            entities = await query_entities(
                self.client, conversation, question, partial(self._search_failure, question)
            )
            vectors = np.asarray(
                await self.client.embed([question.question, *entities], stage="search"), dtype=np.float32
            )
            question_vector, entity_vectors = vectors[0], vectors[1:]
            memory_results = self.search_memories(sid, question_vector)
            keys = self.stream_keys(sid)
            relations: dict[str, list[Edge]] = {}
            for key in keys:
                store = graphs[key].store
                relations[key] = await run_store_work(
                    store,
                    partial(
                        search_graph,
                        store,
                        question.question,
                        question_vector,
                        entity_vectors,
                        threshold=self.threshold,
                        triplet_threshold=self.triplet_threshold,
                        top_k=self.relations_top_k,
                    ),
                )
            text = (
                render_hits(memory_results, date=self.memory_date)
                + "\n\n"
                + render_relations([(self.stream_title(sid, key), relations[key]) for key in keys])
            )
        memory_ids = (record.source_dia_ids for _, hits in memory_results for record, _ in hits)
        relation_ids = (edge.source_dia_ids for key in keys for edge in relations[key])
        return RetrievedContext(
            kind="graph_memories",
            text=text,
            tokens=count_tokens(text),
            source_dia_ids=dia_ids_of([*memory_ids, *relation_ids]),
            search_latency_s=measured.latency_s,
            local_search_s=measured.local_s,
            items=sum(len(hits) for _, hits in memory_results) + sum(len(relations[key]) for key in keys),
        )

    def _search_failure(self, question: Question, kind: FailureKind, message: str) -> None:
        self.failures.append(
            StepFailure(
                system=self.name,
                sample_id=question.sample_id,
                stage="graph_query_entities",
                kind=kind,
                message=message,
                qid=question.qid,
            )
        )

    def graph_snapshot(self, sample_id: str) -> dict[str, tuple[list[Node], list[Edge]]]:
        """Current nodes and edges of each stream's graph (key: speaker name, or 'shared')."""
        return {key: (s.store.nodes(), s.store.edges()) for key, s in self._graphs.get(sample_id, {}).items()}
