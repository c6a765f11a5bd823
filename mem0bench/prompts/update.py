"""Memory update (Mem0, Algorithm 1): decisions for candidate facts against similar memories.

Two forms of the same decision:

* **per fact** (the paper's Algorithm 1, our default): one call for one fact and its s most similar
  memories; the reply is one operation.
* **batched** (a labelled deviation, `method.update=batched`): one call for all facts of a message pair and
  the union of their similar memories; the reply is a list of operations, each naming the fact it is about.

Two operation sets (`method.ops`):

* **replace** (our default): ADD, UPDATE, REPLACE, DELETE, NOOP. A contradiction caused by a change is a
  REPLACE (the new state is stored, the old memory removed); DELETE is kept for a memory that is plain wrong.
* **paper** (Algorithm 1 as published): ADD, UPDATE, DELETE, NOOP. A contradiction is a DELETE, which removes
  the memory and stores nothing; REPLACE is not offered (the schema's enum leaves it out).

Existing memories are shown with short integer ids ("0", "1", ...); the caller maps them back to the real
ids, because models copy short ids reliably and mangle long ones.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any, Literal, get_args

from pydantic import Field, field_validator

from mem0bench.llm.structured import ReplyModel, spec_from_model
from mem0bench.llm.types import Message, StructuredSpec
from mem0bench.prompts.files import PromptFile

Event = Literal["ADD", "UPDATE", "REPLACE", "DELETE", "NOOP"]
EVENTS: tuple[Event, ...] = get_args(Event)
PaperEvent = Literal["ADD", "UPDATE", "DELETE", "NOOP"]
"""The paper's operation set (Algorithm 1): no REPLACE."""

Ops = Literal["replace", "paper"]
OPS: tuple[Ops, ...] = get_args(Ops)


def _event(value: Any) -> str:
    return str(value or "").strip().upper()


def _id(value: Any) -> str | None:
    return None if value is None else str(value).strip().strip("\"'[]")


def _text(value: Any) -> str | None:
    return str(value) if value else None


class Operation(ReplyModel):
    """One decision of the update reply: the schema sent and the validation of what came back.

    Validation is as forgiving as the wording allows: the event in any case and spacing, an id given as a
    number or in quotes, a missing id or text (or an empty text) read as none.
    """

    event: Event
    id: str | None = Field(
        default=None,
        description="For UPDATE, REPLACE and DELETE: the id of the existing memory; otherwise null.",
    )
    text: str | None = Field(
        default=None,
        description=(
            "For ADD: the memory to store. For UPDATE: the full merged memory. For REPLACE: the memory "
            "that states what is true now. Otherwise null."
        ),
    )

    _tidy_event = field_validator("event", mode="before")(_event)
    _tidy_id = field_validator("id", mode="before")(_id)
    _tidy_text = field_validator("text", mode="before")(_text)


class PaperOperation(Operation):
    """One decision under the paper's operation set: the same validation, REPLACE left out of the enum."""

    event: PaperEvent
    id: str | None = Field(
        default=None, description="For UPDATE and DELETE: the id of the existing memory; otherwise null."
    )
    text: str | None = Field(
        default=None,
        description="For ADD: the memory to store. For UPDATE: the full merged memory. Otherwise null.",
    )


def operation_model(ops: Ops) -> type[Operation]:
    """The reply model of one decision under the operation set `ops`."""
    return PaperOperation if ops == "paper" else Operation


UPDATE_SPEC = spec_from_model(
    "decide_memory_operation", "Decide how the memory store changes for the new fact.", Operation, mode=None
)
PAPER_UPDATE_SPEC = spec_from_model(
    "decide_memory_operation",
    "Decide how the memory store changes for the new fact.",
    PaperOperation,
    mode=None,
)


def update_spec(ops: Ops = "replace") -> StructuredSpec:
    """The per-fact reply's spec under the operation set `ops`."""
    return PAPER_UPDATE_SPEC if ops == "paper" else UPDATE_SPEC


BATCH_UPDATE_NAME = "decide_memory_operations"


@functools.cache
def batch_operations_model(n_facts: int, ops: Ops = "replace") -> type[ReplyModel]:
    """The batched reply for `n_facts` facts: exactly n operations, each naming its fact (0..n-1)."""

    class FactNumber(ReplyModel):
        fact: int = Field(ge=0, le=max(n_facts - 1, 0), description="The number of the new fact.")

    # FactNumber last among the bases puts `fact` first among the fields, as the schema always had it.
    class NumberedOperation(operation_model(ops), FactNumber):  # type: ignore[misc]
        pass

    class Operations(ReplyModel):
        operations: list[NumberedOperation] = Field(min_length=n_facts, max_length=n_facts)

    return Operations


