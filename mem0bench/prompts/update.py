"""Memory update (Mem0, Algorithm 1): one decision for one candidate fact against similar memories.

Existing memories are shown with short integer ids ("0", "1", ...); the caller maps them back to the real
ids, because models copy short ids reliably and mangle long ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mem0bench.llm.types import Message, StructuredSpec

EVENTS = ("ADD", "UPDATE", "DELETE", "NOOP")

UPDATE_SPEC = StructuredSpec(
    name="decide_memory_operation",
    description="Decide how the memory store changes for the new fact.",
    parameters={
        "type": "object",
        "properties": {
            "event": {"type": "string", "enum": list(EVENTS)},
            "id": {
                "type": ["string", "null"],
                "description": "For UPDATE and DELETE: the id of the existing memory; otherwise null.",
            },
            "text": {
                "type": ["string", "null"],
                "description": "For ADD: the memory to store. For UPDATE: the full merged memory. Otherwise null.",
            },
        },
        "required": ["event", "id", "text"],
        "additionalProperties": False,
    },
)

_SYSTEM = """You keep a memory store accurate and free of duplicates. You get one NEW FACT and the \
EXISTING MEMORIES most similar to it, each with an id. Choose exactly one operation:

- ADD: the fact is new information that no existing memory holds. Set text to the fact (you may \
tidy its wording), id to null.
- UPDATE: an existing memory is about the same thing and the fact adds to it or makes it more \
precise. Set id to that memory's id and text to ONE merged memory that keeps every detail of both, \
the more informative wording winning; keep dates. Do not UPDATE when the fact says less than the memory.
- DELETE: the fact contradicts an existing memory, so that memory is no longer true. Set id to that \
memory's id, text to null.
- NOOP: the fact is already known (same or less information) or not worth keeping. id and text null.

Use only ids from the list. Call decide_memory_operation once."""


def build_update_messages(
    *, fact: str, fact_date: str, memories: Sequence[tuple[str, str, str]]
) -> list[Message]:
    """`memories` are (short id, text, date) triples, most similar first."""
    listing = json.dumps(
        [{"id": sid, "text": text, "date": date} for sid, text, date in memories],
        ensure_ascii=False,
        indent=1,
    )
    body = (
        f"EXISTING MEMORIES:\n{listing if memories else '[] (the store has no similar memory)'}\n\n"
        f"NEW FACT (learned on {fact_date}):\n{fact}"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": body}]
