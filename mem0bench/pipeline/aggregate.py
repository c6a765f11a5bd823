"""From answer and judgement rows to `predictions.jsonl` rows and `metrics.json` (pure functions).

All figures are question-weighted (micro) means over the rows. A failed answer is scored as an empty
prediction (0 on every lexical score, WRONG in every judge run) and counted under failures: the system
produced no answer, and hiding the question would flatter it. A judge failure is not a label: it is left
out of that run's accuracy and counted.

Suites other than LOCOMO: a graded judge's PARTIAL counts 0.5 in J (still on the 0-1 scale); where a
suite has no reference answer (Locomo-Plus) the lexical scores are null with `not_applicable` naming them,
never 0; LOCOMO's own F1 is LOCOMO's only. LongMemEval's session-level evidence gives `session_recall`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

from mem0bench.common.errors import ConfigurationError
from mem0bench.metrics import judge_summary, mean, percentile
from mem0bench.metrics.registry import Metric, applicable, per_question, per_run
from mem0bench.rundir.records import AnswerRecord, Judgement, LatencyRecord, label_score, score_label
from mem0bench.rundir.schema import PredictionRow, by_category
from mem0bench.suites import category, suite_of

_BOOKKEEPING = ("session", "ingest_session")
"""Which process answered: kept in answers.jsonl, not a result."""


class Judged(Protocol):
    """What J is computed from: a question's labels (one per judge run) and whether it has no answer."""

    @property
    def failure(self) -> str | None: ...

    @property
    def judge(self) -> tuple[str | None, ...]: ...


JudgeScore = bool | float | None
"""A judge run's label as a score: True/False for CORRECT/WRONG (binary), 0.5 for a graded PARTIAL."""


def judge_labels(judgements: Iterable[Judgement], signature: str, runs: int) -> dict[str, list[JudgeScore]]:
    """qid -> one entry per run: True (CORRECT), False (WRONG), 0.5 (PARTIAL), None (missing or failed)."""
    labels: dict[str, list[JudgeScore]] = defaultdict(lambda: [None] * runs)
    for j in judgements:
        if j.signature != signature or not 0 <= j.run < runs or j.label is None:
            continue
        if j.score is not None:  # a suite's own judge (BEAM's rubric): its exact score
            labels[j.qid][j.run] = float(j.score)
            continue
        score = label_score(j.label)
        labels[j.qid][j.run] = score if score == 0.5 else j.label == "CORRECT"
    return labels


def prediction_rows(
    answers: Sequence[AnswerRecord], labels: Mapping[str, list[JudgeScore]], runs: int
) -> list[PredictionRow]:
    """The per-question rows of predictions.jsonl, scores included (every registered per-question metric:
    `_row_scores`); the answer row's other fields ride along in `extra`."""
    rows = []
    own = PredictionRow.fields()
    for a in answers:
        judged: list[JudgeScore] = [False] * runs if a.failure else list(labels.get(a.qid, [None] * runs))
        extra = {k: v for k, v in a.to_dict().items() if k not in own and k not in _BOOKKEEPING}
        # No context on record and no failure: an imported answer (the file does not say what was
        # retrieved): no recall, rather than a 0.0 that reads as "retrieved nothing".
        unknown = a.context_tokens is None and a.failure is None
        extra["evidence_recall"] = None if unknown else evidence_recall(a.evidence, a.context_dia_ids)
        if a.evidence_sessions:
            extra["session_recall"] = (
                None if unknown else session_recall(a.evidence_sessions, a.context_dia_ids)
            )
        if suite_of(a.category_id).judge is not None:
            # A suite's own judge scores in [0, 1] (BEAM: the mean over rubric items): the exact scores ride
            # along for the suite's figures; the labels J reads are their nearest of 1 / 0.5 / 0.
            extra["judge_scores"] = [None if v is None else float(v) for v in judged]
            judged = [None if v is None else round(float(v) * 2) / 2 for v in judged]
        rows.append(
            PredictionRow(
                qid=a.qid,
                conversation=a.conversation,
                question=a.question,
                gold=a.gold,
                category=a.category,
                category_id=a.category_id,
                prediction=a.prediction,
                scores=_row_scores(a),
                judge=tuple(score_label(None if v is None else float(v)) for v in judged),
                answer_words=len(a.prediction.split()),
                extra=extra,
            )
        )
    return rows


