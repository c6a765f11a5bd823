"""One conversation's saved notes on disk: `state_dir/<sample_id>/chatgpt_notes/` (notes.json, done.json).

done.json is written last and names the format, the settings the notes were written with and a
fingerprint of the conversation; a folder without it, or with other settings or another conversation, is
not trusted (the conversation is ingested again, which the LLM cache makes free).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from mem0bench.common.files import atomic_write
from mem0bench.systems.baselines.chatgpt_memory_emulation.notes import Note

__all__ = ["NoteStore", "SavedState"]

_FORMAT = 1  # bump when the on-disk layout changes


@dataclass(frozen=True)
class SavedState:
    """A conversation's notes and what its ingestion counted."""

    notes: tuple[Note, ...]
    failures: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    """IngestReport.details counts that only the ingestion knew (failures per kind, truncated notes)."""


class NoteStore:
    """Reads and writes one system's saved notes under its state folder."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir)

    def folder(self, sample_id: str) -> Path:
        safe = sample_id.replace(os.sep, "_").replace("/", "_")
        return self.state_dir / safe / "chatgpt_notes"

    def save(self, sample_id: str, state: SavedState, print_: str, *, done: bool) -> None:
        """Write the notes; the done marker (last) only when `done` (no failure a rerun could fix)."""
        folder = self.folder(sample_id)
        folder.mkdir(parents=True, exist_ok=True)
        marker = folder / "done.json"
        marker.unlink(missing_ok=True)
        rows = [n.to_dict() for n in state.notes]
        atomic_write(folder / "notes.json", json.dumps(rows, ensure_ascii=False, indent=1))
        if done:
            meta = {
                "format": _FORMAT,
                "fingerprint": print_,
                "n_notes": len(rows),
                "failures": state.failures,
                "counts": state.counts,
            }
            atomic_write(marker, json.dumps(meta))

    def load(self, sample_id: str, print_: str) -> SavedState | None:
        """The finished notes of a conversation, or None if absent, unfinished, stale or unreadable."""
        folder = self.folder(sample_id)
        try:
            meta = json.loads((folder / "done.json").read_text(encoding="utf-8"))
            if meta.get("format") != _FORMAT or meta.get("fingerprint") != print_:
                return None
            rows = json.loads((folder / "notes.json").read_text(encoding="utf-8"))
            notes = tuple(Note.from_dict(row) for row in rows)
            counts = {str(k): int(v) for k, v in dict(meta.get("counts") or {}).items()}
            failures = int(meta.get("failures", 0))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        if len(notes) != meta.get("n_notes"):
            return None
        return SavedState(notes=notes, failures=failures, counts=counts)
