"""Hard known-WRONG answers made from each gold answer, for the judge stress test (pure: question in,
items out; the same dataset always gives the same items).

The easy wrong items of the calibration set (another question's gold, "I don't know") cannot show a
judge that accepts anything on topic. These can:
- vague but topical (family `vague`): a date widened to its season (`vague_season`), its year
  (`vague_year`) or "a while ago" (`vague_while`); a number to "a handful" (`vague_number`); a named thing
  to its kind, by what the question asks for (`vague_kind`); a list to "a few different things"
  (`vague_list`);
- specific but wrong (family `specific`): a date moved by days (`date_days`) or months (`date_months`), a
  bare year moved by one (`date_year`), a number changed (`number_changed`), a name swapped for another
  of its kind from the same conversation (`name_swapped`, see `Names`), one item of a list swapped for another answer of the
  conversation (`list_item_swapped`);
- a hedge (family `hedge`): the gold listed among wrong options (`hedge`).
A kind that does not apply to a gold (no date, no number, no name) makes no item for it.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mem0bench.data.model import Conversation, Question

__all__ = ["FAMILIES", "STRESS_KINDS", "Names", "StressAnswer", "proper_nouns", "stress_answers"]

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH = "|".join(MONTHS)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})\s+({_MONTH}),?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}}),?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b({_MONTH}),?\s+(\d{{4}})\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(19\d{2}|20\d{2})\b")
_NUMBER = re.compile(r"\b\d+\b")
NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
)  # fmt: skip
_NUMBER_WORD = re.compile(rf"\b({'|'.join(NUMBER_WORDS)})\b", re.IGNORECASE)
SEASONS = ("winter", "winter", "spring", "spring", "spring", "summer", "summer", "summer", "autumn",
           "autumn", "autumn", "winter")  # fmt: skip
_LIST_SPLIT = re.compile(r"\s*,\s*|\s+and\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
# Capitalised words that are not names even mid-sentence.
_NOT_NAMES = {m.casefold() for m in MONTHS} | {
    "i", "i'm", "i've", "i'll", "i'd", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
    "sunday", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "mom", "dad", "god", "lgbtq", "ok", "okay", "wow", "hey", "hi", "thanks", "yeah", "oh",
}  # fmt: skip

VAGUE_WHILE = "A while ago"
VAGUE_NUMBER = "A handful"
VAGUE_LIST = "A few different things"
VAGUE_KIND = {
    "who": "A person they know",
    "where": "A place they mentioned",
    "other": "One of the things they mentioned",
}
FAMILIES = {
    "vague_season": "vague", "vague_year": "vague", "vague_while": "vague", "vague_number": "vague",
    "vague_kind": "vague", "vague_list": "vague",
    "date_days": "specific", "date_months": "specific", "date_year": "specific",
    "number_changed": "specific", "name_swapped": "specific", "list_item_swapped": "specific",
    "hedge": "hedge",
    # Locomo-Plus's, made from the cues (`suite_calibration`): it has no gold answer to transform.
    "generic_reply": "vague", "wrong_memory": "specific",
}  # fmt: skip
STRESS_KINDS = tuple(FAMILIES)


@dataclass(frozen=True)
class StressAnswer:
    kind: str
    prediction: str

    @property
    def family(self) -> str:
        return FAMILIES[self.kind]


def _month_index(name: str) -> int:
    return [m.casefold() for m in MONTHS].index(name.casefold())


@dataclass(frozen=True)
class _Date:
    """The first date in a gold: where it is, and its day / month (0-based) / year where given."""

    start: int
    end: int
    year: int
    month: int | None = None
    day: int | None = None


def find_date(text: str) -> _Date | None:
    if m := _DAY_MONTH_YEAR.search(text):
        return _Date(m.start(), m.end(), int(m.group(3)), _month_index(m.group(2)), int(m.group(1)))
    if m := _MONTH_DAY_YEAR.search(text):
        return _Date(m.start(), m.end(), int(m.group(3)), _month_index(m.group(1)), int(m.group(2)))
    if m := _MONTH_YEAR.search(text):
        return _Date(m.start(), m.end(), int(m.group(2)), _month_index(m.group(1)))
    if m := _YEAR.search(text):
        return _Date(m.start(), m.end(), int(m.group(1)))
    return None


def _render(day: int | None, month: int | None, year: int) -> str:
    if month is None:
        return str(year)
    return f"{day} {MONTHS[month]} {year}" if day is not None else f"{MONTHS[month]} {year}"


def _date_items(gold: str, date: _Date) -> list[StressAnswer]:
    def replaced(text: str) -> str:
        return gold[: date.start] + text + gold[date.end :]

    items = []
    if date.month is not None:
        items.append(StressAnswer("vague_season", f"Sometime in the {SEASONS[date.month]} of {date.year}"))
        items.append(StressAnswer("vague_year", f"At some point in {date.year}"))
    items.append(StressAnswer("vague_while", VAGUE_WHILE))
    if date.day is not None and date.month is not None:
        moved = date.day + 3 if date.day + 3 <= 28 else date.day - 3  # stays inside every month
        items.append(StressAnswer("date_days", replaced(_render(moved, date.month, date.year))))
    if date.month is not None:
        month, year = (date.month + 2) % 12, date.year + (date.month + 2) // 12
        kept = None if date.day is None else min(date.day, 28)
        items.append(StressAnswer("date_months", replaced(_render(kept, month, year))))
    else:
        items.append(StressAnswer("date_year", replaced(str(date.year - 1))))
    return items


def _number_items(gold: str) -> list[StressAnswer]:
    if m := _NUMBER.search(gold):
        changed = gold[: m.start()] + str(int(m.group()) + 2) + gold[m.end() :]
    elif m := _NUMBER_WORD.search(gold):
        word = NUMBER_WORDS[(NUMBER_WORDS.index(m.group().casefold()) + 2) % len(NUMBER_WORDS)]
        word = word.capitalize() if m.group()[0].isupper() else word
        changed = gold[: m.start()] + word + gold[m.end() :]
    else:
        return []
    return [StressAnswer("vague_number", VAGUE_NUMBER), StressAnswer("number_changed", changed)]


@dataclass(frozen=True)
class Names:
    """The names of one conversation a name can be swapped among.

    `people` and `places` come from the dataset itself: the two speakers, and the answers of the
    conversation's own questions that ask for a person or a name ("Who ...", "What are the names of ...":
    pets and bands included) or a place ("Where ...", "Which city ..."), each kept only if it occurs in the
    conversation's turns. `guessed` is the capitalisation heuristic (words written capitalised after a
    sentence's first word and never in lower case), the fallback for a gold that names none of them.
    Each name maps to how often the turns use it (the speakers first: the most natural wrong name)."""

    speakers: tuple[str, ...]
    people: Counter[str]
    places: Counter[str]
    guessed: Counter[str]

    def __contains__(self, name: object) -> bool:
        return name in self.people or name in self.places or name in self.guessed


_PERSON_QUESTION = re.compile(r"^\s*(who|whom|whose)\b|\bnames?\b|\bnickname", re.IGNORECASE)
_PLACE_QUESTION = re.compile(
    r"^\s*where\b|\b(which|what)\s+(city|cities|country|countries|state|states|town|place)\b", re.IGNORECASE
)
_NAME_PART = re.compile(r"^[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*)*$")  # every word capitalised: "Ed Sheeran"


def _asked_names(conversation: Conversation, asks: re.Pattern[str], text: str) -> Counter[str]:
    """The parts of the golds of the questions `asks` matches that are names (every word capitalised) and
    occur in the turns' `text` as whole words, with their number of occurrences there."""
    found: Counter[str] = Counter()
    for question in conversation.questions:
        if not asks.search(question.question):
            continue
        for part in _LIST_SPLIT.split(question.answer.strip().strip(".")):
            part = part.strip().strip("\"'")
            if not _NAME_PART.match(part) or part.casefold() in _NOT_NAMES:
                continue
            uses = len(re.findall(rf"(?<![\w-]){re.escape(part)}(?![\w-])", text))
            if uses:
                found[part] = uses
    return found