def _row_scores(a: AnswerRecord) -> dict[str, float | None]:
    """The answer's score under each per-question metric that applies to its suite; schema 2's own
    metrics are written as None where they do not apply (the file's fields stay the same for every suite),
    a metric registered since only where it applies."""
    family, lexical = category(a.category_id).suite, suite_of(a.category_id).lexical
    scores: dict[str, float | None] = {}
    for m in per_question():
        if m.from_judge:
            continue
        if applicable(m, family, lexical):
            scores[m.name] = m.score(a.prediction, a.gold, a.category_id)
        elif m.schema:
            scores[m.name] = None
    return scores


def session_recall(sessions: Sequence[int], retrieved: Sequence[str]) -> float | None:
    """Share of the evidence sessions with at least one retrieved turn (dia_ids 'D<session>:<turn>')."""
    wanted = set(sessions)
    if not wanted:
        return None
    found = {int(head[1:]) for d in retrieved if (head := d.split(":", 1)[0])[1:].isdigit()}
    return len(wanted & found) / len(wanted)


def evidence_recall(evidence: Sequence[str], retrieved: Sequence[str]) -> float | None:
    """Share of the gold evidence dia_ids found behind the retrieved context (None without evidence)."""
    wanted = {e.strip() for e in evidence if e and e.strip()}
    if not wanted:
        return None
    return len(wanted & set(retrieved)) / len(wanted)


def judge_figures(rows: Sequence[Judged], runs: int) -> dict[str, Any] | None:
    """J over the rows, standing only on successful judgements.

    A question without a prediction counts as WRONG in a judge run, but only in a run where the judge
    labelled at least one question: a run (or a whole judge) whose calls all failed has no figure (None,
    "n/a"), never 0. `judgements` says how many successful judge labels the figures stand on.
    """
    if not rows:
        return None
    judged = [sum(1 for r in rows if not r.failure and r.judge[k] is not None) for k in range(runs)]
    matrix = [
        [None if v is None or not judged[k] else _as_score(v) for k, v in enumerate(r.judge)] for r in rows
    ]
    summary = judge_summary(matrix, runs).to_dict()
    summary["judgements"] = sum(judged)
    summary["failures"] = sum(1 for r in rows if not r.failure for v in r.judge if v is None)
    return summary


def _as_score(label: str) -> bool | float:
    """A row's judge label for the statistics: True/False, or 0.5 for PARTIAL."""
    return 0.5 if label == "PARTIAL" else label == "CORRECT"


def _scores(rows: Sequence[PredictionRow], runs: int) -> dict[str, Any]:
    """A block of metrics.json: each per-question metric's micro mean over the rows (J: `judge_figures`).
    A metric of schema 2's own that no row has is null and named in `not_applicable` (no reference answer,
    or LOCOMO's F1 off LOCOMO); a metric registered since is left out where no row has it."""
    block: dict[str, Any] = {"n": len(rows)}
    missing = []
    for m in per_question():
        if m.from_judge:
            block[m.name] = judge_figures(rows, runs)
            continue
        present = [v for r in rows if (v := r.score(m.name)) is not None]
        if present or m.schema:
            block[m.name] = mean(present)
        if not present and m.schema:
            missing.append(m.name)
    if missing and rows:
        block["not_applicable"] = missing
    return block


MissingAnswers = Literal["wrong", "skipped"]
MISSING_ANSWERS: tuple[MissingAnswers, ...] = ("wrong", "skipped")


def check_missing_answers(value: object) -> MissingAnswers:
    """`eval.missing_answers` checked: wrong or skipped."""
    if value not in MISSING_ANSWERS:
        raise ConfigurationError(
            f"eval.missing_answers must be one of {', '.join(MISSING_ANSWERS)}, not {value!r}"
        )
    return value


