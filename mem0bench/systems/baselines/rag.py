"""RAG baseline: the conversation cut into token-bounded chunks, the k most similar retrieved per question.

Chunks pack whole '(date) speaker: text' lines (one per turn) up to `chunk_size` cl100k_base tokens; a
single line longer than that is split by tokens (at UTF-8-safe boundaries, so no text is lost). Chunk
embeddings are persisted per sample under `state_dir/<sample_id>/rag_<chunk_size>/`, so a resumed run
makes no embedding call for a conversation it has already ingested.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mem0bench.common.files import atomic_write, atomic_write_npy
from mem0bench.common.vectors import cosine_top_k
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.timing import measure
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemBase, SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig, PlanLine
from mem0bench.memory.saved_state import ConversationLocks, DoneMarker, conversation_folder
from mem0bench.tokens import count_tokens, encode, encoding

__all__ = ["RAG", "Chunk", "chunk_conversation", "chunk_lines", "split_line"]

MIN_CHUNK_SIZE = 128
MAX_CHUNK_SIZE = 8192
_LINE_SEP = "\n"
_CHUNK_SEP = "\n\n"
_FORMAT = 1  # bump when the on-disk layout changes


@dataclass(frozen=True)
class Chunk:
    """A piece of the rendered conversation and the turns it covers."""

    text: str
    dia_ids: tuple[str, ...]
    tokens: int


def split_line(line: str, max_tokens: int) -> list[str]:
    """Split one line into pieces of at most `max_tokens` tokens; ''.join(pieces) == line."""
    tokens = encode(line)
    if len(tokens) <= max_tokens:
        return [line]
    raw = encoding().decode_tokens_bytes(tokens)
    pieces: list[str] = []
    start = 0
    while start < len(raw):
        limit = min(start + max_tokens, len(raw))
        piece = _decodable_piece(raw, start, limit)
        while piece is None or count_tokens(piece[0]) > max_tokens:
            # Re-encoding a piece can merge differently at its edges: shrink until it fits.
            limit -= 1
            if limit <= start:
                raise ValueError(f"cannot split a line into pieces of at most {max_tokens} tokens")
            piece = _decodable_piece(raw, start, limit)
        text, end = piece
        pieces.append(text)
        start = end
    return pieces


def _decodable_piece(raw: list[bytes], start: int, end: int) -> tuple[str, int] | None:
    """The longest valid UTF-8 text of raw[start:e] with start < e <= end (a token may hold part of a
    character); if none, extend past `end` to finish the character."""
    for e in range(end, start, -1):
        try:
            return b"".join(raw[start:e]).decode("utf-8"), e
        except UnicodeDecodeError:
            continue
    for e in range(end + 1, min(end + 4, len(raw)) + 1):
        try:
            return b"".join(raw[start:e]).decode("utf-8"), e
        except UnicodeDecodeError:
            continue
    return None


def chunk_lines(lines: Sequence[str], dia_ids: Sequence[str], chunk_size: int) -> list[Chunk]:
    """Pack whole lines (joined by newlines) into chunks of at most `chunk_size` tokens, in order."""
    if len(lines) != len(dia_ids):
        raise ValueError(f"{len(lines)} lines but {len(dia_ids)} dia_ids")
    return list(_pack(zip(lines, dia_ids), chunk_size))


def _pack(lines: Iterable[tuple[str, str]], chunk_size: int) -> Iterator[Chunk]:
    """`chunk_lines` over (line, dia_id) pairs, read as the chunks need them: only the chunk being packed
    and the line after it are held, never every line (a 10M-token conversation's are ~40 MB)."""
    pieces = (
        (piece, dia_id, count_tokens(piece))
        for line, dia_id in lines
        for piece in split_line(line, chunk_size)
    )
    queue: deque[tuple[str, str, int]] = deque()  # pieces read but not packed yet (a few at most)

    def head() -> tuple[str, str, int] | None:
        if not queue:
            nxt = next(pieces, None)
            if nxt is None:
                return None
            queue.append(nxt)
        return queue[0]

    while head() is not None:
        taken = [queue.popleft()]
        estimate = taken[0][2]
        while (nxt := head()) is not None and estimate + 1 + nxt[2] <= chunk_size:
            estimate += 1 + nxt[2]
            taken.append(queue.popleft())
        text = _LINE_SEP.join(seg[0] for seg in taken)
        tokens = count_tokens(text)
        while tokens > chunk_size and len(taken) > 1:  # BPE merged across a newline: give lines back
            queue.appendleft(taken.pop())
            text = _LINE_SEP.join(seg[0] for seg in taken)
            tokens = count_tokens(text)
        yield Chunk(text=text, dia_ids=tuple(dict.fromkeys(s[1] for s in taken)), tokens=tokens)


def chunk_conversation(conversation: Conversation, chunk_size: int) -> list[Chunk]:
    """The conversation rendered as '(date) speaker: text' lines, cut into chunks (rendered line by line as
    the chunks are packed)."""
    return list(_pack(conversation.iter_lines(), chunk_size))


def _chunks_json(chunks: Sequence[Chunk]) -> Iterator[str]:
    """chunks.json's text, one chunk at a time (the same text `json.dumps` of the whole list gives)."""
    yield "["
    for i, c in enumerate(chunks):
        row = {"text": c.text, "dia_ids": list(c.dia_ids), "tokens": c.tokens}
        yield (", " if i else "") + json.dumps(row, ensure_ascii=False)
    yield "]"


@dataclass(frozen=True)
class _Index:
    chunks: tuple[Chunk, ...]
    matrix: np.ndarray
    """float32 (n_chunks, dim), L2-normalized rows."""


class RAG(SystemBase):
    """Retrieve the k chunks most similar to the question (cosine over embeddings), best first."""

    def __init__(
        self, *, name: str = "rag", chunk_size: int = 256, k: int = 2, context: SystemContext
    ) -> None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
            raise ValueError(f"rag: chunk_size must be an integer, got {chunk_size!r}")
        if not MIN_CHUNK_SIZE <= chunk_size <= MAX_CHUNK_SIZE:
            raise ValueError(
                f"rag: chunk_size must be in [{MIN_CHUNK_SIZE}, {MAX_CHUNK_SIZE}] tokens, got {chunk_size}"
            )
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"rag: k (chunks retrieved per question) must be an integer >= 1, got {k!r}")
        super().__init__()
        self.name = name
        self.chunk_size = chunk_size
        self.k = k
        self.context = context
        self._indexes: dict[str, _Index] = {}
        self._locks = ConversationLocks()

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """One embedding call per 256 chunks (at least one per conversation); ~40 tokens a turn."""
        chunk_size, k = int(method["chunk_size"]), int(method["k"])
        chunks = sum(len(c.turns) * 40 for c in dataset.conversations) / chunk_size
        calls = max(chunks / 256, len(dataset.conversations))
        line = PlanLine("ingest", "chunk embeddings", calls, chunks * chunk_size, 0)
        return CostPlan(context_tokens=k * chunk_size, lines=[line])

    # ------------------------------------------------------------------ ingest

    def state_path(self, sample_id: str) -> Path:
        return conversation_folder(self.context.state_dir, sample_id, f"rag_{self.chunk_size}")

    def _marker(self, sample_id: str) -> DoneMarker:
        return DoneMarker(self.state_path(sample_id) / "done.json", _FORMAT)

    def _fingerprint(self, conversation: Conversation) -> str:
        return conversation.fingerprint({"chunk_size": self.chunk_size})

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Chunk and embed the conversation (one embed call), or load it from state if already done."""
        sid = conversation.sample_id
        async with self._locks(sid):
            index = self._indexes.get(sid) or self._load(conversation)
            restored = index is not None
            if index is None:
                chunks = chunk_conversation(conversation, self.chunk_size)
                if chunks:
                    matrix = await self.context.client.embed([c.text for c in chunks], stage="ingest")
                    matrix = _as_matrix(matrix, len(chunks))
                else:
                    matrix = np.zeros((0, 0), dtype=np.float32)
                index = _Index(chunks=tuple(chunks), matrix=matrix)
                self._save(conversation, index)
            self._indexes[sid] = index
        details = {"chunks": len(index.chunks)}
        return IngestReport(sample_id=sid, memory_tokens=None, details=details, restored=restored)

    def _save(self, conversation: Conversation, index: _Index) -> None:
        folder = self.state_path(conversation.sample_id)
        folder.mkdir(parents=True, exist_ok=True)
        marker = self._marker(conversation.sample_id)
        marker.withdraw()
        # Written chunk by chunk: the whole list as one JSON string would be the conversation again, four
        # bytes a character when one of them is outside Latin-1.
        atomic_write(folder / "chunks.json", _chunks_json(index.chunks))
        atomic_write_npy(folder / "embeddings.npy", index.matrix)
        meta = {
            "chunk_size": self.chunk_size,
            "n_chunks": len(index.chunks),
            "dim": int(index.matrix.shape[1]) if index.matrix.ndim == 2 else 0,
        }
        marker.write(self._fingerprint(conversation), meta)  # last

    def _load(self, conversation: Conversation) -> _Index | None:
        """The persisted index, or None if absent, incomplete, stale or unreadable (then rebuild)."""
        folder = self.state_path(conversation.sample_id)
        meta = self._marker(conversation.sample_id).read(self._fingerprint(conversation))
        if meta is None:
            return None
        try:
            raw = json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
            chunks = tuple(Chunk(c["text"], tuple(c["dia_ids"]), int(c["tokens"])) for c in raw)
            matrix = np.load(folder / "embeddings.npy", allow_pickle=False)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if len(chunks) != meta.get("n_chunks") or (chunks and matrix.shape[0] != len(chunks)):
            return None
        return _Index(chunks=chunks, matrix=matrix.astype(np.float32, copy=False))

    def release(self, sample_id: str) -> None:
        """Forget the conversation's index (saved under state_path; `retrieve` loads it again)."""
        self._indexes.pop(sample_id, None)

    # ------------------------------------------------------------------ retrieve

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """The top-k chunks by cosine similarity to the question, best first, joined by blank lines."""
        index = self._indexes.get(conversation.sample_id)
        if index is None:
            index = self._load(conversation)
            if index is None:
                raise RuntimeError(f"rag: conversation {conversation.sample_id} was not ingested")
            self._indexes[conversation.sample_id] = index
        with measure() as t:
            if index.chunks:
                query = await self.context.client.embed([question.question], stage="search")
                order = cosine_top_k(index.matrix, _as_matrix(query, 1)[0], self.k)
            else:
                order = []
            picked = [index.chunks[i] for i in order]
            text = _CHUNK_SEP.join(c.text for c in picked)
        dia_ids = tuple(dict.fromkeys(d for c in picked for d in c.dia_ids))
        return RetrievedContext(
            kind="chunks",
            text=text,
            tokens=count_tokens(text),
            source_dia_ids=dia_ids,
            search_latency_s=t.latency_s,
            local_search_s=t.local_s,
            items=len(picked),
        )


def _as_matrix(value: object, rows: int) -> np.ndarray:
    matrix = np.asarray(value, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != rows:
        raise ValueError(f"rag: embed returned shape {matrix.shape}, expected ({rows}, dim)")
    return matrix
