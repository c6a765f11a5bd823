"""`judge.panel`: several judge models over the same answers, each kept apart, and how far they agree.

metrics.json's `judge_panel` gives each judge's J (mean ± std over its runs, overall and per category) and
Fleiss' kappa between the judges, each judge's vote being its majority label over its runs (ties WRONG),
over the questions every judge labelled. Whether the ranking of runs changes with the judge is a question
about several runs: `compare` answers it from the two runs' panels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mem0bench.metrics.judge_stats import fleiss_kappa
from mem0bench.pipeline.aggregate import judge_figures, judge_labels
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.rundir.records import AnswerRecord, Judgement, score_label
from mem0bench.rundir.resume import current_judgements
from mem0bench.rundir.schema import PredictionRow, by_category

__all__ = ["panel_block"]

Labels = list[bool | float | None]


def _matrix(
    judge: JudgeSettings, judgements: list[Judgement], answers: Sequence[AnswerRecord]
) -> dict[str, Labels]:
    """qid -> this judge's labels, one per run; a failed answer is WRONG in every run (as in the rows)."""
    standing = current_judgements(judgements, judge.signature, judge.runs, {a.qid: a for a in answers})
    labels = judge_labels(standing.values(), judge.signature, judge.runs)
    return {
        a.qid: [False] * judge.runs if a.failure else list(labels.get(a.qid, [None] * judge.runs))
        for a in answers
    }


def _majority(labels: Labels) -> bool | None:
    present = [x for x in labels if x is not None]
    return None if not present else sum(present) > len(present) / 2


@dataclass(frozen=True)
class _Labels:
    """One question's labels by one panel judge, in the shape `judge_figures` reads."""

    failure: str | None
    judge: tuple[str | None, ...]


def panel_block(
    judges: Sequence[JudgeSettings],
    judgements: list[Judgement],
    answers: Sequence[AnswerRecord],
    rows: Sequence[PredictionRow],
) -> dict[str, Any]:
    matrices = {j.name: (j, _matrix(j, judgements, answers)) for j in judges}
    out: dict[str, Any] = {}
    failed = {a.qid for a in answers if a.failure}
    for name, (judge, matrix) in matrices.items():
        # The figures of the main judge's, computed the same way (`judge_figures`): a failed answer is
        # WRONG, a judge run with no successful label has no figure, and the count of labels is given.
        as_rows = {
            qid: _Labels(
                failure="failed" if qid in failed else None,
                judge=tuple(score_label(None if v is None else float(v)) for v in labels),
            )
            for qid, labels in matrix.items()
        }
        block: dict[str, Any] = {"overall": judge_figures(list(as_rows.values()), judge.runs)}
        block["categories"] = {
            label: judge_figures([as_rows[r.qid] for r in subset], judge.runs)
            for label, subset in by_category(rows)
        }
        out[name] = block
    votes = [[_majority(m[a.qid]) for _, m in matrices.values()] for a in answers]
    complete = [v for v in votes if all(x is not None for x in v)]
    return {
        "judges": out,
        "fleiss_kappa": fleiss_kappa(complete, len(judges)) if complete else None,
        "n_judged_by_all": len(complete),
    }
