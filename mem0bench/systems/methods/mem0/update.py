"""Mem0's update phase (Algorithm 1): ADD / UPDATE / REPLACE / DELETE / NOOP decisions for candidate facts.

Two ways to ask (``method.update``):

* ``per_fact`` (the paper's Algorithm 1, default): each fact, in order, is compared with the s most similar
  memories of the *current* store and the LLM picks one operation through a function call.
* ``batched`` (a labelled deviation, as mem0's library does it): one call per message pair over all its facts
  and the union of their s most similar memories; the reply lists one operation per fact. Fewer calls and
  tokens; each decision sees the store as it was before the pair, not after the previous fact.

How a decision is applied (the same code for both):

* **Short ids.** The prompt shows memories as "0", "1", ...; the code maps them back. An id the model
  invents (not shown, or already removed earlier in the same batch): UPDATE and REPLACE become an ADD of
  their text, DELETE becomes a NOOP; all are logged as INVENTED_ID. A missing text means the fact.
* **UPDATE** keeps the memory's id and creation date, moves its vector with the text, dates it with the
  pair's session date and adds the pair's dia_ids, unless the information guard (see `guard`) rejects it:
  then the op is logged as UPDATE_REJECTED and the old memory is kept unchanged.
* **REPLACE** (a contradiction: things changed) removes the old memory and stores the new state as a new
  memory dated with the pair, so "prefer the most recent memory" has something to prefer. Logged as one
  REPLACE op (new id, old id, both texts).
* **DELETE** removes the memory and stores nothing; these are counted apart (``ops.DELETE`` in the ingest
  report, ``deletes_without_replacement`` in metrics.json) because they can erase a state. The op log keeps
  the text it had.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from mem0bench.common.text import one_line
from mem0bench.llm.structured import parse_reply
from mem0bench.llm.types import LLMCallError, ReplyShapeError, StructuredSpec
from mem0bench.memory.records import MemoryOp, MemoryRecord, OpKind
from mem0bench.memory.stream import PairContext
from mem0bench.prompts.update import (
    UPDATE_SPEC,
    Operation,
    batch_update_spec,
    build_batch_update_messages,
    build_update_messages,
)
from mem0bench.systems.methods.mem0.failures import RecordFailure, describe
from mem0bench.systems.methods.mem0.guard import adds_information
from mem0bench.systems.methods.mem0.streams import StreamState

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient

__all__ = ["UPDATE_MODES", "Decision", "MemoryUpdater", "parse_decision"]

UPDATE_MODES = ("per_fact", "batched")

Fact = tuple[str, np.ndarray]
"""A candidate fact and its embedding."""


@dataclass(frozen=True)
class Decision:
    """One operation the model chose, before it is mapped onto the store."""

    event: str
    short_id: str | None
    text: str
    """The text to store (the fact itself when the model gave none)."""


def parse_decision(data: Any, fact: str) -> Decision | None:
    """A reply object {event, id, text} as a Decision; None when it does not fit `Operation` (an event
    outside EVENTS, a reply that is not an object)."""
    try:
        operation = parse_reply(Operation, data)
    except ReplyShapeError:
        return None
    return Decision(operation.event, operation.id, one_line(operation.text or "") or fact)


class MemoryUpdater:
    """Algorithm 1 against a stream's store, per fact or batched per pair."""

    def __init__(
        self, client: LLMClient, s: int, record_failure: RecordFailure, mode: str = "per_fact"
    ) -> None:
        if mode not in UPDATE_MODES:
            raise ValueError(f"update must be one of {', '.join(UPDATE_MODES)}, got {mode!r}")
        self.client = client
        self.s = s
        """Similar memories shown for each fact."""
        self.record_failure = record_failure
        self.mode = mode

    async def apply_pair(self, ctx: PairContext, state: StreamState, facts: Sequence[Fact]) -> None:
        """Decide and apply every fact of one pair."""
        if not facts:
            return
        if self.mode == "batched":
            await self._apply_batch(ctx, state, facts)
            return
        for fact, vector in facts:
            await self.apply(ctx, state, fact, vector)

    async def apply(self, ctx: PairContext, state: StreamState, fact: str, vector: np.ndarray) -> None:
        """Per fact: ask for the operation on `fact` (embedded as `vector`) and apply it to `state.store`."""
        hits = state.store.search(vector, self.s)
        shown = {str(i): record for i, (record, _) in enumerate(hits)}
        messages = build_update_messages(
            fact=fact,
            fact_date=ctx.session_date_text,
            memories=[(sid, r.text, r.updated_at) for sid, r in shown.items()],
        )
        data = await self._call(ctx, state, messages, UPDATE_SPEC, fact)
        if data is None:
            return
        decision = parse_decision(data, fact)
        if decision is None:
            event = str(data.get("event") or "").strip().upper()
            self._malformed(ctx, state, f"event {event!r}", fact)
            return
        await self._execute(ctx, state, decision, shown, fact, vector)

    async def _apply_batch(self, ctx: PairContext, state: StreamState, facts: Sequence[Fact]) -> None:
        """Batched: one call over all facts and the union of their similar memories."""
        union: dict[str, MemoryRecord] = {}
        for _, vector in facts:
            for record, _ in state.store.search(vector, self.s):
                union.setdefault(record.id, record)
        shown = {str(i): record for i, record in enumerate(union.values())}
        texts = [fact for fact, _ in facts]
        label = " | ".join(texts)
        messages = build_batch_update_messages(
            facts=texts,
            fact_date=ctx.session_date_text,
            memories=[(sid, r.text, r.updated_at) for sid, r in shown.items()],
        )
        data = await self._call(ctx, state, messages, batch_update_spec(len(facts)), label)
        if data is None:
            return
        operations = data.get("operations")
        if not isinstance(operations, list):
            self._malformed(ctx, state, "no operations list", label)
            return
        decided: set[int] = set()
        for item in operations:
            index = item.get("fact") if isinstance(item, dict) else None
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(facts):
                self._malformed(ctx, state, f"operation for fact {index!r} of {len(facts)}", label)
                continue
            fact, vector = facts[index]
            decision = parse_decision(item, fact)
            if decision is None:
                self._malformed(ctx, state, f"event {item.get('event')!r}", fact)
                continue
            decided.add(index)
            await self._execute(ctx, state, decision, shown, fact, vector)
        for index, (fact, _) in enumerate(facts):
            if index not in decided:  # the model left it out: nothing changes, but the log says so
                state.log(replace(self._base(ctx, fact), requested="MISSING"))

    async def _call(
        self, ctx: PairContext, state: StreamState, messages: list[Any], spec: StructuredSpec, fact: str
    ) -> dict[str, Any] | None:
        try:
            reply = await self.client.structured(messages, spec, stage="ingest")
        except LLMCallError as error:
            self.record_failure(state.spec.key, ctx, "update", *describe(error), fact=fact, state=state)
            return None
        return reply.data if isinstance(reply.data, dict) else {}

    def _malformed(self, ctx: PairContext, state: StreamState, message: str, fact: str) -> None:
        self.record_failure(state.spec.key, ctx, "update", "malformed", message, fact=fact, state=state)

    @staticmethod
    def _base(ctx: PairContext, fact: str) -> MemoryOp:
        return MemoryOp(
            kind=OpKind.NOOP,
            memory_id=None,
            before=None,
            after=None,
            source_dia_ids=tuple(t.dia_id for t in ctx.pair),
            session_date=ctx.session_date_text,
            pair_index=ctx.index,
            fact=fact,
        )

    async def _execute(
        self,
        ctx: PairContext,
        state: StreamState,
        decision: Decision,
        shown: dict[str, MemoryRecord],
        fact: str,
        vector: np.ndarray,
    ) -> None:
        """Apply one decision. `shown` maps short ids to memories; it follows the changes made here."""
        base = self._base(ctx, fact)
        event, short_id, text = decision.event, decision.short_id, decision.text
        if event == "NOOP":
            state.log(base)
            return
        if event == "ADD":
            record = await self._add(ctx, state, text, fact, vector)
            if record is not None:
                state.log(replace(base, kind=OpKind.ADD, memory_id=record.id, after=record.text))
            return

        target = shown.get(short_id) if short_id is not None else None
        if target is None or short_id is None:
            # The model named a memory it was not shown: never guess which one it meant.
            op = replace(base, kind=OpKind.INVENTED_ID, requested=event, requested_id=short_id)
            if event in ("UPDATE", "REPLACE"):
                record = await self._add(ctx, state, text, fact, vector)
                if record is not None:
                    op = replace(op, memory_id=record.id, after=record.text)
            state.log(op)
            return

        base = replace(base, requested_id=short_id)
        if event == "DELETE":
            state.store.delete(target.id)
            del shown[short_id]
            state.log(replace(base, kind=OpKind.DELETE, memory_id=target.id, before=target.text))
            return
        if event == "REPLACE":
            # The new state first: if its embedding fails, the old memory stays (nothing is lost).
            record = await self._add(ctx, state, text, fact, vector)
            if record is None:
                return
            state.store.delete(target.id)
            del shown[short_id]
            state.log(
                replace(
                    base,
                    kind=OpKind.REPLACE,
                    memory_id=record.id,
                    before=target.text,
                    after=record.text,
                    replaced_id=target.id,
                )
            )
            return
        updated = await self._update(ctx, state, target, text, fact, vector, base)
        if updated is not None:
            shown[short_id] = updated

    async def _update(
        self,
        ctx: PairContext,
        state: StreamState,
        target: MemoryRecord,
        text: str,
        fact: str,
        fact_vector: np.ndarray,
        base: MemoryOp,
    ) -> MemoryRecord | None:
        """UPDATE `target` to `text`, if the information guard lets it; the updated record or None."""
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
            return None
        new_vector = await self._vector_for(ctx, state, text, fact, fact_vector)
        if new_vector is None:
            return None
        merged_ids = target.source_dia_ids + tuple(
            d for d in base.source_dia_ids if d not in target.source_dia_ids
        )
        updated = replace(target, text=text, updated_at=ctx.session_date_text, source_dia_ids=merged_ids)
        state.store.update(target.id, new_vector, updated)
        state.log(replace(base, kind=OpKind.UPDATE, memory_id=target.id, before=target.text, after=text))
        return updated

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