def _guessed_names(conversation: Conversation) -> Counter[str]:
    """The capitalisation heuristic: words written capitalised after a sentence's first word and never
    in lower case, less words that are never names ("I'm", months, weekdays, ...)."""
    capital: Counter[str] = Counter()
    lower: set[str] = set()
    for turn in conversation.turns:
        for sentence in re.split(r"(?<=[.!?])\s+", turn.text):
            words = _WORD.findall(sentence)
            for word in words[1:]:
                if word[0].isupper():
                    capital[word] += 1
                else:
                    lower.add(word.casefold())
    names = Counter(
        {w: n for w, n in capital.items() if w.casefold() not in lower and w.casefold() not in _NOT_NAMES}
    )
    for speaker in conversation.speakers:
        for name in list(names):
            if name != speaker and speaker.startswith(name):  # a nickname ("Mel") is the speaker
                del names[name]
    return names


def proper_nouns(conversation: Conversation) -> Names:
    """The conversation's names (see `Names`), computed once per conversation by a caller making many items."""
    text = "\n".join(t.text for t in conversation.turns)
    people = _asked_names(conversation, _PERSON_QUESTION, text)
    for speaker in conversation.speakers:
        people[speaker] += 1000
    places = _asked_names(conversation, _PLACE_QUESTION, text)
    places = Counter({p: n for p, n in places.items() if p not in people})
    guessed = Counter(
        {w: n for w, n in _guessed_names(conversation).items() if w not in people and w not in places}
    )
    return Names(tuple(conversation.speakers), people, places, guessed)


