"""Texts longer than an embedding model can read, embedded in windows rather than silently truncated.

An embedding model reads a bounded number of its own tokens (all-MiniLM-L6-v2: 256 word pieces with its
two special tokens; OpenAI's embedding models: 8,191 tokens) and drops or refuses the rest. A text over
the limit is cut, at token boundaries, into consecutive windows that each fit; every window is embedded
and the text's vector is the mean of its windows' vectors weighted by their token counts (the client then
L2-normalizes it). Texts within the limit are embedded whole, exactly as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CONTEXT_WINDOWS",
    "Tokenizer",
    "WindowPlan",
    "context_window",
    "merge_windows",
    "plan_windows",
    "split_text",
]


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


# ---- chat models' context windows -------------------------------------------------------------------
# Separate from the embedding windows above, but the same question: how many tokens a model reads. The
# answer stage checks every prompt against it, so a prompt past the window fails as one line of ours
# instead of a 400 from the server (or, on a local server, a silently truncated prompt).

CONTEXT_WINDOWS: dict[str, int] = {
    # OpenAI's published context windows (prompt and reply together), in tokens.
    "gpt-4o-mini": 128_000,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
}
"""Known models' windows; a dated snapshot (gpt-4o-mini-2024-07-18) has its family's. A model not here
(a local server's) has no known window unless `llm.context_window` gives it."""

_SNAPSHOT = re.compile(r"-\d{4}(-\d{2}-\d{2})?")
"""What a dated snapshot adds to its family's name: -MMDD or -YYYY-MM-DD (gpt-4-32k is a model of its own)."""


def context_window(model: str, override: int | None = None) -> int | None:
    """The context window of `model`: `override` (llm.context_window) when set, else the table's entry for
    the model or for the family it is a dated snapshot of, else None (unknown:
    nothing is checked)."""
    if override is not None:
        return override
    name = model.rsplit("/", 1)[-1]  # "openai/gpt-4o-mini" through a router
    if name in CONTEXT_WINDOWS:
        return CONTEXT_WINDOWS[name]
    family = [k for k in CONTEXT_WINDOWS if name.startswith(k) and _SNAPSHOT.fullmatch(name[len(k) :])]
    return CONTEXT_WINDOWS[family[0]] if family else None
