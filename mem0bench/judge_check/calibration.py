"""The judge's calibration set and its error rates (pure: dataset in, items out; labels in, rates out).

Items with a known right label, built deterministically from the dataset:
- known CORRECT: `gold` (the gold answer itself) and `gold_in_sentence` (the gold inside a plain sentence);
- known WRONG: `other_gold` (the gold of another question of the same category and conversation whose
  answer is different: neither text contains the other) and `dont_know` ("I don't know.").
Per category, the questions used are the `per_category` with the smallest sha256 of their qid: the same
set for the same dataset, whatever the order of the file or the run.

With `stress`, the same questions also give the hard known-WRONG items of `judge_check.stress` (vague but
topical, specific but wrong, a hedge); their false-accept rates are reported apart, per kind, per family
and per category, so the easy items' figures stay what they were.

False accept = a known-WRONG item judged CORRECT; false reject = a known-CORRECT item judged WRONG. Both
are proportions with Wilson 95% intervals, per category and overall.

Other suites (`dataset.suite`): the categories are the suite's scored ones and its judge grades them with
its own rubric. Where a question has no gold answer to transform (Locomo-Plus's cues, LongMemEval's
abstention and preference questions) the items come from `suite_calibration`; a graded suite's label is a
score (PARTIAL 0.5), so a known-wrong reply judged PARTIAL is half a false accept, as it is half a point of J.
LongMemEval asks one question per conversation (Locomo-Plus one per faithful copy): the pools of other
answers are the category's across the dataset, not the conversation's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mem0bench.data.model import Category, Conversation, Dataset, Question
from mem0bench.judge_check.stress import FAMILIES, STRESS_KINDS, proper_nouns, stress_answers
from mem0bench.judge_check.suite_calibration import SUITE_CORRECT, abstention_answers, cue_answers
from mem0bench.metrics.significance import cohen_kappa, wilson_interval
from mem0bench.suites import all_categories, get_suite, suite_of
from mem0bench.suites.locomo_plus import COGNITIVE
from mem0bench.suites.longmemeval import ABSTENTION, SINGLE_SESSION_PREFERENCE

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
SCORED_CATEGORIES = get_suite("locomo").scored


@dataclass(frozen=True)
class CalibrationItem:
    question: Question
    kind: str
    """gold, gold_in_sentence, other_gold or dont_know."""
    prediction: str

    @property
    def expected(self) -> bool:
        """True: the right label is CORRECT."""
        return self.kind in KNOWN_CORRECT or self.kind in SUITE_CORRECT

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
    suite = get_suite(dataset.suite)
    # LongMemEval asks one question per conversation, Locomo-Plus one per faithful copy: a conversation's
    # pool would hold only the question itself.
    whole_category = dataset.suite != "locomo"
    answered = [q for q in dataset.questions if q.answer.strip()]
    for category in suite.scored:
        pool = [q for q in answered if q.category == category]
        for q in sorted(pool, key=_key)[:per_category]:
            same = pool if whole_category else [o for o in pool if o.sample_id == q.sample_id]
            made = _suite_items(q, same, answered, stress=stress)
            if made is None:
                made = _gold_items(q, same, conversations[q.sample_id], names.get(q.sample_id), stress=stress)
            items += [CalibrationItem(q, kind, prediction) for kind, prediction in made]
    return items


def _suite_items(
    q: Question, same: Sequence[Question], answered: Sequence[Question], *, stress: bool
) -> list[tuple[str, str]] | None:
    """The items of a question that has no gold answer to transform; None for one that has."""
    if q.category == COGNITIVE:
        return cue_answers(q, same, stress=stress)
    if q.category == ABSTENTION:
        return abstention_answers(q, answered)
    if q.category == SINGLE_SESSION_PREFERENCE:
        return [("dont_know", DONT_KNOW)]
    return None


def _gold_items(
    q: Question, same: Sequence[Question], conversation: Conversation, names: Any, *, stress: bool
) -> list[tuple[str, str]]:
    """LOCOMO's items from a gold answer: the two known-correct, the two easy known-wrong, the stress."""
    made = [("gold", q.answer), ("gold_in_sentence", SENTENCE.format(gold=q.answer))]
    other = _other_gold(q, same)
    if other is not None:
        made.append(("other_gold", other))
    made.append(("dont_know", DONT_KNOW))
    if stress:
        made += [(a.kind, a.prediction) for a in stress_answers(q, conversation, same, names)]
    return made


