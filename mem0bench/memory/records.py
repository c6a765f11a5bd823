"""Mem0's stored memories and the log of operations that shaped them (frozen, JSON-friendly)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class MemoryRecord:
    """One memory of one speaker's store."""

    id: str
    text: str
    speaker: str
    """Whose store holds it (the speaker the stream was built for; 'shared' stores name speaker_a)."""
    created_at: str
    """Session date text of the pair that created it, e.g. '1:56 pm on 8 May, 2023'."""
    updated_at: str
    """Session date text of the last accepted UPDATE (= created_at when never updated). This is the
    timestamp shown to the answer model: it dates the newest information in the text."""
    source_dia_ids: tuple[str, ...] = ()
    """The dia_ids of every pair that contributed to the text, oldest first."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "speaker": self.speaker,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "source_dia_ids": list(self.source_dia_ids),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryRecord:
        return cls(
            id=str(data["id"]),
            text=str(data["text"]),
            speaker=str(data.get("speaker", "")),
            created_at=str(data.get("created_at", "")),
            updated_at=str(data.get("updated_at", data.get("created_at", ""))),
            source_dia_ids=tuple(data.get("source_dia_ids", ())),
        )


class OpKind(str, Enum):
    """What happened to the store for one candidate fact."""

    ADD = "ADD"
    UPDATE = "UPDATE"
    REPLACE = "REPLACE"
    """A contradiction: the old memory was removed and the new state stored as a new memory, dated with the
    pair (`memory_id` is the new memory, `replaced_id` the removed one)."""
    DELETE = "DELETE"
    """The memory was removed and nothing stored in its place (counted apart: it can erase a state)."""
    NOOP = "NOOP"
    UPDATE_REJECTED = "UPDATE_REJECTED"
    """The model asked for an UPDATE whose text adds nothing to the old memory: the old one is kept."""
    INVENTED_ID = "INVENTED_ID"
    """The model named an id that was not shown: UPDATE became an ADD, DELETE became a NOOP."""


@dataclass(frozen=True)
class MemoryOp:
    """One row of a stream's operation log (<speaker>.ops.jsonl)."""

    kind: OpKind
    memory_id: str | None
    before: str | None
    """The memory's text before the operation (UPDATE, UPDATE_REJECTED, REPLACE, DELETE)."""
    after: str | None
    """The memory's text after it (ADD, UPDATE, REPLACE, INVENTED_ID turned into an ADD)."""
    source_dia_ids: tuple[str, ...]
    """The dia_ids of the pair that produced the fact."""
    session_date: str
    pair_index: int
    fact: str = ""
    """The candidate fact the decision was about."""
    requested: str | None = None
    """The event the model asked for, when it differs from `kind` (guards, invented ids)."""
    requested_id: str | None = None
    """The short id the model gave (as shown in the update prompt)."""
    replaced_id: str | None = None
    """REPLACE: the id of the memory the new one took the place of."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "memory_id": self.memory_id,
            "before": self.before,
            "after": self.after,
            "source_dia_ids": list(self.source_dia_ids),
            "session_date": self.session_date,
            "pair_index": self.pair_index,
            "fact": self.fact,
            "requested": self.requested,
            "requested_id": self.requested_id,
            "replaced_id": self.replaced_id,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryOp:
        return cls(
            kind=OpKind(data["kind"]),
            memory_id=data.get("memory_id"),
            before=data.get("before"),
            after=data.get("after"),
            source_dia_ids=tuple(data.get("source_dia_ids", ())),
            session_date=str(data.get("session_date", "")),
            pair_index=int(data.get("pair_index", -1)),
            fact=str(data.get("fact", "")),
            requested=data.get("requested"),
            requested_id=data.get("requested_id"),
            replaced_id=data.get("replaced_id"),
        )
