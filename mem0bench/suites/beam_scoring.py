"""BEAM's scores, as the authors' code computes them (src/evaluation/ of mohammadtavakoli78/BEAM), pure.

- A question's rubric score: the mean over its rubric items of the judge's 1 / 0.5 / 0. The authors' code
  adds `int(score)` for nine abilities, so a 0.5 counts 0 there; event ordering adds `float(score)` and keeps
  it (`dataset.partial_credit=authors`); ours keeps 0.5 everywhere (`kept`).
- Event ordering: the reply is cut at newlines, each line aligned with the first rubric item not yet used
  that the judge calls the same event (else it stays itself), then Kendall's tau-b between the ranks of the
  rubric items and of the aligned reply over their union (an item missing from one list ranks last, tied),
  normalised to [0, 1]; with precision, recall and F1 of the aligned items and `final_score` = tau * F1.
  The authors' report takes `tau_norm` as the question's score for this ability.
- Averages: the authors' (each ability's mean within a conversation, then the mean over conversations;
  their report stops at the ten abilities, the overall is the mean of those) and the per-question mean,
  each with a 95% bootstrap interval that resamples conversations.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "align",
    "authors_average",
    "conversation_bootstrap",
    "kendall_tau_b",
    "ordering_score",
    "per_question_average",
    "rubric_score",
]


def rubric_score(items: Sequence[float], *, truncate_partial: bool) -> float:
    """The mean over the items; `truncate_partial`: each item as `int()` of it, as the authors' code adds
    them for nine abilities (0.5 becomes 0)."""
    if not items:
        return 0.0
    return sum(float(int(s)) if truncate_partial else s for s in items) / len(items)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two equally long rankings (ties in either corrected for); None where it is
    undefined (one of them all tied, or fewer than two items), where scipy gives NaN."""
    n = len(x)
    if n != len(y):
        raise ValueError("kendall_tau_b needs two rankings of the same length")
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue  # tied in both: counts in neither tie term of tau-b
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return None if denominator == 0 else (concordant - discordant) / denominator


def ordering_score(reference: Sequence[str], aligned: Sequence[str]) -> dict[str, float]:
    """The authors' `event_ordering_score` on a reply already aligned with the rubric items (`align`):
    precision, recall and F1 of the items, `tau_norm` = (tau-b + 1) / 2 over the union's ranks, and
    `final_score` = tau_norm * F1. Where tau-b is undefined (scipy's NaN), tau_norm is 0."""
    ref_set, sys_set = set(reference), set(aligned)
    tp = len(ref_set & sys_set)
    fp = sum(1 for x in aligned if x not in ref_set)
    fn = sum(1 for x in reference if x not in sys_set)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    union = list(dict.fromkeys([*reference, *aligned]))
    last = len(union) + 1

    def ranks(seq: Sequence[str]) -> list[float]:
        position = {item: i + 1 for i, item in enumerate(seq)}  # a repeated item: its last place, as theirs
        return [float(position.get(u, last)) for u in union]

    tau = kendall_tau_b(ranks(reference), ranks(aligned))
    tau_norm = 0.0 if tau is None else (tau + 1) / 2
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "tau_norm": tau_norm,
        "final_score": tau_norm * f1,
    }


async def align(
    reference: Sequence[str], lines: Sequence[str], same: Callable[[int, str, int, str], Awaitable[bool]]
) -> list[str]:
    """The authors' `align_with_llm`: each line of the reply in turn becomes the first rubric item not yet
    used that `same(item index, item, line index, line)` says is the same event, else stays itself. A blank
    line is never asked about (it stays itself, as a NO would leave it)."""
    used: set[int] = set()
    out: list[str] = []
    for k, line in enumerate(lines):
        match = None
        if line.strip():
            for i, item in enumerate(reference):
                if i not in used and await same(i, item, k, line):
                    match = i
                    break
        if match is None:
            out.append(line)
        else:
            out.append(reference[match])
            used.add(match)
    return out


def authors_average(scores: Sequence[tuple[str, str, float]]) -> tuple[float | None, dict[str, float]]:
    """(conversation, ability, score) -> the authors' figures: each ability's mean within each conversation,
    then over the conversations that have it; overall the mean of the abilities' figures."""
    cells: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for conversation, ability, score in scores:
        cells[ability][conversation].append(score)
    by_ability = {
        ability: sum(sum(v) / len(v) for v in per.values()) / len(per)
        for ability, per in sorted(cells.items())
    }
    overall = sum(by_ability.values()) / len(by_ability) if by_ability else None
    return overall, by_ability


def per_question_average(scores: Sequence[tuple[str, str, float]]) -> float | None:
    """The mean over questions."""
    return sum(s for _, _, s in scores) / len(scores) if scores else None


def conversation_bootstrap(
    scores: Sequence[tuple[str, str, float]],
    statistic: Callable[[Sequence[tuple[str, str, float]]], float | None],
    *,
    replicates: int = 1000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """The 95% percentile interval of `statistic` over `replicates` resamplings of the conversations with
    replacement (a conversation drawn twice counts twice: its copies are told apart); None with fewer than
    two conversations."""
    by_conversation: Mapping[str, list[tuple[str, str, float]]] = _group(scores)
    names = sorted(by_conversation)
    if len(names) < 2:
        return None
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(replicates):
        drawn: list[tuple[str, str, float]] = []
        for copy, index in enumerate(rng.integers(0, len(names), size=len(names))):
            drawn += [(f"{c}#{copy}", a, s) for c, a, s in by_conversation[names[index]]]
        value = statistic(drawn)
        if value is not None:
            values.append(value)
    if not values:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def _group(scores: Sequence[tuple[str, str, float]]) -> dict[str, list[tuple[str, str, float]]]:
    out: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    for row in scores:
        out[row[0]].append(row)
    return out


def beam_rows(rows: Sequence[Any], ability_of: Mapping[int, str]) -> list[tuple[str, str, float]]:
    """(conversation, ability, score) of each BEAM row with a score: the mean of its judge runs' exact
    scores (`judge_scores`, written by the rubric judge)."""
    out = []
    for row in rows:
        ability = ability_of.get(row.category_id)
        values = [v for v in (row.extra.get("judge_scores") or []) if v is not None]
        if ability is not None and values:
            out.append((row.conversation, ability, sum(values) / len(values)))
    return out
