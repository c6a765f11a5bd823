"""Statistics over LLM-judge labels repeated over several runs.

A label matrix has one row per question and one column per run. Each label is True
(CORRECT), False (WRONG) or None (the judge failed for that question in that run); a graded judge
(Locomo-Plus) also gives 0.5 (PARTIAL), so a label is a score in {0, 0.5, 1}.
Failed labels are excluded from every denominator and counted in ``failures``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

__all__ = [
    "STD_DDOF",
    "JudgeSummary",
    "LabelMatrix",
    "fleiss_kappa",
    "judge_summary",
    "majority_accuracy",
    "per_run_accuracy",
]

Label = bool | float | None
_SCORES = (0.0, 0.5, 1.0)
LabelMatrix = Sequence[Sequence[Label]]
STD_DDOF = 0
"""The spread of J over judge runs is the population standard deviation (numpy's ddof 0): the reference
harnesses' definition (mem0's and EverMemOS's, issue 33), so a published "92.62 ± 0.13" imports as itself."""


def _check(matrix: LabelMatrix, runs: int) -> None:
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    for i, row in enumerate(matrix):
        if len(row) != runs:
            raise ValueError(f"question {i} has {len(row)} labels, expected {runs}")
        for label in row:
            if label is not None and not isinstance(label, (bool, np.bool_)) and label not in _SCORES:
                raise TypeError(f"question {i}: label must be True, False, 0.5 or None, got {label!r}")


def per_run_accuracy(matrix: LabelMatrix, runs: int) -> list[float]:
    """Per run: CORRECT / questions labelled in that run (None excluded); NaN if none labelled."""
    _check(matrix, runs)
    out: list[float] = []
    for r in range(runs):
        labels = [float(x) for row in matrix if (x := row[r]) is not None]
        out.append(sum(labels) / len(labels) if labels else math.nan)
    return out


def majority_accuracy(matrix: LabelMatrix, runs: int) -> float:
    """Mean over questions of each question's most frequent label (CORRECT 1, PARTIAL 0.5, WRONG 0).

    The majority is taken over a question's non-None labels; ties go to the lower label (with two labels:
    ties count as WRONG); questions with no label at all are excluded. NaN if no question is labelled.
    """
    _check(matrix, runs)
    votes = []
    for row in matrix:
        labels = [float(x) for x in row if x is not None]
        if labels:
            votes.append(max(sorted(set(labels)), key=labels.count))  # first (lowest) of the most frequent
    return sum(votes) / len(votes) if votes else math.nan


def fleiss_kappa(matrix: LabelMatrix, runs: int) -> float | None:
    """Fleiss' kappa (the labels as categories, runs as raters) over questions labelled in every run.

    None if runs < 2 or no question is fully labelled. When expected agreement is 1
    (every label identical) kappa is 0/0; we define it as 1.0 since agreement is perfect.
    """
    _check(matrix, runs)
    if runs < 2:
        return None
    full = [[float(x) for x in row] for row in matrix if all(x is not None for x in row)]  # type: ignore[arg-type]
    if not full:
        return None
    n = runs
    # Two columns (CORRECT, WRONG) when no PARTIAL was given: the binary kappa exactly as before.
    kinds = (1.0, 0.0, 0.5) if any(x == 0.5 for row in full for x in row) else (1.0, 0.0)
    counts = np.array([[row.count(k) for k in kinds] for row in full], dtype=float)  # (N, categories)
    p_i = ((counts**2).sum(axis=1) - n) / (n * (n - 1))
    p_bar = float(p_i.mean())
    p_j = counts.sum(axis=0) / (len(full) * n)
    p_e = float((p_j**2).sum())
    if math.isclose(p_e, 1.0):
        return 1.0
    return (p_bar - p_e) / (1.0 - p_e)


@dataclass(frozen=True)
class JudgeSummary:
    """J over runs. ``std`` is the population std (ddof 0, `STD_DDOF`) of per-run accuracies, 0.0 with one
    run; ``std_ddof`` names that definition in metrics.json."""

    mean: float
    std: float
    std_ddof: int
    runs: int
    per_run: list[float]
    majority: float
    kappa: float | None
    failures: int

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict; NaN becomes None."""

        def clean(v: object) -> object:
            if isinstance(v, float) and math.isnan(v):
                return None
            if isinstance(v, list):
                return [clean(x) for x in v]
            return v

        return {k: clean(v) for k, v in asdict(self).items()}


def judge_summary(matrix: LabelMatrix, runs: int) -> JudgeSummary:
    """Summarise a label matrix.

    ``mean`` and ``std`` are over runs with at least one label (runs where the judge failed
    on every question are NaN in ``per_run`` and skipped). ``std`` is the population standard
    deviation (ddof 0, as mem0's and EverMemOS's evaluation harnesses compute their "± std" over
    judge runs, so an imported file's spread is the one its authors published) when two or more
    runs are available, else 0.0; NaN when no run has any label.
    """
    per_run = per_run_accuracy(matrix, runs)
    valid = [a for a in per_run if not math.isnan(a)]
    mean = float(np.mean(valid)) if valid else math.nan
    std = math.nan
    if len(valid) == 1:
        std = 0.0
    elif len(valid) > 1:
        std = float(np.std(valid, ddof=STD_DDOF))
    return JudgeSummary(
        mean=mean,
        std=std,
        std_ddof=STD_DDOF,
        runs=runs,
        per_run=per_run,
        majority=majority_accuracy(matrix, runs),
        kappa=fleiss_kappa(matrix, runs),
        failures=sum(1 for row in matrix for x in row if x is None),
    )