def _first_name(gold: str, names: Counter[str]) -> str | None:
    """The name of `names` that comes first in `gold` (the longer at the same place), as a whole word."""
    hits = [
        (m.start(), -len(name), name)
        for name in names
        if (m := re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", gold)) is not None
    ]
    return min(hits)[2] if hits else None


def _swap_for(first: str, gold: str, pool: Counter[str], speakers: Sequence[str]) -> str | None:
    """The most used name of `pool` not in `gold` to put in place of `first`: a speaker's for a speaker's,
    another name for any other."""
    others = sorted(
        (w for w in pool if w != first and w not in gold and (w in speakers) == (first in speakers)),
        key=lambda w: (-pool[w], w),
    )
    return others[0] if others else None


def _name_items(
    question: Question, conversation: Conversation, gold: str, names: Names
) -> list[StressAnswer]:
    # A name the dataset gives is swapped for another of its kind (a person for a person, a place for a
    # place); only a gold that names none of them falls back to the capitalised words (and to them alone).
    first = swap = None
    for pool in (names.people, names.places):
        first = _first_name(gold, pool)
        if first is not None:
            swap = _swap_for(first, gold, pool, names.speakers)
            break
    if first is None:
        present = [w for w in _WORD.findall(gold) if w in names.guessed]
        if not present:
            return []
        first = present[0]
        swap = _swap_for(first, gold, names.guessed, names.speakers)
    head = question.question.strip().split(" ", 1)[0].casefold()
    kind = VAGUE_KIND["who"] if head.startswith("who") else VAGUE_KIND.get(head, VAGUE_KIND["other"])
    if swap is None:  # no other name of its kind: the vague item only
        return [StressAnswer("vague_kind", kind)]
    swapped = re.sub(rf"(?<![\w-]){re.escape(first)}(?![\w-])", swap, gold)
    return [StressAnswer("vague_kind", kind), StressAnswer("name_swapped", swapped)]


def _key(question: Question, other: Question) -> str:
    """A fixed order of the pool, its own for each question (so the wrong options vary)."""
    return hashlib.sha256(f"{question.qid}|{other.qid}".encode()).hexdigest()


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _short(text: str) -> bool:
    """One short option (no list, no explanation): what a hedge or a swapped list item can use."""
    return bool(text) and not re.search(r"[,;]", text) and len(text.split()) <= 4


def _others(question: Question, pool: Sequence[Question], n: int) -> list[str]:
    """Up to n short golds of the pool (in `_key` order) unlike this one and each other: neither contains
    the other."""
    chosen: list[str] = []
    taken = [_norm(question.answer)]
    for other in sorted(pool, key=lambda o: _key(question, o)):
        text = _norm(other.answer)
        if other.qid == question.qid or not _short(text) or any(text in t or t in text for t in taken):
            continue
        chosen.append(other.answer)
        taken.append(text)
        if len(chosen) == n:
            break
    return chosen


def _list_items(gold: str, pool_answers: list[str]) -> list[StressAnswer]:
    parts = [p for p in _LIST_SPLIT.split(gold) if p.strip()]
    if len(parts) < 2 or not pool_answers or ";" in gold or not all(len(p.split()) <= 4 for p in parts):
        return []
    if parts[0].casefold() in ("yes", "no", "likely", "likely no", "likely yes", "probably"):
        return []  # an answer with its reason, not a list
    swapped = ", ".join([*parts[:-1], pool_answers[0]])
    return [StressAnswer("vague_list", VAGUE_LIST), StressAnswer("list_item_swapped", swapped)]


def stress_answers(
    question: Question,
    conversation: Conversation,
    pool: Sequence[Question],
    names: Names | None = None,
) -> list[StressAnswer]:
    """The known-WRONG answers this question's gold gives. `pool`: questions of the same conversation and
    category (wrong options for the hedge and the list); `names`: `proper_nouns(conversation)`, computed
    once per conversation by the caller when it makes many."""
    gold = question.answer.strip()
    if not gold:
        return []
    names = proper_nouns(conversation) if names is None else names
    items: list[StressAnswer] = []
    date = find_date(gold)
    if date is not None:
        items += _date_items(gold, date)
    else:
        items += _number_items(gold)
        items += _list_items(gold, _others(question, pool, 1))
        items += _name_items(question, conversation, gold, names)
    wrong = _others(question, pool, 2)
    if wrong:
        options = [*wrong, gold]
        items.append(StressAnswer("hedge", "Either " + ", ".join(options[:-1]) + f" or {options[-1]}"))
    seen: set[str] = set()
    unique = []
    for item in items:  # a transformation that left the gold as it was is no wrong answer
        if _norm(item.prediction) != _norm(gold) and item.kind not in seen:
            seen.add(item.kind)
            unique.append(item)
    return unique