Label = bool | float | None
"""An item's label: True/False (binary), a score 1 / 0.5 / 0 (graded), None (the judge failed)."""
KIND_ORDER = (*KNOWN_CORRECT, "cue_recalled", "abstains", "other_gold", "other_cue", "dont_know",
              "confident_answer")  # fmt: skip


def _rate(labels: Sequence[bool | float]) -> dict[str, Any]:
    """Share of True (a graded 0.5 counting half) with its Wilson interval."""
    n, k = len(labels), float(sum(float(v) for v in labels))
    interval = wilson_interval(k, n)  # type: ignore[arg-type]  # a half count is fine in Wilson's formula
    errors: int | float = int(k) if k.is_integer() else k
    return {
        "n": n,
        "errors": errors,
        "rate": k / n if n else None,
        "ci95": list(interval) if interval else None,
    }


def _error(item: CalibrationItem, label: bool | float) -> float:
    """How wrong the judge was on an item: a known-wrong item's score, or 1 - a known-right item's."""
    return 1.0 - float(label) if item.expected else float(label)


def _categories(items: Sequence[CalibrationItem]) -> list[Category]:
    """The categories of the items, in the order of their ids (LOCOMO's: 1-4, as always)."""
    return sorted({i.question.category for i in items})


def _graded(items: Sequence[CalibrationItem]) -> bool:
    return any(suite_of(int(i.question.category)).grading == "graded" for i in items[:1])


def error_rates(items: Sequence[CalibrationItem], labels: Mapping[str, Label]) -> dict[str, Any]:
    """False-accept and false-reject rates overall, per category and per item kind. `labels`: item_id ->
    True (judged CORRECT), False, a graded score, or None (the judge failed: left out and counted). On a
    graded suite each block also counts the items judged PARTIAL."""
    graded = _graded(items)

    def block(subset: Sequence[CalibrationItem]) -> dict[str, Any]:
        judged = [(i, labels.get(i.item_id)) for i in subset]
        done = [(i, v) for i, v in judged if v is not None]
        out = {
            "false_accept": _rate([_error(i, v) for i, v in done if not i.expected]),
            "false_reject": _rate([_error(i, v) for i, v in done if i.expected]),
            "failed": len(judged) - len(done),
        }
        if graded:
            out["partial"] = sum(1 for _, v in done if v == 0.5)
        return out

    stress = [i for i in items if i.kind in FAMILIES]
    items = [i for i in items if i.kind not in FAMILIES]
    out: dict[str, Any] = {"overall": block(items), "categories": {}, "kinds": {}}
    for category in _categories(items):
        out["categories"][category.label] = block([i for i in items if i.question.category == category])
    locomo = all(i.question.category.suite == "locomo" for i in items)
    present = {i.kind for i in items}
    kinds = (*KNOWN_CORRECT, *KNOWN_WRONG) if locomo else [k for k in KIND_ORDER if k in present]
    for kind in kinds:
        subset = [i for i in items if i.kind == kind]
        judged = [labels.get(i.item_id) for i in subset]
        out["kinds"][kind] = _rate([_error(i, v) for i, v in zip(subset, judged) if v is not None])
    if stress:
        out["stress"] = stress_rates(stress, labels)
    return out


def stress_rates(items: Sequence[CalibrationItem], labels: Mapping[str, Label]) -> dict[str, Any]:
    """False-accept rates of the stress items (all known WRONG): per family (vague, specific, hedge) and
    per kind, each overall and per category; judge failures left out and counted."""

    def accepts(subset: Sequence[CalibrationItem]) -> dict[str, Any]:
        judged = [labels.get(i.item_id) for i in subset]
        rate = _rate([float(v) for v in judged if v is not None])
        rate["failed"] = sum(v is None for v in judged)
        return rate

    def by_category(subset: Sequence[CalibrationItem]) -> dict[str, Any]:
        categories = {}
        for category in _categories(subset):
            categories[category.label] = accepts([i for i in subset if i.question.category == category])
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
    theirs: Mapping[str, Sequence[bool | float | None]],
    categories: Mapping[str, str],
) -> dict[str, Any]:
    """A file of known-WRONG answers: our judge's false accepts (Wilson interval) beside the file's own
    labels (the share of its judgments that accepted, and its per-answer majority, ties WRONG), with the
    agreement of the two majorities; overall and per category (`categories`: item id -> category)."""

    def majority(values: Sequence[bool | float | None]) -> bool | None:
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
    for category in all_categories():
        inside = [k for k in keys if categories.get(k) == category.label]
        if inside:
            out["categories"][category.label] = block(inside)
    return out
