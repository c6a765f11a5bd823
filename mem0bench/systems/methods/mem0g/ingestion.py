"""Mem0^g's graph step for one message pair: entities, relations, node resolution, conflicts, new edges.

An entity extractor and then a relations generator (function calls) turn the pair into triplets (source,
relation, destination). Each triplet is stored: source and destination names are embedded and mapped to an
existing node (see `nodes`: cosine >= `reuse_threshold`, literals such as dates only on equal text), else to
a new node; the edge keeps the names as extracted, whatever node they map to; the valid relations touching
those nodes go to a conflict detector and update resolver (one LLM call) that names the ones the new
relation makes obsolete; those are marked invalid as of the session date, never deleted; then the new edge
is added, dated and with its dia_ids.

Decisions where the paper is silent:

* **Node reuse** is ">= reuse_threshold" (the paper says "exceeds"; equality of float similarities is
  measure-zero in practice, and a test pins the boundary). The best-scoring node wins; ties go to the older
  node. The retrieval threshold (`threshold`) is a separate setting.
* **Exact duplicates** (a valid edge with the same source node, relation and destination node) are skipped
  without an LLM call. Self-loops (source and destination resolve to the same node) are skipped.
* **Conflict candidates**: the valid edges touching either node; when there are more than
  `conflict_candidates`, the ones whose triplet text is most similar to the new triplet's are shown.
* **Recurring events.** The resolver sees triplets only, so (race, happened_on, 20 May 2023) after
  (race, happened_on, 7 May 2023) looks to it like a corrected date, and it tends to name the first edge
  obsolete. A second time for the same thing (same source node, same relation, another time entity as
  destination) is as often a recurrence (a yearly race, a second visit). So when the resolver names such
  edges, a recurrence check (one more call, only then) shows them with the pair's messages, and only the
  ones the messages contradict (moved, postponed, corrected) are invalidated; the rest stay valid
  (``graph.recurrences_kept``). The resolver's own request is unchanged.
* **Failures** (LLMCallError, or a reply with the wrong shape) are recorded with a `graph_*` stage and the
  pair is skipped; a failed resolver call still adds the new edge (information is kept; nothing is
  invalidated).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from mem0bench.llm.types import FailureKind, LLMCallError, StructuredSpec
from mem0bench.memory.graph.base import Edge, GraphStore, Node, triplet_text
from mem0bench.memory.stream import PairContext
from mem0bench.prompts.graph import (
    ENTITIES_SPEC,
    OBSOLETE_SPEC,
    RECURRENCE_SPEC,
    RELATIONS_SPEC,
    build_entity_messages,
    build_obsolete_messages,
    build_recurrence_messages,
    build_relations_messages,
    parse_contradicted,
    parse_entities,
    parse_obsolete,
    parse_or_none,
    parse_relations,
)
from mem0bench.systems.methods.mem0.failures import RecordFailure, describe
from mem0bench.systems.methods.mem0g.nodes import is_time_entity, resolve_node
from mem0bench.systems.methods.mem0g.persistence import GraphStream
from mem0bench.systems.methods.mem0g.retrieval import creation_order

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient

__all__ = ["GraphIngestion", "PairTriplets"]

_ALL = 1_000_000
"""A search limit above any stream's edge count: rank them all."""


@dataclass(frozen=True)
class PairTriplets:
    """What the graph step extracts from one pair before it touches the graph."""

    entities: tuple[tuple[str, str], ...] = ()
    triplets: tuple[tuple[str, str, str], ...] = ()
    names: tuple[str, ...] = ()
    """The triplets' distinct source and destination names, in order: the first rows of `vectors`."""
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    """The names' embeddings, then one per triplet text."""
    failures: tuple[tuple[str, FailureKind, str], ...] = ()
    """(stage, kind, message) of the failed steps, recorded when the chain reaches the pair."""
    embedded: bool = True
    """False when the embedding call failed (the triplets are counted, nothing is stored)."""


