"""Two runs on the same questions: paired differences with intervals, exact McNemar, detectable difference.

Rows are paired by question id. Every difference is B - A, per question; its interval comes from the same
two-level bootstrap as metrics.json's (conversations, then questions), applied to the per-question
differences, so what both runs share (the question's difficulty) cancels. McNemar's exact test uses each
question's majority judge label. The minimum detectable difference (MDD) is the true J difference that a
two-sided test at 5% would find with 80% power, given the paired standard error of this comparison.

A difference over fewer paired questions than `fewest_pairs_for_significance()` (6) is marked `too_small`:
no outcome of so few pairs could be significant (not McNemar's test on the labels, nor a sign test on a
score), so it gets no interval and no MDD (a bootstrap over one
or two questions collapses to a point, e.g. [-100, -100], and its zero spread would claim an MDD of 0).
An MDD also needs a spread: with every per-question difference equal the normal approximation has nothing
to stand on, and the MDD is left out rather than shown as 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mem0bench.metrics.significance import (
    fewest_pairs_for_significance,
    mcnemar_exact,
    minimum_detectable_difference,
)
from mem0bench.metrics.uncertainty import cluster_bootstrap
from mem0bench.pipeline.statistics import BootstrapSettings, interval_metrics, row_value
from mem0bench.rundir.schema import PredictionRow, by_category

__all__ = ["CompareError", "Pairing", "compare_pairs", "pair_rows"]


class CompareError(ValueError):
    """Two runs that cannot be compared, said in one line."""


@dataclass(frozen=True)
class Pairing:
    a: list[PredictionRow]
    b: list[PredictionRow]
    """Aligned: a[i] and b[i] answer the same question."""
    only_a: int
    only_b: int
    """Questions only one run has (0 unless --intersect allowed them)."""


def pair_rows(a: Sequence[PredictionRow], b: Sequence[PredictionRow], *, intersect: bool) -> Pairing:
    by_a, by_b = {r.qid: r for r in a}, {r.qid: r for r in b}
    only_a, only_b = set(by_a) - set(by_b), set(by_b) - set(by_a)
    if (only_a or only_b) and not intersect:
        raise CompareError(
            f"the runs answer different questions ({len(only_a)} only in A, {len(only_b)} only in B, "
            f"{len(set(by_a) & set(by_b))} in both): add --intersect to compare the shared ones"
        )
    shared = [qid for qid in by_a if qid in by_b]
    if not shared:
        raise CompareError("the runs share no question")
    differ = [qid for qid in shared if by_a[qid].gold != by_b[qid].gold]
    if differ:
        q = differ[0]
        raise CompareError(
            f"the runs were scored against different answer keys: {len(differ)} questions have different "
            f"golds (e.g. {q}: {by_a[q].gold!r} vs {by_b[q].gold!r})"
        )
    return Pairing([by_a[q] for q in shared], [by_b[q] for q in shared], len(only_a), len(only_b))


def _judge(row: PredictionRow) -> float:
    mean = row.judge_mean
    return float("nan") if mean is None else mean


def _difference(x: float | None, y: float | None) -> float:
    """B - A for one question; NaN where either has no value (a score that does not apply, no label)."""
    return float("nan") if x is None or y is None or x != x or y != y else y - x


def _scope(
    a: Sequence[PredictionRow], b: Sequence[PredictionRow], settings: BootstrapSettings
) -> dict[str, Any]:
    # The metrics metrics.json gives an interval (`interval_metrics`) over both runs' rows, J first.
    metrics = interval_metrics((*a, *b))
    metrics.sort(key=lambda m: not m.from_judge)
    names = [m.name for m in metrics]
    diffs = np.array(
        [[_difference(row_value(m, x), row_value(m, y)) for m in metrics] for x, y in zip(a, b)], dtype=float
    ).reshape(len(a), len(names))
    found = cluster_bootstrap(
        diffs, [r.conversation for r in a], replicates=settings.replicates, seed=settings.seed
    )
    fewest = fewest_pairs_for_significance()
    out: dict[str, Any] = {"n": len(a)}
    for k, (name, interval) in enumerate(zip(names, found)):
        n = int((~np.isnan(diffs[:, k])).sum())  # a question without a judge label has no J difference
        too_small = n < fewest
        out[name] = {
            "delta": interval.estimate,
            "ci95": list(interval.ci95) if interval.ci95 and not too_small else None,
            "stderr": None if too_small else interval.stderr,
            "n": n,
            "too_small": too_small,
        }
    majority = [(x.judge_majority, y.judge_majority) for x, y in zip(a, b)]
    labelled = [(x, y) for x, y in majority if x is not None and y is not None]
    a_only = sum(1 for x, y in labelled if x and not y)
    b_only = sum(1 for x, y in labelled if y and not x)
    out["judge"].update(
        p_mcnemar=mcnemar_exact(a_only, b_only) if labelled else None,
        discordant={"a_only": a_only, "b_only": b_only},
        a=_mean([_judge(x) for x in a]),
        b=_mean([_judge(y) for y in b]),
    )
    return out


def _mean(values: Sequence[float]) -> float | None:
    present = [v for v in values if v == v]
    return sum(present) / len(present) if present else None


def compare_pairs(pairing: Pairing, settings: BootstrapSettings) -> dict[str, Any]:
    """The `overall`, `categories` and `mdd` blocks of compare.json."""
    overall = _scope(pairing.a, pairing.b, settings)
    categories: dict[str, Any] = {}
    mdd: dict[str, float | None] = {}
    index = {id(r): i for i, r in enumerate(pairing.a)}
    for label, subset in by_category(pairing.a):
        keep = [index[id(r)] for r in subset]
        categories[label] = _scope([pairing.a[i] for i in keep], [pairing.b[i] for i in keep], settings)
    for name, block in [*categories.items(), ("overall", overall)]:
        stderr = block["judge"]["stderr"]
        mdd[name] = None if not stderr else 100 * minimum_detectable_difference(stderr)
    return {"n_paired": len(pairing.a), "overall": overall, "categories": categories, "mdd": mdd}


def panel_ranking(panel_a: dict[str, Any] | None, panel_b: dict[str, Any] | None) -> dict[str, Any] | None:
    """Per judge both runs' panel had: J of A, J of B and B - A (each over its run's own questions), and
    whether the order of the two runs changes with the judge. None unless both runs have a panel."""
    if not panel_a or not panel_b:
        return None
    shared = [name for name in panel_a["judges"] if name in panel_b["judges"]]
    judges: dict[str, Any] = {}
    for name in shared:
        a = panel_a["judges"][name]["overall"].get("mean")
        b = panel_b["judges"][name]["overall"].get("mean")
        judges[name] = {"a": a, "b": b, "delta": None if a is None or b is None else b - a}
    signs = {(d > 0) - (d < 0) for d in (j["delta"] for j in judges.values()) if d is not None}
    return {
        "judges": judges,
        "ranking_changes": len(signs) > 1,
        "fleiss_kappa": {"a": panel_a.get("fleiss_kappa"), "b": panel_b.get("fleiss_kappa")},
    }
