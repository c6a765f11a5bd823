"""An exact in-process vector store: faiss inner product over L2-normalized vectors (= cosine).

String ids are mapped to int64 faiss ids internally. Records ride along in a dict; the vectors live in the
index only (a snapshot reconstructs them from it): a second copy in a dict doubled the store's largest part,
6 KB a memory at 1,536 dimensions, ~0.3 GB for a 1M-token conversation's memories.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import faiss
import numpy as np

from mem0bench.common.files import atomic_write, atomic_write_npy
from mem0bench.common.vectors import normalize
from mem0bench.memory.records import MemoryRecord

# One query against a few hundred vectors is microseconds of work; faiss's OpenMP threads turn it into
# milliseconds (thread wake-up, and a spinning idle thread that eats the other core). Searches here are
# single queries from many concurrent streams, so one thread each is the fast setting.
faiss.omp_set_num_threads(1)

R = TypeVar("R")

RECORDS_FILE = "records.json"
VECTORS_FILE = "vectors.npy"


def read_saved_records(directory: Path) -> list[MemoryRecord] | None:
    """The records a snapshot in `directory` holds (RECORDS_FILE's `entries`, the layout `save` writes),
    read without the vectors or an index; None when the folder has no snapshot."""
    try:
        doc = json.loads((Path(directory) / RECORDS_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return [MemoryRecord.from_dict(entry["record"]) for entry in doc.get("entries", [])]


class FaissVectorStore(Generic[R]):
    """add / update / delete / get / search over (string id, vector, record) entries."""

    def __init__(
        self,
        dim: int | None = None,
        *,
        encode: Callable[[Any], dict[str, Any]] = MemoryRecord.to_dict,
        decode: Callable[[dict[str, Any]], Any] = MemoryRecord.from_dict,
    ) -> None:
        self.dim = dim
        self._encode = encode
        self._decode = decode
        self._index: faiss.IndexIDMap2 | None = None
        self._int_of: dict[str, int] = {}
        self._str_of: dict[int, str] = {}
        self._records: dict[str, R] = {}
        self._next = 0
        if dim is not None:
            self._make_index(dim)

    def _make_index(self, dim: int) -> None:
        self.dim = dim
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))

    def _check(self, vector: np.ndarray) -> np.ndarray:
        v = normalize(vector)
        if self._index is None:
            self._make_index(int(v.shape[0]))  # dim learned from the first vector
        if v.shape[0] != self.dim:
            raise ValueError(f"vector has dim {v.shape[0]}, store has dim {self.dim}")
        return v

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, id: str) -> bool:
        return id in self._records

    def add(self, id: str, vector: np.ndarray, record: R) -> None:
        if id in self._records:
            raise KeyError(f"id already in store: {id}")
        v = self._check(vector)
        int_id = self._next
        self._next += 1
        assert self._index is not None
        self._index.add_with_ids(v.reshape(1, -1), np.array([int_id], dtype=np.int64))
        self._int_of[id], self._str_of[int_id] = int_id, id
        self._records[id] = record

    def update(self, id: str, vector: np.ndarray | None, record: R) -> None:
        """Replace the record (and the vector, unless None) of an existing id."""
        if id not in self._records:
            raise KeyError(f"no such id: {id}")
        if vector is not None:
            v = self._check(vector)
            int_id = self._int_of[id]
            assert self._index is not None
            self._index.remove_ids(np.array([int_id], dtype=np.int64))  # type: ignore[arg-type]  # SWIG takes arrays too
            self._index.add_with_ids(v.reshape(1, -1), np.array([int_id], dtype=np.int64))
        self._records[id] = record

    def delete(self, id: str) -> R:
        if id not in self._records:
            raise KeyError(f"no such id: {id}")
        int_id = self._int_of.pop(id)
        del self._str_of[int_id]
        assert self._index is not None
        self._index.remove_ids(np.array([int_id], dtype=np.int64))  # type: ignore[arg-type]  # SWIG takes arrays too
        return self._records.pop(id)

    def get(self, id: str) -> R | None:
        return self._records.get(id)

    def vector(self, id: str) -> np.ndarray | None:
        int_id = self._int_of.get(id)
        if int_id is None or self._index is None:
            return None
        return np.asarray(self._index.reconstruct(int_id), dtype=np.float32)

    def records(self) -> list[R]:
        """All records in insertion order (an update keeps the record's place)."""
        return list(self._records.values())

    def ids(self) -> list[str]:
        return list(self._records)

    def search(self, vector: np.ndarray, k: int) -> list[tuple[R, float]]:
        """The k most similar records with their cosine scores, best first (ties: older first)."""
        if k <= 0 or not self._records or self._index is None:
            return []
        q = self._check(vector).reshape(1, -1)
        n = min(k, len(self._records))
        scores, ints = self._index.search(q, n)
        hits = [(float(s), int(i)) for s, i in zip(scores[0], ints[0]) if i >= 0]
        hits.sort(key=lambda h: (-h[0], h[1]))  # deterministic tie order: faiss's is unspecified
        return [(self._records[self._str_of[i]], s) for s, i in hits]

    # ---- persistence -------------------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        """vectors.npy then records.json (written last: its presence means a complete pair)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        ids = list(self._records)
        dim = self.dim or 0
        matrix = np.zeros((len(ids), dim), np.float32)
        if ids:
            assert self._index is not None
            for row, i in enumerate(ids):
                matrix[row] = self._index.reconstruct(self._int_of[i])
        atomic_write_npy(directory / VECTORS_FILE, matrix)  # float32 already
        doc = {
            "dim": self.dim,
            "next": self._next,
            "entries": [
                {"id": i, "int_id": self._int_of[i], "record": self._encode(self._records[i])} for i in ids
            ],
        }
        atomic_write(directory / RECORDS_FILE, json.dumps(doc, ensure_ascii=False, indent=1))

    @classmethod
    def load(
        cls,
        directory: Path,
        *,
        encode: Callable[[Any], dict[str, Any]] = MemoryRecord.to_dict,
        decode: Callable[[dict[str, Any]], Any] = MemoryRecord.from_dict,
    ) -> FaissVectorStore[Any]:
        directory = Path(directory)
        doc = json.loads((directory / RECORDS_FILE).read_text(encoding="utf-8"))
        matrix = np.load(directory / VECTORS_FILE)
        entries = doc["entries"]
        if matrix.shape[0] != len(entries):
            raise ValueError(f"{directory}: {matrix.shape[0]} vectors for {len(entries)} records")
        store: FaissVectorStore[Any] = cls(doc.get("dim"), encode=encode, decode=decode)
        for entry, vector in zip(entries, matrix):
            # Keep the saved int ids, so tie order (older first) survives a reload.
            store._next = int(entry["int_id"])
            store.add(entry["id"], vector, decode(entry["record"]))
        store._next = int(doc.get("next", len(entries)))
        return store
