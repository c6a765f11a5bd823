"""Mem0^g's graph retrieval: two channels per speaker, merged, rendered as a timeline.

* **Entity-centric**: the question's entities (an LLM call) -> nodes at least `threshold` similar -> their
  incoming and outgoing edges, invalid ones too (the timeline). Node matching is the filter; the edges rank
  by BM25 relevance of their triplet text to the question (`rank`), then by the similarity of the node that
  brought them, newest first among equals.
* **Semantic triplet**: the question's embedding against each edge's triplet-text embedding, at least
  `triplet_threshold`, best first.
* **Merge**: the two ranked lists are interleaved (entity channel first), deduplicated by edge and cut at
  `relations_top_k`; the chosen relations are rendered in creation order, invalid ones with the date they
  stopped being true. A failed query entity extraction leaves the semantic channel alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from mem0bench.data.model import Conversation, Question
from mem0bench.llm.types import FailureKind, LLMCallError
from mem0bench.memory.graph import InProcessGraphStore
from mem0bench.memory.graph.base import Edge, GraphStore
from mem0bench.prompts.graph import (
    QUERY_ENTITIES_SPEC,
    build_query_entity_messages,
    parse_or_none,
    parse_query_entities,
)
from mem0bench.systems.methods.mem0.failures import describe
from mem0bench.systems.methods.mem0g.rank import bm25_scores

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient

__all__ = [
    "NODES_PER_QUERY_ENTITY",
    "creation_order",
    "interleave",
    "query_entities",
    "render_relations",
    "run_store_work",
    "search_graph",
]

NODES_PER_QUERY_ENTITY = 5
"""Entity channel: similar nodes taken per query entity (all at least `threshold`)."""

T = TypeVar("T")


def creation_order(edge: Edge) -> tuple[int, str]:
    # Store ids are "e<sequence>": numeric order is creation order (lexicographic order is not).
    digits = edge.id.lstrip("e")
    return (int(digits), edge.id) if digits.isdigit() else (0, edge.id)


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


async def query_entities(
    client: LLMClient,
    conversation: Conversation,
    question: Question,
    on_failure: Callable[[FailureKind, str], None],
) -> list[str]:
    """The entities the question is about; [] (reported as (kind, message)) when the call fails."""
    messages = build_query_entity_messages(question=question.question, speakers=conversation.speakers)
    try:
        reply = await client.structured(messages, QUERY_ENTITIES_SPEC, stage="search")
    except LLMCallError as error:
        on_failure(*describe(error))
        return []
    parsed = parse_or_none(parse_query_entities, reply.data if isinstance(reply.data, dict) else {})
    if parsed is None:
        on_failure("malformed", "query entities reply has the wrong shape")
    return parsed or []


def search_graph(
    store: GraphStore,
    question: str,
    question_vector: np.ndarray,
    entity_vectors: np.ndarray,
    *,
    threshold: float,
    triplet_threshold: float,
    top_k: int,
) -> list[Edge]:
    """Both channels merged: up to `top_k` edges, in creation order."""
    node_scores: dict[str, float] = {}
    # All entities in one pass over the node matrix (the same hits, in the same order, as one scan each).
    for hits in store.find_similar_nodes_many(entity_vectors, threshold, NODES_PER_QUERY_ENTITY):
        for node, score in hits:
            node_scores[node.id] = max(score, node_scores.get(node.id, -1.0))
    candidates = store.edges_of(list(node_scores))
    relevance = dict(zip((e.id for e in candidates), bm25_scores(question, [e.text for e in candidates])))
    entity_channel = sorted(
        candidates,
        key=lambda e: (
            -relevance[e.id],
            -max(node_scores.get(e.source_id, -1.0), node_scores.get(e.destination_id, -1.0)),
            -creation_order(e)[0],
        ),
    )
    semantic_channel = [e for e, _ in store.search_edges(question_vector, triplet_threshold, top_k)]
    chosen: dict[str, Edge] = {}
    for edge in interleave(entity_channel, semantic_channel):
        if len(chosen) >= top_k:
            break
        chosen.setdefault(edge.id, edge)
    return sorted(chosen.values(), key=creation_order)


def interleave(first: Sequence[Edge], second: Sequence[Edge]) -> list[Edge]:
    """first[0], second[0], first[1], second[1], ... (the longer list's tail at the end)."""
    out: list[Edge] = []
    for i in range(max(len(first), len(second))):
        if i < len(first):
            out.append(first[i])
        if i < len(second):
            out.append(second[i])
    return out


async def run_store_work(store: GraphStore, work: Callable[[], T]) -> T:
    """Run sync store work: inline for the in-process store (sub-millisecond), in a worker thread for a
    server-backed store, so its network round trips do not stall other questions' event-loop work."""
    if isinstance(store, InProcessGraphStore):
        return work()
    return await asyncio.to_thread(work)
