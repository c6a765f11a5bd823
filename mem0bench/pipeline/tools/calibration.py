"""The judge's calibration set and its error rates (pure: dataset in, items out; labels in, rates out).

Items with a known right label, built deterministically from the dataset:
- known CORRECT: `gold` (the gold answer itself) and `gold_in_sentence` (the gold inside a plain sentence);
- known WRONG: `other_gold` (the gold of another question of the same category and conversation whose
  answer is different: neither text contains the other) and `dont_know` ("I don't know.").
Per category, the questions used are the `per_category` with the smallest sha256 of their qid: the same
set for the same dataset, whatever the order of the file or the run.

With `stress`, the same questions also give the hard known-WRONG items of `pipeline.tools.stress` (vague but
topical, specific but wrong, a hedge); their false-accept rates are reported apart, per kind, per family
and per category, so the easy items' figures stay what they were.

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
from mem0bench.pipeline.tools.stress import FAMILIES, STRESS_KINDS, proper_nouns, stress_answers

__all__ = [
    "FAMILIES",
    "CalibrationItem",
    "build_calibration_set",
    "error_rates",
    "probe_rates",
    "second_opinion",
    "stress_rates",
]

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


def build_calibration_set(
    dataset: Dataset, per_category: int, *, stress: bool = False
) -> list[CalibrationItem]:
    if per_category < 1:
        raise ValueError(f"the calibration size per category must be >= 1, not {per_category}")
    items: list[CalibrationItem] = []
    conversations = {c.sample_id: c for c in dataset.conversations}
    names = {sid: proper_nouns(c) for sid, c in conversations.items()} if stress else {}
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
            if stress:
                made = stress_answers(q, conversations[q.sample_id], same, names[q.sample_id])
                items += [CalibrationItem(q, a.kind, a.prediction) for a in made]
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

    stress = [i for i in items if i.kind in FAMILIES]
    items = [i for i in items if i.kind not in FAMILIES]
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
    if stress:
        out["stress"] = stress_rates(stress, labels)
    return out


def stress_rates(items: Sequence[CalibrationItem], labels: Mapping[str, bool | None]) -> dict[str, Any]:
    """False-accept rates of the stress items (all known WRONG): per family (vague, specific, hedge) and
    per kind, each overall and per category; judge failures left out and counted."""

    def accepts(subset: Sequence[CalibrationItem]) -> dict[str, Any]:
        judged = [labels.get(i.item_id) for i in subset]
        rate = _rate([bool(v) for v in judged if v is not None])
        rate["failed"] = sum(v is None for v in judged)
        return rate

    def by_category(subset: Sequence[CalibrationItem]) -> dict[str, Any]:
        categories = {}
        for category in SCORED_CATEGORIES:
            inside = [i for i in subset if i.question.category == category]
            if inside:
                categories[category.label] = accepts(inside)
        return {"overall": accepts(subset), "categories": categories}

    families = {}
    for family in dict.fromkeys(FAMILIES.values()):
        subset = [i for i in items if FAMILIES[i.kind] == family]
        if subset:
            families[family] = by_category(subset)
    kinds = {}
    for kind in STRESS_KINDS:
        subset = [i for i in items if i.kind == kind]
        if subset:
            kinds[kind] = by_category(subset)
    return {"items": len(items), "families": families, "kinds": kinds}


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


def probe_rates(
    ours: Mapping[str, bool | None],
    theirs: Mapping[str, Sequence[bool | None]],
    categories: Mapping[str, str],
) -> dict[str, Any]:
    """A file of known-WRONG answers: our judge's false accepts (Wilson interval) beside the file's own
    labels (the share of its judgments that accepted, and its per-answer majority, ties WRONG), with the
    agreement of the two majorities; overall and per category (`categories`: item id -> category)."""

    def majority(values: Sequence[bool | None]) -> bool | None:
        given = [v for v in values if v is not None]
        return None if not given else sum(given) > len(given) / 2

    def block(keys: Sequence[str]) -> dict[str, Any]:
        judged = [k for k in keys if ours.get(k) is not None]
        theirs_all = [v for k in keys for v in theirs.get(k, ()) if v is not None]
        out = {
            "ours_false_accept": _rate([bool(ours[k]) for k in judged]),
            "ours_failed": len(keys) - len(judged),
            "theirs_accept": sum(theirs_all) / len(theirs_all) if theirs_all else None,
            "theirs_judgments": len(theirs_all),
            "theirs_majority_accept": _rate(
                [bool(m) for m in (majority(theirs.get(k, ())) for k in keys) if m is not None]
            ),
        }
        out["agreement"] = second_opinion(
            {k: ours.get(k) for k in keys}, {k: majority(theirs.get(k, ())) for k in keys}
        )
        return out

    keys = list(ours)
    out: dict[str, Any] = {"overall": block(keys), "categories": {}}
    for category in SCORED_CATEGORIES:
        inside = [k for k in keys if categories.get(k) == category.label]
        if inside:
            out["categories"][category.label] = block(inside)
    return out
