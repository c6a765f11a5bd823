"""Which questions a smaller run answers (`eval.max_questions` per conversation, `eval.sample`).

`first` takes the first N in the dataset's order, which skews a small run's category mix (conv-26's first
20 questions hold no single_hop). `stratified` keeps each category's share: N is split over the
categories in proportion to their counts (largest remainder; every category present gets at least one
question while N allows), and each category's questions are drawn at random with a seed fixed by
`eval.seed` and the conversation, so a rerun picks the same questions. The chosen questions keep the
dataset's order.

`run.shard=K/N` runs the K-th of N parts of the conversations (the unit a suite ingests: a LOCOMO
conversation, a LongMemEval haystack). The parts are balanced by estimated cost, not count: each
conversation's text plus a fixed share per question in scope, dealt largest first to the lightest part
(ties: the lower id, the lower part), so every machine computes the same parts.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Literal

from mem0bench.data.model import Question

__all__ = [
    "QUESTION_COST",
    "SAMPLES",
    "Sample",
    "Shard",
    "assign_shards",
    "parse_shard",
    "sample_questions",
    "shard_text",
]

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


Shard = tuple[int, int]
"""(K, N): the K-th (1-based) of N parts."""

QUESTION_COST = 2000
"""A question's estimated cost in characters of text: its answer prompt (retrieved context) and judging."""


def parse_shard(value: object) -> Shard | None:
    """`run.shard`: null (the whole run) or "K/N" with 1 <= K <= N; ValueError in one line otherwise."""
    if value is None:
        return None
    text = str(value).strip()
    k, sep, n = text.partition("/")
    if sep and k.strip().isdigit() and n.strip().isdigit() and 1 <= int(k) <= int(n):
        return int(k), int(n)
    raise ValueError(f"run.shard must be null or K/N with 1 <= K <= N (e.g. 1/4), not {value!r}")


def shard_text(shard: Shard) -> str:
    return f"{shard[0]}/{shard[1]}"


def assign_shards(costs: Mapping[str, int], n: int) -> list[list[str]]:
    """The ids of `costs` dealt into n parts: largest cost first (ties: the lower id) to the part with the
    least cost so far (ties: the lower part). Each part keeps the ids in `costs`'s order."""
    load = [0] * n
    part_of: dict[str, int] = {}
    for sid in sorted(costs, key=lambda s: (-costs[s], s)):
        part = min(range(n), key=lambda i: (load[i], i))
        part_of[sid] = part
        load[part] += costs[sid]
    return [[sid for sid in costs if part_of[sid] == i] for i in range(n)]