def _run_figures(rows: Sequence[PredictionRow], missing_answers: MissingAnswers = "wrong") -> dict[str, Any]:
    """The per-run metrics (aggregates beyond the micro mean) over the rows of the suites they apply to;
    a metric none of whose suites is in the run is left out. `missing_answers`: skipped leaves the questions
    with no answer (a failed answer row) out of these figures, as LongMemEval's authors' script does; wrong
    keeps them, WRONG in every judge run, as in J."""
    out: dict[str, Any] = {}
    if missing_answers == "skipped":
        rows = [r for r in rows if not r.failure]
    for m in per_run():
        mine = [r for r in rows if _applies(m, r.category_id)]
        if mine:
            out[m.name] = m.over_run(mine)
    return out


def _applies(m: Metric, category_id: int) -> bool:
    return applicable(m, category(category_id).suite, suite_of(category_id).lexical)


def _p50_p95(values: Sequence[float | None]) -> dict[str, float | None] | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return {"p50": percentile(present, 50), "p95": percentile(present, 95)}


def latency_summary(rows: Sequence[PredictionRow]) -> dict[str, Any]:
    """Search and total p50/p95 over the rows none of whose calls came from the cache (a cached reply takes
    microseconds: in a sweep sharing the cache it would pass for a fast server). `n_uncached` says how
    many rows the percentiles rest on; with none, the percentiles are null. Rows of unknown provenance
    (`cached` missing, written by older versions) are not counted as uncached."""
    uncached = [r for r in rows if r.cached is False and not r.failure]
    return {
        "search": _p50_p95([r.search_latency_s for r in uncached]),
        "total": _p50_p95([r.total_latency_s for r in uncached]),
        "n_uncached": len(uncached),
        "n_cached": sum(1 for r in rows if r.cached is True),
    }


def isolated_latency_summary(rows: Sequence[LatencyRecord]) -> dict[str, Any]:
    """metrics.json's `latency_isolated_s` (see `pipeline.latency`): search, total, local and server
    p50/p95 over the questions the isolated pass measured, with what each rests on (`n`: searches,
    `n_total`: rows whose answer call was not served from the cache) and how many retrievals failed."""
    ok = [r for r in rows if r.failure is None]
    return {
        "mode": "isolated",
        "search": _p50_p95([r.search_s for r in ok]),
        "total": _p50_p95([r.total_s for r in ok]),
        "local": _p50_p95([r.local_s for r in ok]),
        "server": _p50_p95([r.server_s for r in ok]),
        "n": sum(1 for r in ok if r.search_s is not None),
        "n_total": sum(1 for r in ok if r.total_s is not None),
        "n_failed": len(rows) - len(ok),
    }


def metrics(
    rows: Sequence[PredictionRow],
    *,
    method: str,
    runs: int,
    memory_tokens: Mapping[str, int | None],
    llm_usage: Mapping[str, Any],
    cost_usd: float,
    failures: Mapping[str, int],
    empty_context_expected: bool = False,
    missing_answers: MissingAnswers = "wrong",
) -> dict[str, Any]:
    """The metrics.json object. `empty_context_expected`: as the run recorded it (see `empty_contexts`).
    `missing_answers` (`eval.missing_answers`) is written beside the per-run figures it shapes, where a run
    has any (other runs' files stay as they were)."""
    overall = _scores(rows, runs)
    overall.pop("n")
    figures = _run_figures(rows, missing_answers)
    overall.update(figures)
    categories = {label: _scores(in_category, runs) for label, in_category in by_category(rows)}
    store = {k: v for k, v in memory_tokens.items() if v is not None}
    recalls = [r.evidence_recall for r in rows if r.evidence_recall is not None]
    by_session = [r.session_recall for r in rows if r.session_recall is not None]
    items = [r.context_items for r in rows if r.context_items is not None]
    return {
        "method": method,
        "n_questions": len(rows),
        "overall": overall,
        "categories": categories,
        "latency_s": latency_summary(rows),
        "tokens": {
            "context_mean": mean([r.context_tokens for r in rows if r.context_tokens is not None]),
            "context_items_mean": mean(items) if items else None,
            "memory_store_per_conversation": store or None,
            "memory_store_mean": mean(list(store.values())) if store else None,
            "llm": dict(llm_usage),
        },
        "cost_usd": cost_usd,
        "evidence_recall": mean(recalls) if recalls else None,
        **({"session_recall": mean(by_session)} if by_session else {}),
        "empty_contexts": empty_contexts(rows, expected=empty_context_expected),
        "failures": dict(failures),
        **({"missing_answers": missing_answers} if figures else {}),
    }


