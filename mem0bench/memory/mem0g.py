"""Mem0^g (Chhikara et al. 2025): Mem0's memories plus a directed labelled graph of entities and relations.

Per message pair, concurrently with Mem0's memory step, an entity extractor and then a relations generator
(function calls) turn the pair into triplets (source, relation, destination). Each triplet is stored:
source and destination names are embedded and mapped to an existing node whose cosine similarity reaches
`threshold`, else to a new node; the valid relations touching those nodes go to a conflict detector and
update resolver (one LLM call) that names the ones the new relation makes obsolete; those are marked
invalid as of the session date, never deleted; then the new edge is added, dated and with its dia_ids.

Retrieval merges two channels per speaker: entity-centric (the question's entities -> similar nodes ->
their incoming and outgoing edges) and semantic triplet (the question's embedding against each edge's
triplet-text embedding, at least `triplet_threshold`, best first).

Decisions where the paper is silent:

* **Node reuse** is ">= threshold" (the paper says "exceeds"; equality of float similarities is measure-
  zero in practice, and a test pins the boundary). The best-scoring node wins; ties go to the older node.
* **Exact duplicates** (a valid edge with the same source node, relation and destination node) are skipped
  without an LLM call. Self-loops (source and destination resolve to the same node) are skipped.
* **Conflict candidates**: the valid edges touching either node; when there are more than
  `conflict_candidates`, the ones whose triplet text is most similar to the new triplet's are shown.
* **Failures** (LLMCallError, or a reply with the wrong shape) are recorded in `self.failures` with a
  `graph_*` stage and the pair is skipped; a failed resolver call still adds the new edge (information is
  kept; nothing is invalidated). A failed query entity extraction leaves the semantic channel alone.
* **Merge**: the two channels' ranked lists are interleaved (entity channel first), deduplicated by edge,
  and cut at `relations_top_k`; the chosen relations are rendered in creation order (a timeline), invalid
  ones with the date they stopped being true. Entity-channel edges rank by the similarity of the node that
  brought them, newest first among equals.
* **Persistence**: each stream's graph is saved to `<sample>/<speaker slug>/graph/` (graph.json + vectors,
  for any backend) in Mem0's `finish_stream_extra` hook, i.e. before Mem0's done marker, with
  `graph_stream.json` holding the graph op counts and failures.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mem0bench.data.model import Conversation, Question
from mem0bench.llm import timing
from mem0bench.llm.types import LLMCallError, StructuredSpec
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemContext
from mem0bench.memory.graph import InProcessGraphStore, build_graph_store, graph_name, has_snapshot
from mem0bench.memory.graph.base import Edge, GraphStore, Node, triplet_text
from mem0bench.memory.mem0 import SHARED, Mem0, render_memories
from mem0bench.memory.stream import PairContext
from mem0bench.prompts.graph import (
    ENTITIES_SPEC,
    OBSOLETE_SPEC,
    QUERY_ENTITIES_SPEC,
    RELATIONS_SPEC,
    build_entity_messages,
    build_obsolete_messages,
    build_query_entity_messages,
    build_relations_messages,
    parse_entities,
    parse_obsolete,
    parse_query_entities,
    parse_relations,
)
from mem0bench.tokens import count_tokens

__all__ = ["Mem0G", "render_relations"]

GRAPH_DIR = "graph"
GRAPH_STREAM_FILE = "graph_stream.json"
NODES_PER_QUERY_ENTITY = 5
"""Entity channel: similar nodes taken per query entity (all at least `threshold`)."""
_ALL = 1_000_000


@dataclass
class _GraphStream:
    store: GraphStore
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)


def _relation_line(edge: Edge) -> str:
    line = f"- [{edge.created_at}] {edge.source_name} -> {edge.relation} -> {edge.destination_name}"
    if not edge.valid:
        line += f" (no longer true as of {edge.invalidated_at})"
    return line


def render_relations(sections: Sequence[tuple[str, Sequence[Edge]]]) -> str:
    """Per section 'Relations of <title>:' then one line per relation, in the given order."""
    blocks = []
    for title, edges in sections:
        lines = [f"Relations of {title}:"] + ([_relation_line(e) for e in edges] or ["(no relations)"])
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _creation_order(edge: Edge) -> tuple[int, str]:
    # Store ids are "e<sequence>": numeric order is creation order (lexicographic order is not).
    digits = edge.id.lstrip("e")
    return (int(digits), edge.id) if digits.isdigit() else (0, edge.id)


class Mem0G(Mem0):
    """Mem0^g as a MemorySystem: Mem0 plus one relation graph per stream."""

    def __init__(
        self,
        *,
        name: str = "mem0g",
        threshold: float = 0.7,
        triplet_threshold: float = 0.4,
        relations_top_k: int = 20,
        conflict_candidates: int = 20,
        context: SystemContext,
        **mem0_kwargs: Any,
    ) -> None:
        super().__init__(name=name, context=context, **mem0_kwargs)
        if not -1.0 <= float(threshold) <= 1.0 or not -1.0 <= float(triplet_threshold) <= 1.0:
            raise ValueError("threshold and triplet_threshold are cosine similarities in [-1, 1]")
        if int(relations_top_k) < 1 or int(conflict_candidates) < 1:
            raise ValueError("relations_top_k and conflict_candidates must be >= 1")
        self.threshold = float(threshold)
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
        self._graphs: dict[str, dict[str, _GraphStream]] = {}

    # ---- layout and lifecycle (Mem0's hooks) --------------------------------------------------------

    def graph_dir(self, sample_id: str, key: str) -> Path:
        return self.stream_dir(sample_id, key) / GRAPH_DIR

    def _graph_key(self, sample_id: str, key: str) -> str:
        return f"{self._run_tag}_{sample_id}_{self.stream_dir(sample_id, key).name}"

    def _open(self, sample_id: str, key: str, *, resume: bool) -> _GraphStream:
        old = self._graphs.get(sample_id, {}).pop(key, None)
        if old is not None:
            old.store.close()
        directory = self.graph_dir(sample_id, key)
        store = build_graph_store(
            self.graph_config, self._graph_key(sample_id, key), directory, resume=resume
        )
        stream = _GraphStream(store)
        meta_path = directory / GRAPH_STREAM_FILE
        if resume and meta_path.is_file():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            stream.counts.update(meta.get("counts", {}))
            stream.failures.extend(meta.get("failures", []))
        self._graphs.setdefault(sample_id, {})[key] = stream
        return stream

    async def begin_stream_extra(self, sample_id: str, key: str) -> None:
        """A stream replays from its first pair: start its graph empty."""
        self._open(sample_id, key, resume=False)

    async def finish_stream_extra(self, sample_id: str, key: str, stream_dir: Path) -> None:
        """Save the graph snapshot and its op counts (Mem0 writes its done marker after this)."""
        stream = self._graphs[sample_id][key]
        directory = stream_dir / GRAPH_DIR
        stream.store.save(directory)
        meta = {
            "backend": str(self.graph_config.get("backend", "inprocess")),
            "graph_name": graph_name(
                str(self.graph_config.get("prefix", "mem0bench")), self._graph_key(sample_id, key)
            ),
            "counts": dict(sorted(stream.counts.items())),
            "failures": stream.failures,
        }
        tmp = directory / (GRAPH_STREAM_FILE + ".tmp")
        tmp.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, directory / GRAPH_STREAM_FILE)

    async def load_stream_extra(self, sample_id: str, key: str, stream_dir: Path) -> None:
        self._open(sample_id, key, resume=True)

    def _ensure_graphs(self, conversation: Conversation) -> dict[str, _GraphStream]:
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

    def close(self) -> None:
        """Release graph connections (FalkorDB); in-process graphs need nothing."""
        for streams in self._graphs.values():
            for stream in streams.values():
                stream.store.close()

    # ---- ingest ---------------------------------------------------------------------------------------

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Mem0's ingest; the report adds graph counts, graph failures and the relations' tokens."""
        report = await super().ingest(conversation)
        sid = conversation.sample_id
        details: Counter[str] = Counter(report.details)
        failures = report.failures
        graphs = self._graphs.get(sid, {})
        for stream in graphs.values():
            for name, n in stream.counts.items():
                details[f"graph.{name}"] += int(n)
            for failure in stream.failures:
                details[f"failures.{failure['stage']}"] += 1
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
        keys = list(self._stores.get(sample_id, {}))
        memories = render_memories(
            [(self._title(sample_id, k), self._stores[sample_id][k].records()) for k in keys]
        )
        graphs = self._graphs.get(sample_id, {})
        relations = render_relations(
            [(self._title(sample_id, k), graphs[k].store.edges()) for k in keys if k in graphs]
        )
        return f"{memories}\n\n{relations}"

    async def ingest_pair_extra(self, ctx: PairContext) -> None:
        """The graph step of one pair. Mem0 awaits it before the next pair of the stream, so a stream's
        graph sees its pairs strictly in order."""
        key = self.stream_key(ctx.speaker)
        stream = self._graphs[ctx.sample_id][key]
        shared = key == SHARED
        date = ctx.session_date_text

        entities_reply = await self._call(
            stream,
            key,
            ctx,
            "graph_entities",
            ENTITIES_SPEC,
            build_entity_messages(
                user=ctx.speaker, other=ctx.other, pair=ctx.pair, session_date=date, shared=shared
            ),
        )
        entities = _safe_parse(parse_entities, entities_reply)
        if entities_reply is not None and entities is None:
            self._fail(stream, key, ctx, "graph_entities", "malformed", "entities reply has the wrong shape")
        if not entities:
            return
        relations_reply = await self._call(
            stream,
            key,
            ctx,
            "graph_relations",
            RELATIONS_SPEC,
            build_relations_messages(
                user=ctx.speaker,
                other=ctx.other,
                pair=ctx.pair,
                session_date=date,
                entities=entities,
                shared=shared,
            ),
        )
        triplets = _safe_parse(parse_relations, relations_reply)
        if relations_reply is not None and triplets is None:
            self._fail(
                stream, key, ctx, "graph_relations", "malformed", "relations reply has the wrong shape"
            )
        if not triplets:
            return
        stream.counts["triplets"] += len(triplets)

        # One embedding call for every name and triplet text of the pair.
        types = {name.lower(): etype for name, etype in entities}
        names = list(dict.fromkeys(n for s, _, d in triplets for n in (s, d)))
        texts = [triplet_text(*t) for t in triplets]
        try:
            vectors = np.asarray(await self.client.embed(names + texts, stage="ingest"), dtype=np.float32)
        except LLMCallError as error:
            self._fail(stream, key, ctx, "graph_embed", error.failure.kind, error.failure.message)
            return
        name_vectors = dict(zip(names, vectors[: len(names)]))
        dia_ids = tuple(t.dia_id for t in ctx.pair)
        for triplet, text_vector in zip(triplets, vectors[len(names) :]):
            source_name, relation, destination_name = triplet
            source = self._resolve_node(stream, source_name, types, name_vectors[source_name], date)
            destination = self._resolve_node(
                stream, destination_name, types, name_vectors[destination_name], date
            )
            if source.id == destination.id:
                stream.counts["skipped_self_loops"] += 1
                continue
            await self._store_relation(stream, key, ctx, source, relation, destination, text_vector, dia_ids)

    def _resolve_node(
        self, stream: _GraphStream, name: str, types: Mapping[str, str], vector: np.ndarray, date: str
    ) -> Node:
        """The existing node at least `threshold` similar to `name`, or a new node."""
        hits = stream.store.find_similar_nodes(vector, self.threshold, 1)
        if hits:
            stream.counts["nodes_reused"] += 1
            return hits[0][0]
        stream.counts["nodes_created"] += 1
        return stream.store.add_node(name, types.get(name.lower(), "entity"), vector, date)

    async def _store_relation(
        self,
        stream: _GraphStream,
        key: str,
        ctx: PairContext,
        source: Node,
        relation: str,
        destination: Node,
        text_vector: np.ndarray,
        dia_ids: tuple[str, ...],
    ) -> None:
        """Conflict detection and resolution for one triplet, then the new edge."""
        date = ctx.session_date_text
        touching = stream.store.edges_of([source.id, destination.id], include_invalid=False)
        if any(
            e.source_id == source.id and e.destination_id == destination.id and e.relation == relation
            for e in touching
        ):
            stream.counts["skipped_duplicates"] += 1
            return
        candidates = self._conflict_candidates(stream.store, touching, text_vector)
        if candidates:
            shown = [
                (i, (e.source_name, e.relation, e.destination_name), e.created_at)
                for i, e in enumerate(candidates)
            ]
            messages = build_obsolete_messages(
                new=(source.name, relation, destination.name), learned_on=date, existing=shown
            )
            reply = await self._call(stream, key, ctx, "graph_resolve", OBSOLETE_SPEC, messages)
            parsed = _safe_parse(lambda data: parse_obsolete(data, len(candidates)), reply)
            if reply is not None and parsed is None:
                self._fail(
                    stream, key, ctx, "graph_resolve", "malformed", "resolver reply has the wrong shape"
                )
            obsolete, invented = parsed or ([], [])
            stream.counts["resolver_calls"] += 1
            stream.counts["invented_ids"] += len(invented)
            for short_id in obsolete:
                stream.store.invalidate(candidates[short_id].id, date)
                stream.counts["edges_invalidated"] += 1
        stream.store.add_edge(source, relation, destination, text_vector, date, dia_ids)
        stream.counts["edges_added"] += 1

    def _conflict_candidates(
        self, store: GraphStore, touching: list[Edge], text_vector: np.ndarray
    ) -> list[Edge]:
        """The valid edges shown to the resolver: all touching ones, or the most similar `conflict_candidates`."""
        if len(touching) <= self.conflict_candidates:
            return touching
        wanted = {e.id for e in touching}
        # Rank by triplet-text similarity; a full ordering of the store's edges is cheap at LOCOMO scale.
        ranked = [e for e, _ in store.search_edges(text_vector, -1.0, _ALL) if e.id in wanted]
        return sorted(ranked[: self.conflict_candidates], key=_creation_order)

    async def _call(
        self,
        stream: _GraphStream,
        key: str,
        ctx: PairContext,
        stage: str,
        spec: StructuredSpec,
        messages: list[dict[str, Any]],
    ) -> dict[str, Any] | None:
        """One structured call at stage 'ingest'; None (recorded) when it fails for good."""
        try:
            reply = await self.client.structured(messages, spec, stage="ingest")
        except LLMCallError as error:
            self._fail(stream, key, ctx, stage, error.failure.kind, error.failure.message)
            return None
        return reply.data if isinstance(reply.data, dict) else {}

    def _fail(
        self, stream: _GraphStream, key: str, ctx: PairContext, stage: str, kind: str, message: str
    ) -> None:
        # TODO(mem0.py): record_failure(state=None) keeps graph failures out of the stream meta, so a
        # transient graph failure does not block Mem0's done marker; we keep them in graph_stream.json.
        stream.failures.append(self.record_failure(key, ctx, stage, kind, message))

    # ---- retrieval ------------------------------------------------------------------------------------

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """Each speaker's top_k memories plus up to relations_top_k relations from both graph channels."""
        self._ensure_loaded(conversation)
        graphs = self._ensure_graphs(conversation)
        sid = conversation.sample_id
        with timing.measure() as measured:
            entities = await self._query_entities(conversation, question)
            vectors = np.asarray(
                await self.client.embed([question.question, *entities], stage="search"), dtype=np.float32
            )
            question_vector, entity_vectors = vectors[0], vectors[1:]
            memory_results = self.search_memories(sid, question_vector)
            keys = list(self._stores[sid])
            relations = {
                k: await self._in_store(
                    graphs[k].store, self._search_graph, graphs[k].store, question_vector, entity_vectors
                )
                for k in keys
            }
            text = (
                render_memories([(title, [r for r, _ in hits]) for title, hits in memory_results])
                + "\n\n"
                + render_relations([(self._title(sid, k), relations[k]) for k in keys])
            )
        dia_ids: dict[str, None] = {}
        for _, hits in memory_results:
            for record, _ in hits:
                dia_ids.update(dict.fromkeys(record.source_dia_ids))
        for edges in relations.values():
            for edge in edges:
                dia_ids.update(dict.fromkeys(edge.source_dia_ids))
        return RetrievedContext(
            kind="graph_memories",
            text=text,
            tokens=count_tokens(text),
            source_dia_ids=tuple(dia_ids),
            search_latency_s=measured.latency_s,
            local_search_s=measured.local_s,
        )

    @staticmethod
    async def _in_store(store: GraphStore, fn: Any, *args: Any) -> Any:
        """Run sync store work: inline for the in-process store (sub-millisecond), in a worker thread for
        a server-backed store, so its network round trips do not stall other questions' event-loop work."""
        if isinstance(store, InProcessGraphStore):
            return fn(*args)
        return await asyncio.to_thread(fn, *args)

    async def _query_entities(self, conversation: Conversation, question: Question) -> list[str]:
        messages = build_query_entity_messages(question=question.question, speakers=conversation.speakers)
        try:
            reply = await self.client.structured(messages, QUERY_ENTITIES_SPEC, stage="search")
        except LLMCallError as error:
            self._search_failure(question, error.failure.kind, error.failure.message)
            return []
        parsed = _safe_parse(parse_query_entities, reply.data if isinstance(reply.data, dict) else {})
        if parsed is None:
            self._search_failure(question, "malformed", "query entities reply has the wrong shape")
        return parsed or []

    def _search_failure(self, question: Question, kind: str, message: str) -> None:
        self.failures.append(
            {
                "system": self.name,
                "sample_id": question.sample_id,
                "qid": question.qid,
                "stage": "graph_query_entities",
                "kind": kind,
                "message": message,
            }
        )

    def _search_graph(
        self, store: GraphStore, question_vector: np.ndarray, entity_vectors: np.ndarray
    ) -> list[Edge]:
        """Both channels merged: up to relations_top_k edges, rendered in creation order."""
        # Entity-centric: similar nodes, then every edge in or out of them (invalid ones too: the timeline).
        node_scores: dict[str, float] = {}
        for vector in entity_vectors:
            for node, score in store.find_similar_nodes(vector, self.threshold, NODES_PER_QUERY_ENTITY):
                node_scores[node.id] = max(score, node_scores.get(node.id, -1.0))
        entity_channel = sorted(
            store.edges_of(list(node_scores)),
            key=lambda e: (
                -max(node_scores.get(e.source_id, -1.0), node_scores.get(e.destination_id, -1.0)),
                -_creation_order(e)[0],
            ),
        )
        # Semantic triplet: the question against every triplet text, best first.
        semantic_channel = [
            e for e, _ in store.search_edges(question_vector, self.triplet_threshold, self.relations_top_k)
        ]
        chosen: dict[str, Edge] = {}
        for edge in _interleave(entity_channel, semantic_channel):
            if len(chosen) >= self.relations_top_k:
                break
            chosen.setdefault(edge.id, edge)
        return sorted(chosen.values(), key=_creation_order)

    def graph_snapshot(self, sample_id: str) -> dict[str, tuple[list[Node], list[Edge]]]:
        """Current nodes and edges of each stream's graph (key: speaker name, or 'shared')."""
        return {key: (s.store.nodes(), s.store.edges()) for key, s in self._graphs.get(sample_id, {}).items()}


def _interleave(first: Sequence[Edge], second: Sequence[Edge]) -> list[Edge]:
    out: list[Edge] = []
    for i in range(max(len(first), len(second))):
        if i < len(first):
            out.append(first[i])
        if i < len(second):
            out.append(second[i])
    return out


def _safe_parse(parse: Any, data: dict[str, Any] | None) -> Any:
    """parse(data), or None when the reply has a shape the parser cannot read."""
    if data is None:
        return None
    try:
        return parse(data)
    except (TypeError, ValueError, AttributeError):
        return None
