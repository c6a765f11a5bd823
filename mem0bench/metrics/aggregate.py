"""Small aggregation helpers that return None (not NaN or an error) for empty input."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["mean", "percentile"]


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean, or None when there are no values."""
    arr = np.asarray(list(values), dtype=float)
    return float(arr.mean()) if arr.size else None


def percentile(values: Iterable[float], q: float) -> float | None:
    """``q``-th percentile (0-100, numpy linear interpolation), or None when empty."""
    arr = np.asarray(list(values), dtype=float)
    return float(np.percentile(arr, q)) if arr.size else None
