"""`mem0bench memories` asks the run's system what it saved (its `saved_memories`), not a file layout; and
one done-marker format (memory/saved_state.py) for every system, earlier markers still read as done."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem0bench.cli.memories import memories_main
from mem0bench.memory.records import MemoryRecord
from mem0bench.memory.saved_state import DoneMarker
from mem0bench.systems.baselines.chatgpt_memory_emulation.notes import Note
from mem0bench.systems.baselines.chatgpt_memory_emulation.store import NoteStore, SavedState
from mem0bench.systems.baselines.chatgpt_memory_emulation.system import ChatGPTMemoryEmulation
from mem0bench.systems.baselines.rag import RAG
from mem0bench.systems.external.amem.system import AMem
from mem0bench.systems.external.langmem.system import LangMem
from mem0bench.systems.external.mem0_oss import state as oss_state
from mem0bench.systems.external.mem0_oss.system import Mem0OSS
from mem0bench.systems.methods.mem0 import persistence


def _config(run_dir: Path, system: type, name: str) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    target = f"{system.__module__}.{system.__qualname__}"
    (run_dir / "config.yaml").write_text(f"method:\n  _target_: {target}\n  name: {name}\n", encoding="utf-8")


def _mem0_oss_run(run_dir: Path) -> None:
    """A mem0_oss run's speaker folders as the adapter leaves them (mem0's own files left out)."""
    _config(run_dir, Mem0OSS, "mem0_oss")
    for slug, speaker, text in (("maya", "Maya", "Likes pottery"), ("tomas", "Tomas", "Runs a bakery")):
        folder = run_dir / "state" / "mini-1" / slug
        folder.mkdir(parents=True)
        oss_state.write_records(folder, speaker, [{"id": f"{slug}-1", "memory": text, "metadata": {}}])
        oss_state.write_meta(folder, {"key": speaker, "speaker": speaker})
    oss_state.mark_done(run_dir / "state" / "mini-1" / "maya", "F")  # Tomas's stream never finished


def test_memories_of_a_mem0_oss_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    _mem0_oss_run(run_dir)
    assert memories_main([str(run_dir), "--conversation", "mini-1"]) == 0
    out = capsys.readouterr().out
    assert "== Maya: 1 memories\n" in out and "Likes pottery" in out
    assert "== Tomas: 1 memories (incomplete: no done marker)" in out
    assert memories_main([str(run_dir), "--conversation", "mini-1", "--speaker", "tomas", "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["speaker"] == "Tomas" and doc["complete"] is False and doc["relations"] is None
    assert [m["text"] for m in doc["memories"]] == ["Runs a bakery"]
    # The marker is saved_state's, in the file name every system uses.
    assert DoneMarker(run_dir / "state" / "mini-1" / "maya" / "done.json").read("F") is not None
    assert memories_main([str(run_dir), "--conversation", "conv-9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "available: mini-1" in err


def test_a_system_that_shows_no_memories_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    _config(run_dir, RAG, "rag_256")
    (run_dir / "state" / "mini-1").mkdir(parents=True)
    assert memories_main([str(run_dir), "--conversation", "mini-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the rag_256 system" in err and "saved_memories" in err


def test_a_run_without_a_readable_system_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    (run_dir / "state").mkdir(parents=True)
    assert memories_main([str(run_dir), "--conversation", "mini-1"]) == 2
    assert "no config.yaml" in capsys.readouterr().err
    (run_dir / "config.yaml").write_text("method:\n  _target_: my_gone_module.Memory\n", encoding="utf-8")
    assert memories_main([str(run_dir), "--conversation", "mini-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot import the system my_gone_module.Memory" in err


def test_an_old_run_config_names_a_moved_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run folders written before the systems moved name `mem0bench.memory.mem0.Mem0`."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(
        "method:\n  _target_: mem0bench.memory.mem0.Mem0\n", encoding="utf-8"
    )
    directory = run_dir / "state" / "conv-1" / "ann"
    directory.mkdir(parents=True)
    record = MemoryRecord(id="ann-0001", text="Ann likes tea", speaker="Ann", created_at="d", updated_at="d")
    (directory / "records.json").write_text(json.dumps({"entries": [{"record": record.to_dict()}]}))
    (directory / "done").write_text("ok\n")  # Mem0's marker before saved_state's
    assert memories_main([str(run_dir), "--conversation", "conv-1"]) == 0
    out = capsys.readouterr().out
    assert "== ann: 1 memories\n" in out and "Ann likes tea" in out


def test_mem0_writes_saved_states_marker_and_reads_its_old_one(tmp_path: Path) -> None:
    legacy = tmp_path / "old"
    legacy.mkdir()
    (legacy / "done").write_text("ok\n")
    assert persistence.is_done(legacy)
    persistence.withdraw_done(legacy)  # a stream about to be rewritten: no marker of either kind is left
    assert not persistence.is_done(legacy) and not (legacy / "done").exists()

    fresh = tmp_path / "new"
    fresh.mkdir()
    persistence.mark_done(fresh, "Ann")
    assert json.loads((fresh / "done.json").read_text()) == {"format": 1, "fingerprint": "Ann"}
    assert persistence.is_done(fresh) and not (fresh / "done").exists()


def test_mem0_oss_reads_its_old_marker_name(tmp_path: Path) -> None:
    DoneMarker(tmp_path / "done", oss_state.FORMAT).write("F")  # where it was written before issue 31
    assert oss_state.is_done(tmp_path, "F") and not oss_state.is_done(tmp_path, "other settings")
    assert oss_state.is_finished(tmp_path)


def test_memories_of_the_chatgpt_emulation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    _config(run_dir, ChatGPTMemoryEmulation, "chatgpt_memory_emulation")
    notes = (Note("Ann", 1, "8 May, 2023", "Ann has a dog"), Note("Bob", 1, "8 May, 2023", "Bob bakes"))
    notes += (Note("Ann", 2, "9 May, 2023", "Ann moved to Oslo"),)
    NoteStore(run_dir / "state").save("conv-1", SavedState(notes), "F", done=True)
    assert memories_main([str(run_dir), "--conversation", "conv-1", "--speaker", "ann", "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["speaker"] == "Ann" and doc["complete"] is True
    assert [(m["text"], m["created_at"]) for m in doc["memories"]] == [
        ("Ann has a dog", "8 May, 2023"),
        ("Ann moved to Oslo", "9 May, 2023"),
    ]


def test_memories_of_an_amem_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    _config(run_dir, AMem, "amem")
    folder = run_dir / "state" / "conv-1" / "amem"
    folder.mkdir(parents=True)
    note = {"id": "n1", "timestamp": "202305081356", "content": "Ann: I got a dog", "context": "pets",
            "keywords": ["dog"], "tags": [], "links": [], "linked": False}  # fmt: skip
    (folder / "notes.jsonl").write_text(json.dumps(note) + "\n", encoding="utf-8")
    assert memories_main([str(run_dir), "--conversation", "conv-1"]) == 0
    out = capsys.readouterr().out
    assert "== shared: 1 memories (incomplete: no done marker)" in out and "Ann: I got a dog" in out


def test_memories_of_a_langmem_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """store.json as langmem/persistence.save writes it, read without LangGraph."""
    run_dir = tmp_path / "run"
    _config(run_dir, LangMem, "langmem")
    folder = run_dir / "state" / "conv-1" / "langmem"
    folder.mkdir(parents=True)
    items = [
        {"namespace": ["memories", "Maya"], "key": "k1", "value": {"kind": "Memory", "content": {"content": "Maya paints"}},
         "created_at": "2023-05-08T13:56:00", "updated_at": "2023-05-08T13:56:00"},
        {"namespace": ["memories", "Tomas"], "key": "k2", "value": {"content": "Tomas bakes"},
         "created_at": "2023-05-09T10:00:00", "updated_at": "2023-05-09T10:00:00"},
    ]  # fmt: skip
    notes = [
        {
            "namespace": ["memories", "Maya"],
            "key": "k1",
            "date": "8 May, 2023",
            "dia_id": "D1:3",
            "speaker": "Maya",
        }
    ]
    body = {"items": items, "vector_rows": [], "annotations": notes}
    (folder / "store.json").write_text(json.dumps(body), encoding="utf-8")
    DoneMarker(folder / "done.json").write("F")
    assert memories_main([str(run_dir), "--conversation", "conv-1", "--json"]) == 0
    maya, tomas = json.loads(capsys.readouterr().out)
    assert maya["speaker"] == "Maya" and maya["complete"] is True
    assert [(m["text"], m["created_at"], m["source_dia_ids"]) for m in maya["memories"]] == [
        ("Maya paints", "8 May, 2023", ["D1:3"])
    ]
    assert [m["text"] for m in tomas["memories"]] == ["Tomas bakes"]
