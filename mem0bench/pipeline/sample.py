"""Which questions a smaller run answers (`eval.max_questions` per conversation, `eval.sample`).

`first` takes the first N in the dataset's order, which skews a small run's category mix (conv-26's first
20 questions hold no single_hop). `stratified` keeps each category's share: N is split over the
categories in proportion to their counts (largest remainder; every category present gets at least one
question while N allows), and each category's questions are drawn at random with a seed fixed by
`eval.seed` and the conversation, so a rerun picks the same questions. The chosen questions keep the
dataset's order.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from mem0bench.data.model import Question

__all__ = ["SAMPLES", "Sample", "sample_questions"]

Sample = Literal["first", "stratified"]
SAMPLES: tuple[Sample, ...] = ("first", "stratified")


def _quotas(sizes: dict[int, int], n: int) -> dict[int, int]:
    """n (< the total) split over the categories in proportion to their sizes, each at most its size."""
    cats = sorted(sizes)
    by_size = sorted(cats, key=lambda c: (-sizes[c], c))
    if n < len(cats):  # too few for every category: one each for the largest
        return {c: int(c in by_size[:n]) for c in cats}
    quota = {c: 1 for c in cats}  # every category present is represented
    left = n - len(cats)
    total = sum(sizes.values())
    for c in cats:
        quota[c] += left * sizes[c] // total
    # Largest remainder first (exact, in integers); ties to the larger category, then the lower number.
    order = sorted(cats, key=lambda c: (-(left * sizes[c] % total), -sizes[c], c))
    for c in order[: n - sum(quota.values())]:
        quota[c] += 1
    # A category may not hold its quota: hand the excess to the others, largest first.
    excess = sum(max(quota[c] - sizes[c], 0) for c in cats)
    quota = {c: min(quota[c], sizes[c]) for c in cats}
    for c in by_size:
        take = min(excess, sizes[c] - quota[c])
        quota[c] += take
        excess -= take
    return quota


def sample_questions(
    questions: Sequence[Question], n: int | None, *, how: Sample = "first", seed: str = "0"
) -> list[Question]:
    """At most n of `questions` (all of them when n is None or not smaller), chosen as `how` says."""
    if n is None or n >= len(questions):
        return list(questions)
    if how == "first":
        return list(questions[:n])
    if how != "stratified":
        raise ValueError(f"eval.sample must be one of {', '.join(SAMPLES)}, not {how!r}")
    by_category: dict[int, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        by_category[int(q.category)].append(i)
    quota = _quotas({c: len(ix) for c, ix in by_category.items()}, n)
    rng = random.Random(f"stratified:{seed}")
    keep: set[int] = set()
    for c in sorted(by_category):
        keep.update(rng.sample(by_category[c], quota[c]))
    return [q for i, q in enumerate(questions) if i in keep]
