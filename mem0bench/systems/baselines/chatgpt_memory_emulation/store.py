"""One conversation's saved notes on disk: `state_dir/<sample_id>/chatgpt_notes/` (notes.json, done.json).

done.json is written last and names the format, the settings the notes were written with and a
fingerprint of the conversation; a folder without it, or with other settings or another conversation, is
not trusted (the conversation is ingested again, which the LLM cache makes free).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from mem0bench.common.files import atomic_write
from mem0bench.memory.base import SavedStore
from mem0bench.memory.records import MemoryRecord
from mem0bench.memory.saved_state import DoneMarker, conversation_folder
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
        return conversation_folder(self.state_dir, sample_id, "chatgpt_notes")

    def _marker(self, sample_id: str) -> DoneMarker:
        return DoneMarker(self.folder(sample_id) / "done.json", _FORMAT)

    def save(self, sample_id: str, state: SavedState, print_: str, *, done: bool) -> None:
        """Write the notes; the done marker (last) only when `done` (no failure a rerun could fix)."""
        folder = self.folder(sample_id)
        folder.mkdir(parents=True, exist_ok=True)
        marker = self._marker(sample_id)
        marker.withdraw()
        rows = [n.to_dict() for n in state.notes]
        atomic_write(folder / "notes.json", json.dumps(rows, ensure_ascii=False, indent=1))
        if done:
            marker.write(print_, {"n_notes": len(rows), "failures": state.failures, "counts": state.counts})

    def load(self, sample_id: str, print_: str) -> SavedState | None:
        """The finished notes of a conversation, or None if absent, unfinished, stale or unreadable."""
        folder = self.folder(sample_id)
        meta = self._marker(sample_id).read(print_)
        if meta is None:
            return None
        try:
            rows = json.loads((folder / "notes.json").read_text(encoding="utf-8"))
            notes = tuple(Note.from_dict(row) for row in rows)
            counts = {str(k): int(v) for k, v in dict(meta.get("counts") or {}).items()}
            failures = int(meta.get("failures", 0))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        if len(notes) != meta.get("n_notes"):
            return None
        return SavedState(notes=notes, failures=failures, counts=counts)

    def stores(self, sample_id: str) -> list[SavedStore]:
        """The saved notes as `mem0bench memories` shows them: one store per speaker they are about, in
        the order the notes name them ([] when the conversation has none saved)."""
        try:
            rows = json.loads((self.folder(sample_id) / "notes.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        complete = self._marker(sample_id).written() is not None
        by_speaker: dict[str, list[Note]] = {}
        for note in map(Note.from_dict, rows):
            by_speaker.setdefault(note.speaker, []).append(note)
        stores = []
        for speaker, notes in by_speaker.items():
            slug = speaker.lower().replace(" ", "_")
            memories = tuple(
                MemoryRecord(f"{slug}-{i:04d}", n.text, speaker, n.date, n.date)
                for i, n in enumerate(notes, 1)
            )
            stores.append(SavedStore(speaker, slug, complete, memories))
        return stores
