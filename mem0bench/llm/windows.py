"""Texts longer than an embedding model can read, embedded in windows rather than silently truncated.

An embedding model reads a bounded number of its own tokens (all-MiniLM-L6-v2: 256 word pieces with its
two special tokens; OpenAI's embedding models: 8,191 tokens) and drops or refuses the rest. A text over
the limit is cut, at token boundaries, into consecutive windows that each fit; every window is embedded
and the text's vector is the mean of its windows' vectors weighted by their token counts (the client then
L2-normalizes it). Texts within the limit are embedded whole, exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Tokenizer", "WindowPlan", "merge_windows", "plan_windows", "split_text"]


@dataclass(frozen=True)
class Tokenizer:
    """How a backend counts its own tokens: `starts(text)` gives each token's first character index."""

    starts: Callable[[str], Sequence[int]]
    limit: int
    """The most tokens the model reads from one input (special tokens excluded)."""

    def count(self, text: str) -> int:
        return len(self.starts(text))


@dataclass(frozen=True)
class WindowPlan:
    """What to send: `pieces[i]` belongs to input `owners[i]` and weighs `weights[i]` tokens."""

    pieces: list[str]
    owners: list[int]
    weights: list[int]
    n_inputs: int

    @property
    def windowed(self) -> bool:
        return len(self.pieces) != self.n_inputs


def split_text(text: str, tokenizer: Tokenizer) -> list[str]:
    """Consecutive pieces of `text`, each at most `tokenizer.limit` tokens; ''.join(pieces) == text."""
    if len(text.encode("utf-8")) <= tokenizer.limit:  # a token holds at least one byte: surely fits
        return [text]
    starts = list(tokenizer.starts(text))
    if len(starts) <= tokenizer.limit:
        return [text]
    pieces: list[str] = []
    first, begin = 0, 0
    while first < len(starts):
        size = tokenizer.limit
        while True:
            last = min(first + size, len(starts))
            end = starts[last] if last < len(starts) else len(text)
            piece = text[begin:end]
            # Tokenized on its own a piece can come out longer at its edges (a word cut in two): shrink.
            if tokenizer.count(piece) <= tokenizer.limit or size == 1:
                break
            size = max(1, size - max(1, size // 32))
        pieces.append(piece)
        first, begin = last, end
    return pieces


def plan_windows(texts: Sequence[str], tokenizer: Tokenizer) -> WindowPlan:
    """Every text as one piece, or as several windows when it is over the limit."""
    pieces: list[str] = []
    owners: list[int] = []
    weights: list[int] = []
    for i, text in enumerate(texts):
        parts = split_text(text, tokenizer)
        pieces.extend(parts)
        owners.extend([i] * len(parts))
        weights.extend([max(tokenizer.count(p), 1) for p in parts] if len(parts) > 1 else [1])
    return WindowPlan(pieces=pieces, owners=owners, weights=weights, n_inputs=len(texts))


def merge_windows(vectors: np.ndarray, plan: WindowPlan) -> np.ndarray:
    """One row per input: its piece's vector, or the token-weighted mean of its windows' vectors."""
    if not plan.windowed:
        return vectors
    out = np.zeros((plan.n_inputs, vectors.shape[1]), dtype=np.float32)
    totals = np.zeros(plan.n_inputs, dtype=np.float64)
    for row, owner, weight in zip(vectors, plan.owners, plan.weights, strict=True):
        out[owner] += weight * row
        totals[owner] += weight
    return (out / totals[:, None]).astype(np.float32)
