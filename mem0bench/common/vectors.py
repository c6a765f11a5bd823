"""Unit vectors and cosine similarity, the one definition the stores and retrievers use."""

from __future__ import annotations

import numpy as np


def normalize(vector: np.ndarray) -> np.ndarray:
    """A float32 unit vector (zero vectors stay zero), so that a dot product is the cosine similarity."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def cosine_top_k(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    """Row indices of the k rows most cosine-similar to `query`, best first (ties: earlier row first).
    Rows and query need not be normalized; zero rows score 0."""
    if matrix.shape[0] == 0:
        return []
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    scores = (matrix @ query) / np.where(norms == 0, 1.0, norms)
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order[:k]]
