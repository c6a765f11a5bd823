"""Known-label answers for the suites whose questions are not LOCOMO's (pure: a question in, answers out).

LOCOMO's calibration items transform a short gold answer. Two kinds of question have none to transform:
- Locomo-Plus's cognitive questions: the "reference" is the cue, an earlier exchange a good reply should
  draw on. Known CORRECT: `cue_recalled` (a reply quoting the cue's first line). Known WRONG: `other_cue`
  (another item's cue, verbatim, as LOCOMO's `other_gold`), `dont_know`, and two stress kinds:
  `wrong_memory` (the very frame of `cue_recalled` quoting another item's cue: only the content tells
  them apart) and `generic_reply` (a warm reply to any message, with no link to a cue).
- LongMemEval's abstention questions: the right reply is that the history does not say. Known CORRECT:
  `gold` (the reference's explanation) and `abstains` ("I don't know."); known WRONG: `confident_answer`
  (another question's gold stated as the answer).
LongMemEval's preference questions are graded against a description of the desired reply, not an answer:
only `dont_know` has a known label there.

What does not apply is said (`not_applicable`), so a table shows "n/a" and never a rate of an empty set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from mem0bench.data.model import Question
from mem0bench.suites.longmemeval import ABSTENTION

__all__ = [
    "ABSTAINS",
    "GENERIC_REPLY",
    "RECALL",
    "SUITE_CORRECT",
    "NotApplicable",
    "abstention_answers",
    "cue_answers",
    "not_applicable",
]

ABSTAINS = "I don't know."
GENERIC_REPLY = "That sounds like a lot going on! How are you feeling about it?"
RECALL = 'That reminds me of what you told me before: "{line}"'
CONFIDENT = "{gold}."
SUITE_CORRECT = ("cue_recalled", "abstains")
"""Known-CORRECT kinds of these suites (LOCOMO's are `gold` and `gold_in_sentence`)."""


@dataclass(frozen=True)
class NotApplicable:
    """Item kinds that give no item for a scope (a suite, or one of its categories), and why."""

    scope: str
    kinds: tuple[str, ...]
    why: str


_LOCOMO_STRESS = ("vague_*", "date_*", "number_changed", "name_swapped", "list_item_swapped")
_NOT_APPLICABLE: dict[str, tuple[NotApplicable, ...]] = {
    "locomo_plus": (
        NotApplicable(
            "cognitive",
            ("gold", "gold_in_sentence", "other_gold"),
            "there is no gold answer: the cue takes its place (cue_recalled, other_cue)",
        ),
        NotApplicable(
            "cognitive", _LOCOMO_STRESS, "they transform a short gold answer, and Locomo-Plus has none"
        ),
        NotApplicable(
            "cognitive",
            ("hedge",),
            "a reply naming the cue among other things draws on it in part: PARTIAL is a fair grade, so "
            "it has no known label",
        ),
    ),  # fmt: skip
    "longmemeval": (
        NotApplicable(
            "single_session_preference",
            ("gold", "gold_in_sentence", "other_gold", "stress kinds"),
            "the reference describes a good reply and is not one; a reply built from it has no known label",
        ),
        NotApplicable(
            "abstention",
            ("other_gold", "dont_know", "stress kinds"),
            "'I don't know' is the right reply here (abstains); the wrong one is a confident answer "
            "(confident_answer); the reference explains why there is no answer, so transforming it makes "
            "nothing known-wrong",
        ),
    ),  # fmt: skip
}


def not_applicable(suite: str) -> tuple[NotApplicable, ...]:
    """What does not apply on `suite` (a LongMemEval variant: its family); () for LOCOMO."""
    return _NOT_APPLICABLE.get("longmemeval" if suite.startswith("longmemeval") else suite, ())


def _key(question: Question, other: Question) -> str:
    return hashlib.sha256(f"{question.qid}|{other.qid}".encode()).hexdigest()


def _first_line(cue: str) -> str:
    """The text of a cue's first line, without its speaker ('Maya: I stopped ...' -> 'I stopped ...')."""
    line = cue.strip().split("\n", 1)[0]
    name, sep, text = line.partition(": ")
    return text.strip() if sep and name and " " not in name.strip() else line.strip()


def cue_answers(question: Question, pool: Sequence[Question], *, stress: bool) -> list[tuple[str, str]]:
    """(kind, prediction) for one cognitive question; `pool`: the other cognitive questions (any copy)."""
    own = _first_line(question.answer)
    others = [
        o for o in sorted(pool, key=lambda o: _key(question, o))
        if o.qid != question.qid and _first_line(o.answer).casefold() != own.casefold()
    ]  # fmt: skip
    items = [("cue_recalled", RECALL.format(line=own))]
    if others:
        items.append(("other_cue", others[0].answer))
    items.append(("dont_know", ABSTAINS))
    if stress:
        items.append(("generic_reply", GENERIC_REPLY))
        if others:
            items.append(("wrong_memory", RECALL.format(line=_first_line(others[0].answer))))
    return items


def abstention_answers(question: Question, pool: Sequence[Question]) -> list[tuple[str, str]]:
    """(kind, prediction) for one abstention question; `pool`: questions that have an answer (another
    category), whose short golds make the confident wrong answer."""
    items = [("gold", question.answer), ("abstains", ABSTAINS)]
    answers = [
        o.answer.strip() for o in sorted(pool, key=lambda o: _key(question, o))
        if o.category != ABSTENTION and 0 < len(o.answer.split()) <= 6
    ]  # fmt: skip
    if answers:
        items.append(("confident_answer", CONFIDENT.format(gold=answers[0].rstrip("."))))
    return items