EMPTY_CONTEXT_WARN_SHARE = 0.5
"""Above this share of answered questions with an empty retrieved context, a run ends with a warning."""


def empty_contexts(rows: Sequence[PredictionRow], *, expected: bool = False) -> dict[str, Any]:
    """Answered questions whose retrieved context was empty (no tokens, or no items where the system
    counts them): a system that lost its memories must not pass for one that remembers nothing.
    `expected`: the system declared its contexts empty by design (run.json's `empty_context_expected`);
    the block then says so, and only then, so the blocks of every other run stay as they were."""
    answered = [r for r in rows if not r.failure and r.context_tokens is not None]
    empty = [r for r in answered if r.context_tokens == 0 or r.context_items == 0]
    share = len(empty) / len(answered) if answered else None
    block: dict[str, Any] = {"n": len(empty), "of": len(answered), "share": share}
    if expected:
        block["expected"] = True
    return block


def empty_context_warning(summary: Mapping[str, Any]) -> str | None:
    """The line a run ends with when most retrieved contexts were empty and the system did not declare
    them empty by design (`empty_contexts`'s `expected`), else None."""
    share = summary.get("share")
    if share is None or share <= EMPTY_CONTEXT_WARN_SHARE or summary.get("expected") is True:
        return None
    return (
        f"warning: {summary['n']} of {summary['of']} answered questions had an empty retrieved context "
        f"({share:.0%}): the scores measure a system that remembered nothing; check the ingestion "
        "failures (failures.jsonl, `mem0bench memories`) before reading them"
    )


MEMORY_DECISION_COUNTS = ("invented_ids", "rejected_updates", "guarded_updates")
"""The counts `memory_decision_counts` adds to metrics.json beside `deletes_without_replacement`."""


def memory_decision_counts(ingest_details: Iterable[Mapping[str, Any]]) -> dict[str, int | None]:
    """How often the code overruled or checked a model's memory decision, over the conversations' ingest
    reports (all None for a method that makes no memory decisions):

    * ``invented_ids``: a Mem0 operation on an id the model was not shown (logged INVENTED_ID), plus
      Mem0^g resolver and recurrence-check ids outside the list shown;
    * ``guarded_updates``: UPDATEs of a shown memory, which the information guard checks;
    * ``rejected_updates``: of those, the ones it refused (logged UPDATE_REJECTED; the old memory kept).
    """
    details = [d for d in ingest_details if "pairs" in d]
    if not details:
        return dict.fromkeys(MEMORY_DECISION_COUNTS)

    def total(*keys: str) -> int:
        return sum(int(d.get(key, 0)) for d in details for key in keys)

    return {
        "invented_ids": total("ops.INVENTED_ID", "graph.invented_ids"),
        "rejected_updates": total("ops.UPDATE_REJECTED"),
        "guarded_updates": total("ops.UPDATE", "ops.UPDATE_REJECTED"),
    }


EVIDENCE_COUNTS = ("evidence_ids", "evidence_repaired", "evidence_unusable", "evidence_dangling")


def evidence_id_counts(ingest_details: Iterable[Mapping[str, Any]]) -> dict[str, int] | None:
    """The oracle bound's tally of LOCOMO's evidence ids (all, repaired, unusable, pointing nowhere) over
    the conversations' ingest reports; None for a method that does not read the evidence."""
    details = [d for d in ingest_details if "evidence_ids" in d]
    if not details:
        return None
    return {
        key.removeprefix("evidence_"): sum(int(d.get(key, 0)) for d in details) for key in EVIDENCE_COUNTS
    }


def deletes_without_replacement(ingest_details: Iterable[Mapping[str, Any]]) -> int | None:
    """Mem0 DELETE decisions that stored nothing in place of the memory (a REPLACE is counted apart), over
    the conversations' ingest reports; None for a method that makes no memory decisions."""
    details = [d for d in ingest_details if "pairs" in d]
    return sum(int(d.get("ops.DELETE", 0)) for d in details) if details else None
