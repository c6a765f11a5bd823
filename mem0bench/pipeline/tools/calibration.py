"""The judge's calibration set and its error rates (pure: dataset in, items out; labels in, rates out).

Items with a known right label, built deterministically from the dataset:
- known CORRECT: `gold` (the gold answer itself) and `gold_in_sentence` (the gold inside a plain sentence);
- known WRONG: `other_gold` (the gold of another question of the same category and conversation whose
  answer is different: neither text contains the other) and `dont_know` ("I don't know.").
Per category, the questions used are the `per_category` with the smallest sha256 of their qid: the same
set for the same dataset, whatever the order of the file or the run.

False accept = a known-WRONG item judged CORRECT; false reject = a known-CORRECT item judged WRONG. Both
are proportions with Wilson 95% intervals, per category and overall.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mem0bench.data.model import Category, Dataset, Question
from mem0bench.metrics.significance import cohen_kappa, wilson_interval

__all__ = ["CalibrationItem", "build_calibration_set", "error_rates", "second_opinion"]

DONT_KNOW = "I don't know."
SENTENCE = "Going by what was said in the conversation, the answer is {gold}."
KNOWN_CORRECT = ("gold", "gold_in_sentence")
KNOWN_WRONG = ("other_gold", "dont_know")
SCORED_CATEGORIES = (Category.MULTI_HOP, Category.TEMPORAL, Category.OPEN_DOMAIN, Category.SINGLE_HOP)


@dataclass(frozen=True)
class CalibrationItem:
    question: Question
    kind: str
    """gold, gold_in_sentence, other_gold or dont_know."""
    prediction: str

    @property
    def expected(self) -> bool:
        """True: the right label is CORRECT."""
        return self.kind in KNOWN_CORRECT

    @property
    def item_id(self) -> str:
        return f"{self.question.qid}#{self.kind}"


def _key(q: Question) -> str:
    return hashlib.sha256(q.qid.encode()).hexdigest()


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _other_gold(q: Question, pool: Sequence[Question]) -> str | None:
    """The first answer (in qid-hash order) of the pool that differs from q's: neither contains the other."""
    mine = _norm(q.answer)
    for other in sorted(pool, key=_key):
        theirs = _norm(other.answer)
        if other.qid != q.qid and theirs and mine not in theirs and theirs not in mine:
            return other.answer
    return None


def build_calibration_set(dataset: Dataset, per_category: int) -> list[CalibrationItem]:
    if per_category < 1:
        raise ValueError(f"the calibration size per category must be >= 1, not {per_category}")
    items: list[CalibrationItem] = []
    for category in SCORED_CATEGORIES:
        pool = [q for q in dataset.questions if q.category == category and q.answer.strip()]
        for q in sorted(pool, key=_key)[:per_category]:
            items.append(CalibrationItem(q, "gold", q.answer))
            items.append(CalibrationItem(q, "gold_in_sentence", SENTENCE.format(gold=q.answer)))
            same = [o for o in pool if o.sample_id == q.sample_id]
            other = _other_gold(q, same)
            if other is not None:
                items.append(CalibrationItem(q, "other_gold", other))
            items.append(CalibrationItem(q, "dont_know", DONT_KNOW))
    return items


def _rate(labels: Sequence[bool]) -> dict[str, Any]:
    """Share of True with its Wilson interval."""
    n, k = len(labels), sum(labels)
    interval = wilson_interval(k, n)
    return {"n": n, "errors": k, "rate": k / n if n else None, "ci95": list(interval) if interval else None}


def error_rates(items: Sequence[CalibrationItem], labels: Mapping[str, bool | None]) -> dict[str, Any]:
    """False-accept and false-reject rates overall, per category and per item kind. `labels`: item_id ->
    True (judged CORRECT), False, or None (the judge failed: left out and counted)."""

    def block(subset: Sequence[CalibrationItem]) -> dict[str, Any]:
        judged = [(i, labels.get(i.item_id)) for i in subset]
        done = [(i, v) for i, v in judged if v is not None]
        return {
            "false_accept": _rate([v for i, v in done if not i.expected]),
            "false_reject": _rate([not v for i, v in done if i.expected]),
            "failed": len(judged) - len(done),
        }

    out: dict[str, Any] = {"overall": block(items), "categories": {}, "kinds": {}}
    for category in SCORED_CATEGORIES:
        subset = [i for i in items if i.question.category == category]
        if subset:
            out["categories"][category.label] = block(subset)
    for kind in (*KNOWN_CORRECT, *KNOWN_WRONG):
        subset = [i for i in items if i.kind == kind]
        judged = [labels.get(i.item_id) for i in subset]
        wrong = [v != i.expected for i, v in zip(subset, judged) if v is not None]
        out["kinds"][kind] = _rate(wrong)
    return out


def second_opinion(ours: Mapping[str, bool | None], theirs: Mapping[str, bool | None]) -> dict[str, Any]:
    """Agreement and Cohen's kappa of two judges over the items both labelled."""
    shared = [k for k in ours if ours[k] is not None and theirs.get(k) is not None]
    a = [bool(ours[k]) for k in shared]
    b = [bool(theirs[k]) for k in shared]
    agree = sum(x == y for x, y in zip(a, b))
    return {
        "n": len(shared),
        "agreement": agree / len(shared) if shared else None,
        "cohen_kappa": cohen_kappa(a, b),
        "ours_correct": sum(a) / len(a) if a else None,
        "theirs_correct": sum(b) / len(b) if b else None,
    }
