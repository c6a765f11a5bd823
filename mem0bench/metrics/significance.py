"""Tests and agreement figures for comparing runs and judges (pure functions, hand-checkable).

- `mcnemar_exact`: two-sided exact McNemar test on the discordant pairs of two paired binary outcomes.
- `fewest_pairs_for_significance`: below this many discordant pairs (so below this many paired questions)
  no outcome can be significant, and intervals and detectable differences mean nothing.
- `minimum_detectable_difference`: the true difference a two-sided test at level alpha detects with the
  given power, from the standard error of the estimated difference (normal approximation).
- `wilson_interval`: the Wilson score interval of a proportion (good at 0 and 1, where the Wald one fails).
- `cohen_kappa`: chance-corrected agreement of two raters on binary labels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

__all__ = [
    "cohen_kappa",
    "fewest_pairs_for_significance",
    "mcnemar_exact",
    "minimum_detectable_difference",
    "wilson_interval",
]


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact p of McNemar's test. `only_a`: pairs where A is correct and B is not; `only_b`:
    the reverse. Under the null the discordant pairs split Binomial(only_a + only_b, 1/2); p is twice the
    smaller tail, capped at 1. No discordant pair: p = 1."""
    if only_a < 0 or only_b < 0:
        raise ValueError("counts must be >= 0")
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2.0 * tail)


def fewest_pairs_for_significance(alpha: float = 0.05) -> int:
    """The fewest discordant pairs with which the two-sided exact McNemar test can reach p <= alpha.

    Its smallest p, every discordant pair on one side, is 2 * 2**-d: 6 pairs at alpha 0.05 (p 0.031; 5
    give 0.0625). Each question is at most one discordant pair, so with fewer paired questions than this
    no difference, however large, can be told from chance: a 95% interval or a detectable difference
    computed from them (a bootstrap of 2 questions gives [-100, -100] and an MDD of 0) says nothing."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    pairs = 1
    while mcnemar_exact(pairs, 0) > alpha:
        pairs += 1
    return pairs


def minimum_detectable_difference(stderr: float, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """(z_{1-alpha/2} + z_{power}) * stderr: about 2.80 standard errors at alpha 0.05 and 80% power."""
    z = NormalDist()
    return (z.inv_cdf(1 - alpha / 2) + z.inv_cdf(power)) * stderr


def wilson_interval(successes: int, n: int, *, level: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval of successes / n; None when n == 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and {n}, got {successes}")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends: no float residue at 0 or 1
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (lo, hi)


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two binary raters over the same items; None with no items. When chance agreement
    is 1 (both raters gave one and the same label to everything) kappa is 0/0: defined as 1.0."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} labels against {len(b)}")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(map(bool, a)) / n, sum(map(bool, b)) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if math.isclose(expected, 1.0):
        return 1.0
    return (observed - expected) / (1 - expected)