@functools.cache
def batch_update_spec(n_facts: int, ops: Ops = "replace") -> StructuredSpec:
    """The batched reply's spec for `n_facts` facts (cached: one schema object per count and set)."""
    return spec_from_model(
        BATCH_UPDATE_NAME,
        "Decide how the memory store changes for each of the new facts.",
        batch_operations_model(n_facts, ops),
        mode=None,
    )


_OPERATIONS = """- ADD: the fact is new information that no existing memory holds. Set text to the fact (you may \
tidy its wording), id to null.
- UPDATE: an existing memory is about the same thing and the fact adds to it or makes it more \
precise. Set id to that memory's id and text to ONE merged memory that keeps every detail of both, \
the more informative wording winning; keep dates. Do not UPDATE when the fact says less than the memory.
- REPLACE: the fact contradicts an existing memory because things changed (a move, a new job, a \
break-up, a changed plan or opinion). Set id to the memory that is no longer true and text to the \
memory that states what is true now, so the store keeps the newest state.
- DELETE: an existing memory turns out to be simply wrong and the fact holds nothing worth keeping. \
Set id to that memory's id, text to null. When the fact says what is true instead, use REPLACE.
- NOOP: the fact is already known (same or less information) or not worth keeping. id and text null."""

# The paper's set: a contradiction removes the memory, whatever the reason, and nothing takes its place.
_PAPER_OPERATIONS = """- ADD: the fact is new information that no existing memory holds. Set text to the fact (you may \
tidy its wording), id to null.
- UPDATE: an existing memory is about the same thing and the fact adds to it or makes it more \
precise. Set id to that memory's id and text to ONE merged memory that keeps every detail of both, \
the more informative wording winning; keep dates. Do not UPDATE when the fact says less than the memory.
- DELETE: the fact contradicts an existing memory. Set id to that memory's id, text to null; the \
memory is removed.
- NOOP: the fact is already known (same or less information) or not worth keeping. id and text null."""

_SINGLE = """You keep a memory store accurate and free of duplicates. You get one NEW FACT and the \
EXISTING MEMORIES most similar to it, each with an id. Choose exactly one operation:

{operations}

Use only ids from the list. Call decide_memory_operation once."""

_BATCH = """You keep a memory store accurate and free of duplicates. You get numbered NEW FACTS, \
learned together, and the EXISTING MEMORIES most similar to them, each with an id. For every new fact, \
in order, choose exactly one operation and give the fact's number with it:

{operations}

Decide the facts in order, as if each earlier decision had already been applied. Name each existing \
memory in at most one operation. Use only ids from the list. Call decide_memory_operations once."""

_SYSTEM = {
    "replace": _SINGLE.format(operations=_OPERATIONS),
    "paper": _SINGLE.format(operations=_PAPER_OPERATIONS),
}
_BATCH_SYSTEM = {
    "replace": _BATCH.format(operations=_OPERATIONS),
    "paper": _BATCH.format(operations=_PAPER_OPERATIONS),
}


def _listing(memories: Sequence[tuple[str, str, str]]) -> str:
    if not memories:
        return "[] (the store has no similar memory)"
    return json.dumps(
        [{"id": sid, "text": text, "date": date} for sid, text, date in memories],
        ensure_ascii=False,
        indent=1,
    )


def build_update_messages(
    *,
    fact: str,
    fact_date: str,
    memories: Sequence[tuple[str, str, str]],
    ops: Ops = "replace",
    template: PromptFile | None = None,
) -> list[Message]:
    """`memories` are (short id, text, date) triples, most similar first; `template`
    (method.update_prompt_file) replaces our wording."""
    if template is not None:
        return template.render(fact=fact, facts=fact, date=fact_date, memories=_listing(memories))
    body = f"EXISTING MEMORIES:\n{_listing(memories)}\n\nNEW FACT (learned on {fact_date}):\n{fact}"
    return [{"role": "system", "content": _SYSTEM[ops]}, {"role": "user", "content": body}]


def build_batch_update_messages(
    *,
    facts: Sequence[str],
    fact_date: str,
    memories: Sequence[tuple[str, str, str]],
    ops: Ops = "replace",
    template: PromptFile | None = None,
) -> list[Message]:
    """All facts of one pair (numbered from 0) against the union of their similar memories."""
    numbered = "\n".join(f"{i}. {fact}" for i, fact in enumerate(facts))
    if template is not None:
        return template.render(fact=numbered, facts=numbered, date=fact_date, memories=_listing(memories))
    body = f"EXISTING MEMORIES:\n{_listing(memories)}\n\nNEW FACTS (learned on {fact_date}):\n{numbered}"
    return [{"role": "system", "content": _BATCH_SYSTEM[ops]}, {"role": "user", "content": body}]
