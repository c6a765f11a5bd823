"""Uncertainty of question-weighted means: a seeded two-level (cluster) bootstrap.

LOCOMO's questions are not independent: questions about the same conversation share its memory, so one
badly ingested conversation moves many scores together. The bootstrap therefore resamples conversations
with replacement first and then, inside each drawn conversation, its questions with replacement; the
statistic of each replicate is the question-weighted mean over everything drawn. The same replicates are
used for every column of the value matrix, so scores computed together stay comparable.

Pure functions over numbers: no file, no config.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Interval", "bootstrap_weights", "cluster_bootstrap"]


@dataclass(frozen=True)
class Interval:
    """One statistic: the point estimate, the bootstrap standard error and the 95% percentile interval.
    All None when there was nothing to estimate (no value in any row)."""

    estimate: float | None
    stderr: float | None
    ci95: tuple[float, float] | None


def bootstrap_weights(clusters: Sequence[str], replicates: int, seed: int) -> np.ndarray:
    """(replicates, n) counts: how often each row is drawn in each replicate of the two-level bootstrap.

    Rows are grouped by their cluster label (a conversation id); per replicate, as many clusters as there
    are are drawn with replacement, and for each drawn cluster as many of its rows as it has, with
    replacement. Drawn without a Python loop per draw: a cluster drawn m times contributes m independent
    Multinomial(n_c, 1/n_c) row counts, whose sum is one Multinomial(m * n_c, 1/n_c)."""
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    n = len(clusters)
    weights = np.zeros((replicates, n), dtype=np.int64)
    names = list(dict.fromkeys(clusters))  # first-appearance order: stable for a given input order
    if not names:
        return weights
    rng = np.random.default_rng(seed)
    times = rng.multinomial(len(names), [1 / len(names)] * len(names), size=replicates)  # (B, C)
    labels = np.asarray(clusters, dtype=object)
    for c, name in enumerate(names):
        members = np.flatnonzero(labels == name)
        size = members.size
        weights[:, members] = rng.multinomial(times[:, c] * size, [1 / size] * size)
    return weights


def cluster_bootstrap(
    values: np.ndarray, clusters: Sequence[str], *, replicates: int, seed: int
) -> list[Interval]:
    """One Interval per column of `values` (rows = questions; NaN = no value for that row, left out of
    that column's mean in every replicate). The estimate is the plain mean over the rows' values."""
    matrix = np.asarray(values, dtype=float)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.shape[0] != len(clusters):
        raise ValueError(f"{matrix.shape[0]} rows but {len(clusters)} cluster labels")
    present = ~np.isnan(matrix)
    if matrix.shape[0] == 0:
        return [Interval(None, None, None) for _ in range(matrix.shape[1])]
    weights = bootstrap_weights(clusters, replicates, seed).astype(float)
    sums = weights @ np.where(present, matrix, 0.0)
    counts = weights @ present.astype(float)
    out: list[Interval] = []
    for k in range(matrix.shape[1]):
        if not present[:, k].any():
            out.append(Interval(None, None, None))
            continue
        estimate = float(matrix[present[:, k], k].mean())
        usable = counts[:, k] > 0  # a replicate that drew no valued row has no mean
        stats = sums[usable, k] / counts[usable, k]
        stderr = float(np.std(stats, ddof=1)) if stats.size > 1 else 0.0
        lo, hi = np.percentile(stats, [2.5, 97.5])
        out.append(Interval(estimate, _clean(stderr), (_clean(float(lo)), _clean(float(hi)))))
    return out


def _clean(x: float) -> float:
    """Float noise around zero (a replicate mean of identical zeros) reads as exactly 0."""
    return 0.0 if math.isclose(x, 0.0, abs_tol=1e-12) else x
