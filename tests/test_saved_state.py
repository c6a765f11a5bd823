"""One saved-state rule for every system that keeps a conversation on disk (memory/saved_state.py): the
markers the six systems wrote before the helper existed read back as done; anything else is not done."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mem0bench.memory.saved_state import ConversationLocks, DoneMarker, conversation_folder

# Markers as each system wrote them before the shared helper (file name, contents).
WRITTEN_BEFORE = {
    "rag": ("done.json", '{"format": 1, "chunk_size": 256, "n_chunks": 3, "dim": 8, "fingerprint": "F"}'),
    "chatgpt_notes": (
        "done.json",
        '{"format": 1, "fingerprint": "F", "n_notes": 2, "failures": 1, "counts": {"notes": 2}}',
    ),
    "amem": ("done.json", '{"format": 1, "fingerprint": "F", "memory_tokens": 9, "details": {"notes": 4}}'),
    "zep_graphiti": (
        "graphiti.json",
        '{\n "format": 1,\n "group_id": "g",\n "falkordb": "h:1",\n "fingerprint": "F",\n "episodes": {},\n'
        ' "memory_tokens": 3,\n "failures": 2,\n "details": {}\n}',
    ),
    "langmem": (
        "done.json",
        '{"format": 1, "fingerprint": "F", "memory_tokens": 5, "details": {"memories": 2}}',
    ),
    "mem0_oss": ("done", '{"format": 1, "fingerprint": "F"}'),
}


@pytest.mark.parametrize("system", sorted(WRITTEN_BEFORE))
def test_markers_written_before_the_helper_still_read_as_done(tmp_path: Path, system: str) -> None:
    name, text = WRITTEN_BEFORE[system]
    (tmp_path / name).write_text(text, encoding="utf-8")
    marker = DoneMarker(tmp_path / name, 1)
    assert marker.read("F") == json.loads(text)
    assert marker.read("other") is None  # another conversation or other settings: rebuilt
    assert DoneMarker(tmp_path / name, 2).read("F") is None  # another layout: rebuilt


def test_a_marker_round_trips_and_is_withdrawn(tmp_path: Path) -> None:
    marker = DoneMarker(tmp_path / "sub" / "done.json", 3)
    assert marker.read("F") is None  # absent
    marker.write("F", {"n": 1})
    assert json.loads(marker.path.read_text(encoding="utf-8")) == {"format": 3, "fingerprint": "F", "n": 1}
    assert marker.read("F") == {"format": 3, "fingerprint": "F", "n": 1}
    marker.withdraw()
    assert marker.read("F") is None
    marker.path.write_text("{not json", encoding="utf-8")
    assert marker.read("F") is None  # unreadable: not done, never a crash
    marker.path.write_text("[1, 2]", encoding="utf-8")
    assert marker.read("F") is None


def test_a_conversation_folder_is_one_folder_per_sample(tmp_path: Path) -> None:
    assert conversation_folder(tmp_path, "conv-26", "rag_256") == tmp_path / "conv-26" / "rag_256"
    assert conversation_folder(tmp_path, "a/b\\c", "x") == tmp_path / "a_b_c" / "x"


def test_one_lock_per_conversation() -> None:
    locks = ConversationLocks()
    assert locks("a") is locks("a") and locks("a") is not locks("b")

    async def overlap() -> int:
        inside, most = 0, 0

        async def work() -> None:
            nonlocal inside, most
            async with locks("a"):
                inside += 1
                most = max(most, inside)
                await asyncio.sleep(0.01)
                inside -= 1

        await asyncio.gather(work(), work(), work())
        return most

    assert asyncio.run(overlap()) == 1
