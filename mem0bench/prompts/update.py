"""Memory update (Mem0, Algorithm 1): decisions for candidate facts against similar memories.

Two forms of the same decision:

* **per fact** (the paper's Algorithm 1, our default): one call for one fact and its s most similar
  memories; the reply is one operation.
* **batched** (a labelled deviation, `method.update=batched`): one call for all facts of a message pair and
  the union of their similar memories; the reply is a list of operations, each naming the fact it is about.

Existing memories are shown with short integer ids ("0", "1", ...); the caller maps them back to the real
ids, because models copy short ids reliably and mangle long ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mem0bench.llm.types import Message, StructuredSpec

EVENTS = ("ADD", "UPDATE", "REPLACE", "DELETE", "NOOP")

_OPERATION_PROPERTIES = {
    "event": {"type": "string", "enum": list(EVENTS)},
    "id": {
        "type": ["string", "null"],
        "description": "For UPDATE, REPLACE and DELETE: the id of the existing memory; otherwise null.",
    },
    "text": {
        "type": ["string", "null"],
        "description": (
            "For ADD: the memory to store. For UPDATE: the full merged memory. For REPLACE: the memory "
            "that states what is true now. Otherwise null."
        ),
    },
}

UPDATE_SPEC = StructuredSpec(
    name="decide_memory_operation",
    description="Decide how the memory store changes for the new fact.",
    parameters={
        "type": "object",
        "properties": _OPERATION_PROPERTIES,
        "required": ["event", "id", "text"],
        "additionalProperties": False,
    },
)

BATCH_UPDATE_NAME = "decide_memory_operations"


def batch_update_spec(n_facts: int) -> StructuredSpec:
    """The batched reply for `n_facts` facts: exactly one operation per fact, each naming its fact."""
    return StructuredSpec(
        name=BATCH_UPDATE_NAME,
        description="Decide how the memory store changes for each of the new facts.",
        parameters={
            "type": "object",
            "properties": {
                "operations": {
                    "type": "array",
                    "minItems": n_facts,
                    "maxItems": n_facts,
                    "items": {
                        "type": "object",
                        "properties": {
                            "fact": {
                                "type": "integer",
                                "minimum": 0,
                                "maximum": max(n_facts - 1, 0),
                                "description": "The number of the new fact.",
                            },
                            **_OPERATION_PROPERTIES,
                        },
                        "required": ["fact", "event", "id", "text"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["operations"],
            "additionalProperties": False,
        },
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

_SYSTEM = f"""You keep a memory store accurate and free of duplicates. You get one NEW FACT and the \
EXISTING MEMORIES most similar to it, each with an id. Choose exactly one operation:

{_OPERATIONS}

Use only ids from the list. Call decide_memory_operation once."""

_BATCH_SYSTEM = f"""You keep a memory store accurate and free of duplicates. You get numbered NEW FACTS, \
learned together, and the EXISTING MEMORIES most similar to them, each with an id. For every new fact, \
in order, choose exactly one operation and give the fact's number with it:

{_OPERATIONS}

Decide the facts in order, as if each earlier decision had already been applied. Name each existing \
memory in at most one operation. Use only ids from the list. Call decide_memory_operations once."""


def _listing(memories: Sequence[tuple[str, str, str]]) -> str:
    if not memories:
        return "[] (the store has no similar memory)"
    return json.dumps(
        [{"id": sid, "text": text, "date": date} for sid, text, date in memories],
        ensure_ascii=False,
        indent=1,
    )


def build_update_messages(
    *, fact: str, fact_date: str, memories: Sequence[tuple[str, str, str]]
) -> list[Message]:
    """`memories` are (short id, text, date) triples, most similar first."""
    body = f"EXISTING MEMORIES:\n{_listing(memories)}\n\nNEW FACT (learned on {fact_date}):\n{fact}"
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": body}]


def build_batch_update_messages(
    *, facts: Sequence[str], fact_date: str, memories: Sequence[tuple[str, str, str]]
) -> list[Message]:
    """All facts of one pair (numbered from 0) against the union of their similar memories."""
    numbered = "\n".join(f"{i}. {fact}" for i, fact in enumerate(facts))
    body = f"EXISTING MEMORIES:\n{_listing(memories)}\n\nNEW FACTS (learned on {fact_date}):\n{numbered}"
    return [{"role": "system", "content": _BATCH_SYSTEM}, {"role": "user", "content": body}]