class GraphIngestion:
    """The graph step of Mem0^g, applied pair by pair to one stream's graph."""

    def __init__(
        self,
        client: LLMClient,
        reuse_threshold: float,
        conflict_candidates: int,
        record_failure: RecordFailure,
    ) -> None:
        self.client = client
        self.reuse_threshold = reuse_threshold
        self.conflict_candidates = conflict_candidates
        self.record_failure = record_failure

    async def ingest_pair(self, stream: GraphStream, key: str, ctx: PairContext, *, shared: bool) -> None:
        """Extract the pair's triplets and store each in `stream`'s graph."""
        await self.store_pair(stream, key, ctx, await self.extract_pair(ctx, shared=shared))

    async def extract_pair(self, ctx: PairContext, *, shared: bool) -> PairTriplets:
        """The pair's entities, triplets and their embeddings: calls that read the pair alone, never the
        graph, so they may run ahead of the stream's graph updates. Failures are held in the result."""
        date = ctx.session_date_text
        failures: list[tuple[str, FailureKind, str]] = []
        entities_messages = build_entity_messages(
            user=ctx.speaker, other=ctx.other, pair=ctx.pair, session_date=date, shared=shared
        )
        entities_reply = await self._ask("graph_entities", ENTITIES_SPEC, entities_messages, failures)
        entities = parse_or_none(parse_entities, entities_reply)
        if entities_reply is not None and entities is None:
            failures.append(("graph_entities", "malformed", "entities reply has the wrong shape"))
        if not entities:
            return PairTriplets(failures=tuple(failures))
        relations_messages = build_relations_messages(
            user=ctx.speaker,
            other=ctx.other,
            pair=ctx.pair,
            session_date=date,
            entities=entities,
            shared=shared,
        )
        relations_reply = await self._ask("graph_relations", RELATIONS_SPEC, relations_messages, failures)
        triplets = parse_or_none(parse_relations, relations_reply)
        if relations_reply is not None and triplets is None:
            failures.append(("graph_relations", "malformed", "relations reply has the wrong shape"))
        if not triplets:
            return PairTriplets(failures=tuple(failures))

        # One embedding call for every name and triplet text of the pair.
        names = list(dict.fromkeys(n for s, _, d in triplets for n in (s, d)))
        texts = [triplet_text(*t) for t in triplets]
        try:
            vectors = np.asarray(await self.client.embed(names + texts, stage="ingest"), dtype=np.float32)
        except LLMCallError as error:
            failures.append(("graph_embed", *describe(error)))
            return PairTriplets(triplets=tuple(triplets), failures=tuple(failures), embedded=False)
        return PairTriplets(
            entities=tuple(entities),
            triplets=tuple(triplets),
            names=tuple(names),
            vectors=vectors,
            failures=tuple(failures),
        )

    async def store_pair(self, stream: GraphStream, key: str, ctx: PairContext, found: PairTriplets) -> None:
        """Store the pair's triplets in `stream`'s graph: node resolution, conflicts, new edges (reads and
        changes the graph, so on the stream's chain, in pair order)."""
        for stage, kind, message in found.failures:
            self._fail(stream, key, ctx, stage, kind, message)
        if not found.triplets:
            return
        stream.counts["triplets"] += len(found.triplets)
        if not found.embedded:
            return
        date = ctx.session_date_text
        types = {name.lower(): etype for name, etype in found.entities}
        names = list(found.names)
        vectors = found.vectors
        name_vectors = dict(zip(names, vectors[: len(names)]))
        dia_ids = tuple(t.dia_id for t in ctx.pair)
        for (source_name, relation, destination_name), text_vector in zip(
            found.triplets, vectors[len(names) :]
        ):
            source = self._resolve_node(stream, source_name, types, name_vectors[source_name], date)
            destination = self._resolve_node(
                stream, destination_name, types, name_vectors[destination_name], date
            )
            if source.id == destination.id:
                stream.counts["skipped_self_loops"] += 1
                continue
            await self._store_relation(
                stream,
                key,
                ctx,
                source,
                relation,
                destination,
                (source_name, destination_name),
                text_vector,
                dia_ids,
            )

    def _resolve_node(
        self, stream: GraphStream, name: str, types: Mapping[str, str], vector: np.ndarray, date: str
    ) -> Node:
        """The existing node `name` maps to (see `nodes.resolve_node`), or a new node."""
        entity_type = types.get(name.lower(), "entity")
        node = resolve_node(stream.store, name, entity_type, vector, self.reuse_threshold)
        if node is not None:
            stream.counts["nodes_reused"] += 1
            return node
        stream.counts["nodes_created"] += 1
        return stream.store.add_node(name, entity_type, vector, date)

    async def _store_relation(
        self,
        stream: GraphStream,
        key: str,
        ctx: PairContext,
        source: Node,
        relation: str,
        destination: Node,
        names: tuple[str, str],
        text_vector: np.ndarray,
        dia_ids: tuple[str, ...],
    ) -> None:
        """Conflict detection and resolution for one triplet (invalidate, never delete), then the new edge,
        which keeps the extracted `names` (source, destination)."""
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
                new=(names[0], relation, names[1]), learned_on=date, existing=shown
            )
            reply = await self._call(stream, key, ctx, "graph_resolve", OBSOLETE_SPEC, messages)
            parsed = parse_or_none(lambda data: parse_obsolete(data, len(candidates)), reply)
            if reply is not None and parsed is None:
                self._fail(
                    stream, key, ctx, "graph_resolve", "malformed", "resolver reply has the wrong shape"
                )
            obsolete, invented = parsed or ([], [])
            stream.counts["resolver_calls"] += 1
            stream.counts["invented_ids"] += len(invented)
            named = [candidates[short_id] for short_id in obsolete]
            recurring = [e for e in named if same_thing_another_time(e, source, relation, destination)]
            kept = await self._recurrences_kept(stream, key, ctx, (names[0], relation, names[1]), recurring)
            for edge in named:
                if edge.id in kept:
                    continue
                stream.store.invalidate(edge.id, date)
                stream.counts["edges_invalidated"] += 1
        stream.store.add_edge(
            source,
            relation,
            destination,
            text_vector,
            date,
            dia_ids,
            source_name=names[0],
            destination_name=names[1],
        )
        stream.counts["edges_added"] += 1

    async def _recurrences_kept(
        self,
        stream: GraphStream,
        key: str,
        ctx: PairContext,
        new: tuple[str, str, str],
        recurring: list[Edge],
    ) -> set[str]:
        """The ids of `recurring` edges (named obsolete, same thing at another time) that stay valid: those
        the pair's messages do not contradict. A failed check keeps them all (nothing is invalidated)."""
        if not recurring:
            return set()
        messages = build_recurrence_messages(
            new=new,
            learned_on=ctx.session_date_text,
            earlier=[
                (i, (e.source_name, e.relation, e.destination_name), e.created_at)
                for i, e in enumerate(recurring)
            ],
            pair=ctx.pair,
        )
        reply = await self._call(stream, key, ctx, "graph_resolve", RECURRENCE_SPEC, messages)
        parsed = parse_or_none(lambda data: parse_contradicted(data, len(recurring)), reply)
        if reply is not None and parsed is None:
            self._fail(stream, key, ctx, "graph_resolve", "malformed", "recurrence reply has the wrong shape")
        contradicted, invented = parsed or ([], [])
        stream.counts["recurrence_checks"] += 1
        stream.counts["invented_ids"] += len(invented)
        kept = {e.id for i, e in enumerate(recurring) if i not in contradicted}
        stream.counts["recurrences_kept"] += len(kept)
        return kept

    def _conflict_candidates(
        self, store: GraphStore, touching: list[Edge], text_vector: np.ndarray
    ) -> list[Edge]:
        """The valid edges shown to the resolver: all touching ones, or the most similar `conflict_candidates`."""
        if len(touching) <= self.conflict_candidates:
            return touching
        wanted = {e.id for e in touching}
        # Rank by triplet-text similarity; a full ordering of the store's edges is cheap at LOCOMO scale.
        ranked = [e for e, _ in store.search_edges(text_vector, -1.0, _ALL) if e.id in wanted]
        return sorted(ranked[: self.conflict_candidates], key=creation_order)

    async def _call(
        self,
        stream: GraphStream,
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
            self._fail(stream, key, ctx, stage, *describe(error))
            return None
        return reply.data if isinstance(reply.data, dict) else {}

    async def _ask(
        self,
        stage: str,
        spec: StructuredSpec,
        messages: list[dict[str, Any]],
        failures: list[tuple[str, FailureKind, str]],
    ) -> dict[str, Any] | None:
        """`_call` for the steps that run ahead: a failure is held in `failures`, not recorded yet."""
        try:
            reply = await self.client.structured(messages, spec, stage="ingest")
        except LLMCallError as error:
            failures.append((stage, *describe(error)))
            return None
        return reply.data if isinstance(reply.data, dict) else {}

    def _fail(
        self, stream: GraphStream, key: str, ctx: PairContext, stage: str, kind: FailureKind, message: str
    ) -> None:
        # Kept with the graph (graph_stream.json) rather than Mem0's stream meta; Mem0G's
        # stream_complete_extra reads them, so a transient graph failure still withholds the done marker.
        stream.failures.append(self.record_failure(key, ctx, stage, kind, message))


def same_thing_another_time(edge: Edge, source: Node, relation: str, destination: Node) -> bool:
    """True when `edge` gives the new relation's source, by the same relation, another time: both
    destinations are times (the new one by its node's type or name, the old one by its name or a digit)."""
    return (
        edge.source_id == source.id
        and edge.relation == relation
        and edge.destination_id != destination.id
        and is_time_entity(destination.name, destination.type)
        and (is_time_entity(edge.destination_name, "") or any(ch.isdigit() for ch in edge.destination_name))
    )
