"""A system's saved state of one conversation: its folder, its lock, and the marker that says it is done.

Every system that keeps a conversation's memory on disk (RAG's index, the notes of the ChatGPT-memory
emulation, the libraries' stores) follows one rule: the state is written first, then a small JSON marker
naming the layout `format` and the conversation's `fingerprint` (`Conversation.fingerprint` of the
settings that shaped it); a later process trusts the state only when the marker is there and both match.
One conversation is ingested (or restored) by one task at a time: `ConversationLocks`.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem0bench.common.files import atomic_write

__all__ = ["ConversationLocks", "DoneMarker", "conversation_folder"]


def conversation_folder(state_dir: Path, sample_id: str, name: str) -> Path:
    """`state_dir/<sample_id>/<name>/`, the sample id made safe as one folder name."""
    safe = sample_id.replace(os.sep, "_").replace("/", "_").replace("\\", "_")
    return Path(state_dir) / safe / name


class ConversationLocks:
    """One asyncio lock per conversation: its ingest and the restore before a retrieve never overlap."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def __call__(self, sample_id: str) -> asyncio.Lock:
        return self._locks.setdefault(sample_id, asyncio.Lock())


@dataclass(frozen=True)
class DoneMarker:
    """The marker file `path`, written last: {"format": format, "fingerprint": ..., **what the system
    keeps beside}. Its name and keys are those the systems always wrote, so saved states stay readable."""

    path: Path
    format: int = 1

    def read(self, fingerprint: str) -> dict[str, Any] | None:
        """The marker's contents when it stands for `fingerprint` in this format; else None (absent,
        unreadable, another layout or another conversation/settings: the state is rebuilt)."""
        meta = self.written()
        return meta if meta is not None and meta.get("fingerprint") == fingerprint else None

    def written(self) -> dict[str, Any] | None:
        """The marker's contents in this format, whatever fingerprint it names (what an inspection of a
        saved state asks: is it finished?); else None."""
        try:
            meta = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return meta if isinstance(meta, dict) and meta.get("format") == self.format else None

    def write(
        self, fingerprint: str, extra: Mapping[str, Any] | None = None, *, indent: int | None = None
    ) -> None:
        """Mark the state done (call it after everything else is written)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        meta = {"format": self.format, "fingerprint": fingerprint, **dict(extra or {})}
        atomic_write(self.path, json.dumps(meta, ensure_ascii=False, indent=indent))

    def withdraw(self) -> None:
        """The state is about to be rewritten: until the marker is written again it is not done."""
        self.path.unlink(missing_ok=True)
