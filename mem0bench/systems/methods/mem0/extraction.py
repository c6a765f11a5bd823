"""Mem0's extraction phase for one message pair: candidate facts, embedded in one call."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mem0bench.llm.types import LLMCallError, ReplyShapeError
from mem0bench.memory.stream import PairContext
from mem0bench.prompts.extraction import EXTRACTION_SPEC, build_extraction_messages, parse_facts
from mem0bench.systems.methods.mem0.failures import RecordFailure, describe
from mem0bench.systems.methods.mem0.streams import StreamState

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient

__all__ = ["extract_facts"]


async def extract_facts(
    client: LLMClient, ctx: PairContext, state: StreamState, record_failure: RecordFailure
) -> list[tuple[str, np.ndarray]]:
    """The pair's candidate facts with their embeddings, in the model's order.

    The prompt holds the summary S, the previous m messages with their session dates, the pair and its
    session date. A failed call or an unreadable reply is recorded and yields no facts.
    """
    key = state.spec.key
    messages = build_extraction_messages(
        user=ctx.speaker,
        other=ctx.other,
        summary=ctx.summary,
        previous=ctx.previous,
        previous_dates=ctx.previous_dates,
        pair=ctx.pair,
        session_date=ctx.session_date_text,
        shared=state.spec.shared,
    )
    try:
        reply = await client.structured(messages, EXTRACTION_SPEC, stage="ingest")
    except LLMCallError as error:
        record_failure(key, ctx, "extraction", *describe(error), state=state)
        return []
    try:
        facts = parse_facts(reply.data)
    except ReplyShapeError as error:  # a reply the client let through unshaped
        record_failure(key, ctx, "extraction", "malformed", str(error), state=state)
        return []
    if not facts:
        return []
    try:
        vectors = await client.embed(facts, stage="ingest")
    except LLMCallError as error:
        record_failure(key, ctx, "embed", *describe(error), state=state)
        return []
    return [(fact, np.asarray(vector, dtype=np.float32)) for fact, vector in zip(facts, vectors)]
