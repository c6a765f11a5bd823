"""RAG and full-context baselines: chunking, top-k retrieval, persistence, full context coverage."""

from __future__ import annotations

import asyncio
import re
import zlib
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from mem0bench.data.model import Conversation, Question, Session, Turn
from mem0bench.memory.base import MemorySystem, SystemContext
from mem0bench.suites.locomo import SINGLE_HOP
from mem0bench.systems.baselines import RAG, FullContext, chunk_conversation
from mem0bench.systems.baselines.rag import chunk_lines, split_line
from mem0bench.tokens import count_tokens

DIM = 256


class FakeClient:
    """Deterministic bag-of-words embeddings; records every embed call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    async def embed(self, texts: Sequence[str], *, stage: str) -> np.ndarray:
        self.calls.append((stage, len(texts)))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[i, zlib.crc32(word.encode()) % DIM] += 1.0
            norm = np.linalg.norm(out[i])
            if norm:
                out[i] /= norm
        return out


TOPICS = [
    "astronomy telescope galaxies nebula stars",
    "pottery clay kiln glaze wheel",
    "marathon running shoes training miles",
    "violin concerto orchestra rehearsal bow",
    "gardening tomatoes compost seedlings soil",
    "chess opening gambit endgame tournament",
]


def make_conversation(
    turns_per_session: int = 6, sessions: int = 3, sample_id: str = "conv-t"
) -> Conversation:
    built = []
    n = 0
    for s in range(1, sessions + 1):
        turns = []
        for j in range(1, turns_per_session + 1):
            speaker = "Alice" if j % 2 else "Bob"
            topic = TOPICS[n % len(TOPICS)]
            turns.append(Turn(speaker, f"D{s}:{j}", f"turn {n} about {topic} " + "filler words here " * 6))
            n += 1
        built.append(Session(s, datetime(2023, 5, s, 13, 56), f"1:56 pm on {s} May, 2023", tuple(turns)))
    question = Question("q0", sample_id, 0, "What about the telescope?", "stars", SINGLE_HOP)
    return Conversation(sample_id, "Alice", "Bob", tuple(built), (question,))


def ask(conv: Conversation, text: str) -> Question:
    return Question("qx", conv.sample_id, 1, text, "", SINGLE_HOP)


def make_rag(tmp_path: Path, client: FakeClient, **kw: int) -> RAG:
    return RAG(context=SystemContext(client=client, state_dir=tmp_path), **kw)  # type: ignore[arg-type]


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


# ------------------------------------------------------------------ chunking


@pytest.mark.parametrize("chunk_size", [128, 256, 512])
def test_chunks_respect_size_and_keep_every_line_in_order(chunk_size: int) -> None:
    conv = make_conversation(turns_per_session=10, sessions=4)
    chunks = chunk_conversation(conv, chunk_size)
    assert len(chunks) > 1
    assert all(count_tokens(c.text) <= chunk_size and c.tokens == count_tokens(c.text) for c in chunks)
    lines = conv.render_lines()
    # Whole lines packed, none lost, order kept.
    assert [line for c in chunks for line in c.text.split("\n")] == lines
    # Each chunk's dia_ids are exactly the turns of its lines, in order.
    by_line = dict(zip(lines, (t.dia_id for t in conv.turns)))
    for c in chunks:
        assert c.dia_ids == tuple(by_line[line] for line in c.text.split("\n"))
    assert [d for c in chunks for d in c.dia_ids] == [t.dia_id for t in conv.turns]


def test_larger_chunks_pack_more_lines() -> None:
    conv = make_conversation(turns_per_session=10, sessions=4)
    assert len(chunk_conversation(conv, 512)) < len(chunk_conversation(conv, 128))
    assert len(chunk_conversation(conv, 8192)) == 1


def test_over_long_line_is_split_by_tokens() -> None:
    long_line = (
        "(1:56 pm on 8 May, 2023) Alice: " + "an extraordinarily verbose sentence, naïve café 日本 " * 60
    )
    assert count_tokens(long_line) > 3 * 128
    chunks = chunk_lines(["(d) Bob: hi", long_line, "(d) Bob: bye"], ["D1:1", "D1:2", "D1:3"], 128)
    assert all(c.tokens <= 128 for c in chunks)
    assert chunks[0].text == "(d) Bob: hi"  # the long line starts a new chunk
    middle = [c for c in chunks if "D1:2" in c.dia_ids]
    assert len(middle) >= 4
    assert "".join(c.text.split("\n")[0] for c in middle) == long_line  # nothing lost, not even bytes
    assert chunks[-1].text.endswith("(d) Bob: bye") and chunks[-1].dia_ids[-1] == "D1:3"
    assert "".join(split_line(long_line, 128)) == long_line


def test_real_locomo_chunks_fit(locomo_path: Path) -> None:
    from mem0bench.data import load_dataset

    conv = load_dataset(locomo_path).conversations[0]
    for size in (128, 8192):
        chunks = chunk_conversation(conv, size)
        assert max(c.tokens for c in chunks) <= size
        covered = list(dict.fromkeys(d for c in chunks for d in c.dia_ids))
        assert covered == list(dict.fromkeys(t.dia_id for t in conv.turns))


# ------------------------------------------------------------------ RAG system


@pytest.mark.parametrize("kwargs", [{"chunk_size": 127}, {"chunk_size": 8193}, {"chunk_size": 0}, {"k": 0}])
def test_invalid_parameters_are_rejected(tmp_path: Path, kwargs: dict[str, int]) -> None:
    key = next(iter(kwargs))
    with pytest.raises(ValueError, match=key):
        make_rag(tmp_path, FakeClient(), **kwargs)


def test_rag_is_a_memory_system(tmp_path: Path) -> None:
    assert isinstance(make_rag(tmp_path, FakeClient()), MemorySystem)
    assert isinstance(
        FullContext(context=SystemContext(client=FakeClient(), state_dir=tmp_path)), MemorySystem
    )  # type: ignore[arg-type]


def test_ingest_embeds_once_and_retrieves_most_similar_first(tmp_path: Path) -> None:
    client = FakeClient()
    conv = make_conversation()
    rag = make_rag(tmp_path, client, chunk_size=128, k=2)
    report = run(rag.ingest(conv))
    n_chunks = len(chunk_conversation(conv, 128))
    assert client.calls == [("ingest", n_chunks)]
    assert report.memory_tokens is None and report.sample_id == conv.sample_id

    ctx = run(rag.retrieve(conv, ask(conv, "violin concerto orchestra rehearsal")))
    assert client.calls[-1] == ("search", 1)
    assert ctx.kind == "chunks"
    first = ctx.text.split("\n\n")[0]
    assert "violin concerto" in first
    assert ctx.tokens == count_tokens(ctx.text)
    assert ctx.search_latency_s is not None and ctx.search_latency_s >= 0
    assert ctx.local_search_s is not None and ctx.local_search_s >= 0
    assert set(ctx.source_dia_ids) >= {"D1:4"}  # turn 3 (0-based) is about the violin


def test_k_is_respected(tmp_path: Path) -> None:
    conv = make_conversation()
    question = ask(conv, "pottery clay kiln")
    texts = {}
    for k in (1, 2, 3):
        rag = make_rag(tmp_path, FakeClient(), chunk_size=128, k=k)
        run(rag.ingest(conv))
        ctx = run(rag.retrieve(conv, question))
        texts[k] = ctx.text
        assert len(ctx.text.split("\n\n")) == k
    assert texts[2].startswith(texts[1]) and texts[3].startswith(texts[2])
    assert count_tokens(texts[1]) < count_tokens(texts[2])


def test_k_larger_than_chunks_returns_all(tmp_path: Path) -> None:
    conv = make_conversation(turns_per_session=2, sessions=1)
    rag = make_rag(tmp_path, FakeClient(), chunk_size=8192, k=5)
    run(rag.ingest(conv))
    ctx = run(rag.retrieve(conv, ask(conv, "anything")))
    assert ctx.text == "\n".join(conv.render_lines())
    assert ctx.source_dia_ids == ("D1:1", "D1:2")


def test_reload_from_state_makes_no_embed_call(tmp_path: Path) -> None:
    conv = make_conversation()
    first = make_rag(tmp_path, FakeClient(), chunk_size=256)
    run(first.ingest(conv))
    folder = tmp_path / conv.sample_id / "rag_256"
    assert (folder / "done.json").is_file() and (folder / "embeddings.npy").is_file()

    client = FakeClient()
    again = make_rag(tmp_path, client, chunk_size=256)
    report = run(again.ingest(conv))
    assert client.calls == []
    assert report.details["chunks"] == len(chunk_conversation(conv, 256))
    # A fresh instance can also retrieve straight from state (only the question is embedded).
    fresh_client = FakeClient()
    fresh = make_rag(tmp_path, fresh_client, chunk_size=256)
    q = ask(conv, "chess gambit")
    assert run(fresh.retrieve(conv, q)).text == run(first.retrieve(conv, q)).text
    assert fresh_client.calls == [("search", 1)]
    # Another chunk size has its own state.
    other = FakeClient()
    run(make_rag(tmp_path, other, chunk_size=128).ingest(conv))
    assert other.calls == [("ingest", len(chunk_conversation(conv, 128)))]


def test_incomplete_state_is_rebuilt(tmp_path: Path) -> None:
    conv = make_conversation()
    run(make_rag(tmp_path, FakeClient()).ingest(conv))
    (tmp_path / conv.sample_id / "rag_256" / "done.json").unlink()
    client = FakeClient()
    run(make_rag(tmp_path, client).ingest(conv))
    assert [c[0] for c in client.calls] == ["ingest"]


def test_retrieve_before_ingest_is_a_clear_error(tmp_path: Path) -> None:
    conv = make_conversation()
    with pytest.raises(RuntimeError, match="not ingested"):
        run(make_rag(tmp_path, FakeClient()).retrieve(conv, ask(conv, "x")))


# ------------------------------------------------------------------ full context


def test_full_context_covers_every_turn_with_dates(tmp_path: Path) -> None:
    client = FakeClient()
    conv = make_conversation()
    system = FullContext(context=SystemContext(client=client, state_dir=tmp_path))  # type: ignore[arg-type]
    report = run(system.ingest(conv))
    assert report.memory_tokens is None and client.calls == []
    ctx = run(system.retrieve(conv, conv.questions[0]))
    assert ctx.kind == "full_context" and ctx.search_latency_s is None
    lines = ctx.text.split("\n")
    assert len(lines) == len(conv.turns)
    for line, session_turn in zip(lines, ((s, t) for s in conv.sessions for t in s.turns)):
        session, turn = session_turn
        assert line == f"({session.date_text}) {turn.speaker}: {turn.text}"
    assert ctx.source_dia_ids == tuple(t.dia_id for t in conv.turns)
    assert ctx.tokens == count_tokens(ctx.text)
    assert run(system.retrieve(conv, conv.questions[0])) == ctx
    assert client.calls == []


def test_hydra_configs_instantiate(tmp_path: Path) -> None:
    import hydra.utils as hydra_utils
    from omegaconf import OmegaConf

    root = Path(__file__).resolve().parents[1] / "configs" / "method"
    ctx = SystemContext(client=FakeClient(), state_dir=tmp_path)  # type: ignore[arg-type]
    # `instantiate(cfg, context=ctx)` would have OmegaConf turn the SystemContext dataclass into a config
    # node (and fail); a partial keeps the context a plain Python object.
    rag = hydra_utils.instantiate(OmegaConf.load(root / "rag.yaml"), _partial_=True)(context=ctx)
    assert isinstance(rag, RAG) and (rag.name, rag.chunk_size, rag.k) == ("rag", 256, 2)
    assert rag.context is ctx
    full = hydra_utils.instantiate(OmegaConf.load(root / "full_context.yaml"), _partial_=True)(context=ctx)
    assert isinstance(full, FullContext) and full.name == "full_context"


def test_a_reopened_rag_index_says_it_was_restored(tmp_path: Path) -> None:
    """A second process finds the saved index: no embedding call, and the report says it is a restore (the
    pipeline then keeps the attempt that built it as the record); a change of conversation rebuilds."""
    conv = make_conversation(turns_per_session=6, sessions=2)
    first = run(make_rag(tmp_path, FakeClient(), chunk_size=256).ingest(conv))
    again_client = FakeClient()
    again = run(make_rag(tmp_path, again_client, chunk_size=256).ingest(conv))
    assert not first.restored and again.restored and again.details == first.details
    assert again_client.calls == []
    edited = make_conversation(turns_per_session=7, sessions=2)
    assert not run(make_rag(tmp_path, FakeClient(), chunk_size=256).ingest(edited)).restored
