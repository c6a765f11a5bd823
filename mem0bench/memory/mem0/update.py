"""Mem0's update phase (Algorithm 1): one ADD / UPDATE / DELETE / NOOP decision per candidate fact.

Each fact, in order, is compared with the s most similar memories of the *current* store and the LLM picks
the operation through a function call. How its decision is applied:

* **Short ids.** The update prompt shows memories as "0", "1", ...; the code maps them back. An id the model
  invents (not shown): UPDATE becomes an ADD of its text, DELETE becomes a NOOP; both are logged as
  INVENTED_ID. ADD (or UPDATE) without text uses the candidate fact.
* **UPDATE** keeps the memory's id and creation date, moves its vector with the text, dates it with the
  pair's session date and adds the pair's dia_ids, unless the information guard (see `guard`) rejects it:
  then the op is logged as UPDATE_REJECTED and the old memory is kept unchanged.
* **DELETE** removes the memory (Mem0 deletes; only Mem0^g keeps invalidated relations). The op log keeps
  the text it had.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from mem0bench.common.text import one_line
from mem0bench.llm.types import LLMCallError
from mem0bench.memory.mem0.failures import RecordFailure, describe
from mem0bench.memory.mem0.guard import adds_information
from mem0bench.memory.mem0.streams import StreamState
from mem0bench.memory.records import MemoryOp, MemoryRecord, OpKind
from mem0bench.memory.stream import PairContext
from mem0bench.prompts.update import EVENTS, UPDATE_SPEC, build_update_messages

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient

__all__ = ["MemoryUpdater"]


class MemoryUpdater:
    """Algorithm 1 for one fact at a time against a stream's store."""

    def __init__(self, client: LLMClient, s: int, record_failure: RecordFailure) -> None:
        self.client = client
        self.s = s
        """Similar memories shown to each decision."""
        self.record_failure = record_failure

    async def apply(self, ctx: PairContext, state: StreamState, fact: str, vector: np.ndarray) -> None:
        """Ask for the operation on `fact` (embedded as `vector`) and apply it to `state.store`."""
        hits = state.store.search(vector, self.s)
        shown = {str(i): record for i, (record, _) in enumerate(hits)}
        messages = build_update_messages(
            fact=fact,
            fact_date=ctx.session_date_text,
            memories=[(sid, r.text, r.updated_at) for sid, r in shown.items()],
        )
        key = state.spec.key
        try:
            reply = await self.client.structured(messages, UPDATE_SPEC, stage="ingest")
        except LLMCallError as error:
            self.record_failure(key, ctx, "update", *describe(error), fact=fact, state=state)
            return
        data: dict[str, Any] = reply.data if isinstance(reply.data, dict) else {}
        event = str(data.get("event") or "").strip().upper()
        if event not in EVENTS:
            self.record_failure(key, ctx, "update", "malformed", f"event {event!r}", fact=fact, state=state)
            return
        raw_id = data.get("id")
        short_id = None if raw_id is None else str(raw_id).strip().strip("\"'[]")
        text = one_line(str(data.get("text") or "")) or fact
        base = MemoryOp(
            kind=OpKind.NOOP,
            memory_id=None,
            before=None,
            after=None,
            source_dia_ids=tuple(t.dia_id for t in ctx.pair),
            session_date=ctx.session_date_text,
            pair_index=ctx.index,
            fact=fact,
        )

        if event == "NOOP":
            state.log(base)
            return
        if event == "ADD":
            record = await self._add(ctx, state, text, fact, vector)
            if record is not None:
                state.log(replace(base, kind=OpKind.ADD, memory_id=record.id, after=record.text))
            return

        target = shown.get(short_id) if short_id is not None else None
        if target is None:
            # The model named a memory it was not shown: never guess which one it meant.
            op = replace(base, kind=OpKind.INVENTED_ID, requested=event, requested_id=short_id)
            if event == "UPDATE":
                record = await self._add(ctx, state, text, fact, vector)
                if record is not None:
                    op = replace(op, memory_id=record.id, after=record.text)
            state.log(op)
            return

        if event == "DELETE":
            state.store.delete(target.id)
            state.log(
                replace(
                    base, kind=OpKind.DELETE, memory_id=target.id, before=target.text, requested_id=short_id
                )
            )
            return
        await self._update(ctx, state, target, text, fact, vector, replace(base, requested_id=short_id))

    async def _update(
        self,
        ctx: PairContext,
        state: StreamState,
        target: MemoryRecord,
        text: str,
        fact: str,
        fact_vector: np.ndarray,
        base: MemoryOp,
    ) -> None:
        """UPDATE `target` to `text`, if the information guard lets it."""
        if not adds_information(text, target.text):
            state.log(
                replace(
                    base,
                    kind=OpKind.UPDATE_REJECTED,
                    memory_id=target.id,
                    before=target.text,
                    after=text,
                    requested="UPDATE",
                )
            )
            return
        new_vector = await self._vector_for(ctx, state, text, fact, fact_vector)
        if new_vector is None:
            return
        merged_ids = target.source_dia_ids + tuple(
            d for d in base.source_dia_ids if d not in target.source_dia_ids
        )
        updated = replace(target, text=text, updated_at=ctx.session_date_text, source_dia_ids=merged_ids)
        state.store.update(target.id, new_vector, updated)
        state.log(replace(base, kind=OpKind.UPDATE, memory_id=target.id, before=target.text, after=text))

    async def _vector_for(
        self, ctx: PairContext, state: StreamState, text: str, fact: str, fact_vector: np.ndarray
    ) -> np.ndarray | None:
        """The embedding of `text`: the fact's own when the text is the fact, else one embed call."""
        if text == fact:
            return fact_vector
        try:
            return np.asarray((await self.client.embed([text], stage="ingest"))[0], dtype=np.float32)
        except LLMCallError as error:
            self.record_failure(state.spec.key, ctx, "embed", *describe(error), fact=fact, state=state)
            return None

    async def _add(
        self, ctx: PairContext, state: StreamState, text: str, fact: str, fact_vector: np.ndarray
    ) -> MemoryRecord | None:
        """A new memory dated with the pair's session date; None (recorded) if its embedding failed."""
        vector = await self._vector_for(ctx, state, text, fact, fact_vector)
        if vector is None:
            return None
        record = MemoryRecord(
            id=state.new_id(),
            text=text,
            speaker=ctx.speaker,
            created_at=ctx.session_date_text,
            updated_at=ctx.session_date_text,
            source_dia_ids=tuple(t.dia_id for t in ctx.pair),
        )
        state.store.add(record.id, vector, record)
        return record
