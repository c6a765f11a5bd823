"""The uncertainty and answer-length blocks of metrics.json, added to what `aggregate.metrics` computes.

- `stderr` and `ci95` in the overall block and in each category, for every per-question metric of the
  registry (`metrics.registry`: F1, BLEU-1, LOCOMO F1 and J, and any registered since where it applies), from
  the seeded two-level bootstrap (conversations, then questions within them) of `metrics.uncertainty`.
  J's interval is over questions, on each question's mean label over the judge runs; the spread over judge
  runs (`judge.std`) is a different figure and stays as it is.
- `answer_length` (words: mean and quartiles) overall and per category, and `judge_by_length`: J (majority
  label) for answers of <= 6 words, 7-20 and > 20, since long answers are what lenient judges reward.
- `judge_name` (which judge the `judge` blocks are) and `imported_judge` (an imported run's own labels,
  kept apart once a judge of ours has labelled the same answers).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mem0bench.metrics.registry import Metric, per_question
from mem0bench.rundir.records import Judgement, label_score
from mem0bench.rundir.schema import PredictionRow, by_category

__all__ = ["BootstrapSettings", "LENGTH_BUCKETS", "add_statistics", "answer_words", "imported_judge_block"]

DEFAULT_REPLICATES = 2000
LENGTH_BUCKETS: tuple[tuple[str, int, float], ...] = (
    ("<=6", 0, 6),
    ("7-20", 7, 20),
    (">20", 21, float("inf")),
)
IMPORTED_PREFIX = "imported:"
"""Signature prefix of judgements that came with an imported file (never produced by our judge)."""


@dataclass(frozen=True)
class BootstrapSettings:
    """`eval.bootstrap` (replicates; 2000 or more for a published figure) and `eval.bootstrap_seed`."""

    replicates: int = DEFAULT_REPLICATES
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.replicates, bool) or not isinstance(self.replicates, int) or self.replicates < 2:
            raise ValueError(f"eval.bootstrap must be an integer >= 2, not {self.replicates!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"eval.bootstrap_seed must be an integer, not {self.seed!r}")


def answer_words(prediction: str) -> int:
    """The prediction's length in words (whitespace-separated)."""
    return len(prediction.split())


def row_judge_mean(labels: Sequence[str | None]) -> float:
    """A question's mean judge score over its labelled runs (CORRECT 1, PARTIAL 0.5, WRONG 0); NaN when no
    run labelled it."""
    present = [score for x in labels if (score := label_score(x)) is not None]
    return sum(present) / len(present) if present else float("nan")


def _intervals(rows: Sequence[PredictionRow], settings: BootstrapSettings) -> dict[str, Any]:
    # Imported here, as the runner imports the scorers: mem0bench.metrics pulls in NLTK.
    from mem0bench.metrics.uncertainty import cluster_bootstrap

    metrics = interval_metrics(rows)
    values = np.array([[row_value(m, r) for m in metrics] for r in rows], dtype=float).reshape(
        len(rows), len(metrics)
    )
    found = cluster_bootstrap(
        values, [r.conversation for r in rows], replicates=settings.replicates, seed=settings.seed
    )
    names = [m.name for m in metrics]
    return {
        "stderr": {name: i.stderr for name, i in zip(names, found)},
        "ci95": {name: list(i.ci95) if i.ci95 else None for name, i in zip(names, found)},
    }


def interval_metrics(rows: Iterable[PredictionRow]) -> list[Metric]:
    """The per-question metrics that get an interval over `rows`, in registry order: schema 2's own always
    (an interval of nothing is null), one registered since where a row has it."""
    rows = list(rows)
    return [m for m in per_question() if m.schema or any(r.score(m.name) is not None for r in rows)]


def row_value(m: Metric, row: PredictionRow) -> float | None:
    """A row's value under per-question metric `m`: its score, or for J the mean of its judge labels."""
    return row_judge_mean(row.judge) if m.from_judge else row.score(m.name)


def _length(rows: Sequence[PredictionRow]) -> dict[str, float] | None:
    words = np.array([r.answer_words for r in rows], dtype=float)
    if not words.size:
        return None
    q1, median, q3 = np.percentile(words, [25, 50, 75])
    return {"mean": float(words.mean()), "q1": float(q1), "median": float(median), "q3": float(q3)}


def _by_length(rows: Sequence[PredictionRow]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, lo, hi in LENGTH_BUCKETS:
        means = [row_judge_mean(r.judge) for r in rows if lo <= r.answer_words <= hi]
        labelled = [m for m in means if m == m]  # NaN (never labelled) left out
        out[name] = {
            "n": len(means),
            "judge": sum(m > 0.5 for m in labelled) / len(labelled) if labelled else None,
        }
    return out


def add_statistics(
    metrics: dict[str, Any],
    rows: Sequence[PredictionRow],
    settings: BootstrapSettings,
    *,
    judge_name: str,
) -> dict[str, Any]:
    """metrics with the blocks above added (a new dict; the scores already there are not changed)."""
    out = dict(metrics)
    out["overall"] = {**metrics["overall"], **_intervals(rows, settings)}
    out["overall"]["answer_length"] = _length(rows)
    categories = {}
    for name, block in metrics["categories"].items():
        in_category = [r for r in rows if r.category == name]
        categories[name] = {
            **block,
            **_intervals(in_category, settings),
            "answer_length": _length(in_category),
        }
    out["categories"] = categories
    out["judge_by_length"] = _by_length(rows)
    out["judge_name"] = judge_name
    out["bootstrap"] = {
        "replicates": settings.replicates,
        "seed": settings.seed,
        "levels": ["conversation", "question"],
    }
    return out


def imported_judge_block(
    judgements: Iterable[Judgement], rows: Sequence[PredictionRow]
) -> dict[str, Any] | None:
    """An imported file's own judge (one run per judgment the file held), summarised like ours, overall and
    per category; None if the run has no imported labels."""
    labels: dict[tuple[str, int], bool] = {}
    name = None
    for j in judgements:
        if j.signature.startswith(IMPORTED_PREFIX) and j.label is not None:
            labels[(j.qid, j.run)] = j.label == "CORRECT"
            name = j.signature.removeprefix(IMPORTED_PREFIX)
    if not labels:
        return None
    from mem0bench.metrics import judge_summary

    runs = max(run for _, run in labels) + 1

    def summary(subset: Sequence[PredictionRow]) -> dict[str, Any]:
        return judge_summary([[labels.get((r.qid, k)) for k in range(runs)] for r in subset], runs).to_dict()

    categories = {label: summary(subset) for label, subset in by_category(rows)}
    return {"name": f"{name} (imported)", "overall": summary(rows), "categories": categories}
