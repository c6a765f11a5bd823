"""Long conversations in bounded memory: what a 1M-10M-token conversation must not hold several times over
(token counts, RAG's chunks and their file, Mem0's per-period summary lines). The whole-run figures are
`python -m benchmarks scale` (docs/benchmarks.md)."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.cli import bench_main
from benchmarks.scale import render_scale, write_conversation
from mem0bench.data.loader import load_dataset
from mem0bench.data.model import Conversation
from mem0bench.memory.base import SystemContext
from mem0bench.memory.stream import message_pairs
from mem0bench.memory.vector_store import FaissVectorStore
from mem0bench.systems.baselines.rag import RAG, chunk_conversation, chunk_lines
from mem0bench.systems.methods.mem0.summary import PairLines
from mem0bench.tokens import COUNT_BLOCK, count_tokens, encoding, token_blocks


def _long(locomo_mini: Path, tmp_path: Path, tokens: int) -> Conversation:
    path = tmp_path / "long.json"
    write_conversation(locomo_mini, tokens, path)
    return load_dataset(path).conversations[0]


def _peak(fn: Any) -> tuple[Any, int, int]:
    """fn()'s result, the most memory Python allocated while it ran and what it still holds after, both
    beyond what was held before."""
    count_tokens("the encoding is loaded before measuring")
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        result = fn()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak - base, held - base


def test_counting_in_blocks_is_exact_and_holds_no_token_list(locomo_mini, tmp_path) -> None:
    conversation = _long(locomo_mini, tmp_path, 120_000)
    text = "\n".join(conversation.render_lines())
    # Newline runs, blank lines before a line, indented lines, a long line without a newline: the cuts
    # fall only after a newline that a non-space character follows.
    tricky = text.replace("\n(", "\n \n\n  (", 400) + "\n\n\n" + "x!" * 50_000 + "\n\n" + text[:90_000]
    for sample in (text, tricky):
        blocks = list(token_blocks(sample))
        assert len(blocks) > 3 and "".join(blocks) == sample
        assert all(b.endswith("\n") and not nxt[0].isspace() for b, nxt in zip(blocks, blocks[1:]))
        whole = len(encoding().encode(sample, disallowed_special=()))
        counted, peak, _ = _peak(lambda s=sample: count_tokens(s))
        assert counted == whole > COUNT_BLOCK // 8
        # One block's token list at a time (~36 bytes a token: an int and its slot), never the whole text's.
        assert peak < 24 * COUNT_BLOCK < 36 * whole


def test_rag_chunks_a_long_conversation_without_holding_it_again(locomo_mini, tmp_path) -> None:
    conversation = _long(locomo_mini, tmp_path, 300_000)
    text_chars = sum(len(t.text) for s in conversation.sessions for t in s.turns)
    lines = conversation.render_lines()
    eager = chunk_lines(lines, [t.dia_id for t in conversation.turns], 256)
    del lines
    assert chunk_conversation(conversation, 256) == eager  # the same chunks, rendered as they are packed

    class _Client:
        async def embed(self, texts: list[str], stage: str) -> np.ndarray:
            return np.ones((len(texts), 8), dtype=np.float32)

    rag = RAG(context=SystemContext(client=_Client(), state_dir=tmp_path / "state"))  # type: ignore[arg-type]
    report, peak, held = _peak(lambda: asyncio.run(rag.ingest(conversation)))
    assert report.details["chunks"] == len(eager)
    # What it keeps is RAG's memory, the chunks: one rendered copy (dates and names included). Beyond
    # that, ingestion held less than the turns' text once; rendering every line first and writing
    # chunks.json as one JSON string held ~12 times it (docs/benchmarks.md, "scale").
    assert held > text_chars
    assert peak - held < text_chars, f"{(peak - held) / text_chars:.1f}x the conversation's text"
    saved = json.loads((rag.state_path(conversation.sample_id) / "chunks.json").read_text("utf-8"))
    assert saved == [{"text": c.text, "dia_ids": list(c.dia_ids), "tokens": c.tokens} for c in eager]


def test_mem0_renders_a_summary_period_when_asked(locomo_mini, tmp_path) -> None:
    conversation = _long(locomo_mini, tmp_path, 20_000)
    pairs = message_pairs(conversation)
    dates = {s.index: s for s in conversation.sessions}
    eager = [[f"[{dates[si].date_text}] {t.speaker}: {t.text}" for t in pair] for si, pair in pairs]
    lazy = PairLines(pairs, dates)
    assert len(lazy) == len(eager) and lazy[0] == eager[0] and lazy[-1] == eager[-1]
    assert lazy[5:10] == eager[5:10] and lazy[len(eager) - 3 :] == eager[-3:]


def test_the_vector_store_keeps_each_vector_once() -> None:
    store: FaissVectorStore[str] = FaissVectorStore(encode=lambda r: {"r": r}, decode=lambda d: d["r"])
    a, b = np.array([1.0, 0.0, 0.0], np.float32), np.array([0.0, 3.0, 4.0], np.float32)
    store.add("a", a, "first")
    store.add("b", a, "second")
    store.update("b", b, "second, moved")
    assert not hasattr(store, "_vectors")
    assert np.allclose(store.vector("a"), a) and np.allclose(store.vector("b"), b / 5.0)  # type: ignore[arg-type]
    store.delete("a")
    assert store.vector("a") is None and store.search(b, 1)[0][0] == "second, moved"


def test_the_scale_benchmark_measures_rag_and_mem0_on_a_made_conversation(
    locomo_mini, tmp_path, capsys
) -> None:
    out = tmp_path / "bench"
    code = bench_main(
        ["scale", "--dataset", str(locomo_mini), "--tokens", "1500", "--methods", "rag,mem0", "--out", str(out),
         "--no-startup", "--json"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    (res,) = json.loads(captured.out)["results"]
    (size,) = res["sizes"]
    made = size["file"]
    assert 1500 <= made["rendered_tokens"] < 3000 and made["sessions"] > 2 and made["questions"] > 0
    conversation = load_dataset(out / "scale-1500.json").conversations[0]
    texts = [t.text for t in conversation.turns]
    assert len(set(texts)) == len(texts) == made["turns"]  # every copy's turns marked: no cached repeat
    assert size["dry_run"]["calls"] == 0 and size["dry_run"]["peak_rss_mb"] > 0
    rag, mem0 = size["runs"]["rag"], size["runs"]["mem0"]
    for run in (rag, mem0):
        assert run["wall_s"] > 0 and run["peak_rss_mb"] > 0 and run["http"]["errors"] == 0
        assert run["ledger"]["answer"]["calls"] == made["questions"]
    assert mem0["http"]["chat"] > rag["http"]["chat"] and mem0["ingest_per_turn"]["prompt_tokens"] > 0
    table = render_scale(res)
    assert "| dry run (load, plan) |" in table and "| rag |" in table and "| mem0 |" in table
