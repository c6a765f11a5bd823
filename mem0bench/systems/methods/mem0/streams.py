"""Mem0's ingestion streams: which stores a conversation gets, and the state of one stream being built.

With ``per_speaker`` (the paper's harness) each conversation is ingested once per speaker, that speaker's
turns as 'user', the other's as 'assistant'; each speaker gets a store. Otherwise one shared store is built
from one stream in which facts about both speakers are extracted.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from mem0bench.data.model import Conversation
from mem0bench.memory.base import StepFailure
from mem0bench.memory.records import MemoryOp, MemoryRecord
from mem0bench.memory.vector_store import FaissVectorStore

__all__ = ["SHARED", "StreamSpec", "StreamState", "speaker_slug", "stream_specs"]

SHARED = "shared"
"""The store key (and folder name) of the one store built when ``per_speaker`` is false."""


def speaker_slug(name: str) -> str:
    """A file-name-safe form of a speaker name ('Caroline' -> 'caroline')."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "speaker"


@dataclass(frozen=True)
class StreamSpec:
    """Whose stream it is, and where its files go."""

    key: str
    """The store key: the speaker's name, or 'shared'."""
    user: str
    """The speaker whose turns are the 'user' messages (speaker_a in a shared stream)."""
    other: str
    slug: str
    """The folder name of the stream's snapshot (state_dir/<sample_id>/<slug>/)."""
    shared: bool

    @property
    def title(self) -> str:
        """The section header's name in the answer context."""
        return f"{self.user} and {self.other}" if self.shared else self.user

    def to_meta(self) -> dict[str, Any]:
        return {"user": self.user, "other": self.other, "slug": self.slug, "shared": self.shared}

    @classmethod
    def from_meta(cls, key: str, meta: dict[str, Any]) -> StreamSpec:
        return cls(key, meta["user"], meta["other"], meta["slug"], meta["shared"])


def stream_specs(conversation: Conversation, per_speaker: bool) -> list[StreamSpec]:
    """The streams of a conversation, speaker_a first."""
    a, b = conversation.speaker_a, conversation.speaker_b
    if not per_speaker:
        return [StreamSpec(SHARED, a, b, SHARED, True)]
    slug_a, slug_b = speaker_slug(a), speaker_slug(b)
    if slug_b == slug_a:  # two speakers whose names differ only in case or punctuation
        slug_b += "-2"
    return [StreamSpec(a, a, b, slug_a, False), StreamSpec(b, b, a, slug_b, False)]


class OpSink(Protocol):
    """Where a stream's operations are appended (persistence.OpsLog); a protocol, so this module does not
    import the persistence module that imports it."""

    def write(self, op: MemoryOp) -> None: ...


@dataclass
class StreamState:
    """One stream while it is being ingested: its store, op log, counters, summaries and failures."""

    sample_id: str
    spec: StreamSpec
    store: FaissVectorStore[MemoryRecord]
    ops_log: OpSink | None = None
    next_id: int = 0
    summaries: dict[int, str] = field(default_factory=lambda: {0: ""})
    """S_k by refresh number k (S_0 = '')."""
    failures: list[StepFailure] = field(default_factory=list)
    op_counts: Counter[str] = field(default_factory=Counter)
    pairs: int = 0

    def new_id(self) -> str:
        # Deterministic ids (not uuids), so the same replies give the same store, ids included.
        self.next_id += 1
        return f"{self.spec.slug}-{self.next_id:04d}"

    def log(self, op: MemoryOp) -> None:
        """Count the operation and append it to the stream's op log."""
        self.op_counts[op.kind.value] += 1
        if self.ops_log is not None:
            self.ops_log.write(op)
