"""FaissVectorStore: exact cosine search order, update/delete, save/load roundtrip."""

from __future__ import annotations

import numpy as np
import pytest

from mem0bench.memory.records import MemoryRecord
from mem0bench.memory.vector_store import FaissVectorStore


def _rec(i: str, text: str = "") -> MemoryRecord:
    return MemoryRecord(
        i, text or f"memory {i}", "Ann", "1:00 pm on 1 May, 2023", "1:00 pm on 1 May, 2023", ("D1:1",)
    )


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def store() -> FaissVectorStore[MemoryRecord]:
    s: FaissVectorStore[MemoryRecord] = FaissVectorStore()
    s.add("a", _unit(1, 0, 0), _rec("a"))
    s.add("b", _unit(1, 1, 0), _rec("b"))
    s.add("c", _unit(0, 1, 0), _rec("c"))
    s.add("d", _unit(0, 0, 1), _rec("d"))
    return s


def test_dim_learned_and_exact_order(store: FaissVectorStore[MemoryRecord]) -> None:
    assert store.dim == 3 and len(store) == 4
    hits = store.search(_unit(1, 0.2, 0), 3)
    assert [r.id for r, _ in hits] == ["a", "b", "c"]
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(float(_unit(1, 0.2, 0) @ _unit(1, 0, 0)), abs=1e-6)
    assert len(store.search(_unit(1, 0, 0), 99)) == 4
    assert store.search(_unit(1, 0, 0), 0) == []


def test_ties_break_oldest_first() -> None:
    s: FaissVectorStore[MemoryRecord] = FaissVectorStore(2)
    for i in "xyz":
        s.add(i, _unit(1, 0), _rec(i))
    assert [r.id for r, _ in s.search(_unit(1, 0), 3)] == ["x", "y", "z"]


def test_update_and_delete(store: FaissVectorStore[MemoryRecord]) -> None:
    store.update("d", _unit(1, 0, 0.01), _rec("d", "moved"))
    hits = store.search(_unit(1, 0, 0), 2)
    assert {r.id for r, _ in hits} == {"a", "d"}
    assert store.get("d") is not None and store.get("d").text == "moved"
    # Updating keeps the record's place in insertion order.
    assert [r.id for r in store.records()] == ["a", "b", "c", "d"]
    removed = store.delete("a")
    assert removed.id == "a" and store.get("a") is None and len(store) == 3
    assert [r.id for r, _ in store.search(_unit(1, 0, 0), 1)] == ["d"]
    with pytest.raises(KeyError):
        store.delete("a")
    with pytest.raises(KeyError):
        store.add("b", _unit(1, 0, 0), _rec("b"))
    with pytest.raises(ValueError):
        store.add("e", np.ones(5, np.float32), _rec("e"))


def test_empty_store_search() -> None:
    assert FaissVectorStore().search(np.ones(4, np.float32), 5) == []


def test_save_load_roundtrip(store: FaissVectorStore[MemoryRecord], tmp_path) -> None:
    store.delete("b")
    store.update("c", _unit(0, 1, 0.5), _rec("c", "changed"))
    store.save(tmp_path / "snap")
    assert not list((tmp_path / "snap").glob("*.tmp"))
    loaded = FaissVectorStore.load(tmp_path / "snap")
    assert len(loaded) == 3 and loaded.dim == 3
    assert [r.to_dict() for r in loaded.records()] == [r.to_dict() for r in store.records()]
    q = _unit(0.3, 0.6, 0.2)
    assert [(r.id, round(s, 5)) for r, s in loaded.search(q, 3)] == [
        (r.id, round(s, 5)) for r, s in store.search(q, 3)
    ]
    # New ids keep counting after the saved ones.
    loaded.add("e", _unit(1, 1, 1), _rec("e"))
    assert loaded.get("e") is not None


def test_save_empty(tmp_path) -> None:
    FaissVectorStore(8).save(tmp_path)
    loaded = FaissVectorStore.load(tmp_path)
    assert len(loaded) == 0 and loaded.dim == 8
