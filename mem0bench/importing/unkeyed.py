"""Records that name no conversation (memU's `detailed_results` list), matched to LOCOMO by question text
and order (pure: records in, matches out).

The records come in LOCOMO's order, conversation after conversation, and `qa_index` (the question's
index in its conversation's qa list) restarts at each conversation: a restart opens the next block of
records. A block belongs to the conversation most of its question texts name (the next unclaimed one in
file order when none does). Within it each record is matched, in this order of trust:

- exact: the same question text;
- normalised: the same text after case, whitespace and punctuation are set aside;
- renamed speaker: the same words but for one of the conversation's speaker names, written as another
  word throughout the file's block (memU's questions call two speakers by other names); reported once per
  conversation and name;
- by position: the question at the record's `qa_index` in that conversation, when still free.

A matched LOCOMO adversarial question (category 5) is left out, as our runs leave it out, and reported:
memU's headline counts such records, so the file's own accuracy over all its records is given beside ours.
One line says how many records matched which way.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.importing.imported import (
    FieldMap,
    ImportedAnswer,
    ImportResult,
    Problem,
    Record,
    _labels,
    category_notes,
    checked_answer,
    close_counts,
    normalise,
)  # fmt: skip

__all__ = ["match_unkeyed"]

_WORD = re.compile(r"\w+")
_WAYS = ("exact", "normalised", "renamed speaker", "by position")


def _words(text: Any) -> list[str]:
    return _WORD.findall(str(text).casefold())


def _index(data: Mapping[str, Any]) -> int | None:
    value = data.get("qa_index")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _blocks(records: Sequence[Record]) -> list[list[Record]]:
    """Runs of records whose qa_index grows; records without one continue the current block."""
    blocks: list[list[Record]] = []
    last: int | None = None
    for record in records:
        index = _index(record.data)
        if not blocks or (index is not None and last is not None and index <= last):
            blocks.append([])
        blocks[-1].append(record)
        last = index if index is not None else last
    return blocks


def _rename(words: list[str], question: Question, speakers: set[str]) -> dict[str, str] | None:
    """{dataset speaker name: the file's word} when the texts differ only there (one word each). A word
    that is a speaker's name with a suffix counts too, when the file's word has the same suffix: LOCOMO's
    "Johns's" written "Juans's" is john -> juan."""
    theirs = _words(question.question)
    if len(theirs) != len(words):
        return None
    renamed: dict[str, str] = {}
    for ours, file in zip(theirs, words, strict=True):
        if ours == file:
            continue
        pair = _renamed_pair(ours, file, speakers)
        if pair is None or renamed.setdefault(pair[0], pair[1]) != pair[1]:
            return None
    return renamed or None


def _renamed_pair(ours: str, file: str, speakers: set[str]) -> tuple[str, str] | None:
    """(speaker, the file's name for it) if `ours` is a speaker's name, or one with a short suffix (a
    possessive's "s") that `file` ends with too; else None."""
    if ours in speakers:
        return ours, file
    for name in speakers:
        suffix = ours[len(name) :]
        if (
            ours.startswith(name)
            and 0 < len(suffix) <= 2
            and file.endswith(suffix)
            and len(file) > len(suffix)
        ):
            return name, file[: -len(suffix)]
    return None


def _gold_check(
    problem: Problem, renamed: Mapping[str, str], counts: Counter[str], gold: Any, question: Question
) -> Problem:
    """`problem`, except that a gold differing from LOCOMO's only by the block's renamed speakers (memU
    writes "Juan Williams" for "John Williams" in the golds of the questions it renamed) is counted as
    `gold_renamed`, not reported as a gold that differs."""
    back = {file: ours for ours, file in renamed.items()}

    def check(kind: str, record: Record, text: str) -> None:
        if (
            kind == "gold_differs"
            and back
            and [back.get(w, w) for w in _words(gold)] == _words(question.answer)
        ):
            counts["gold_renamed"] += 1
            return
        problem(kind, record, text)

    return check


def match_unkeyed(
    records: Sequence[Record], dataset: Dataset, fields: FieldMap, questions: Mapping[str, Sequence[Question]]
) -> ImportResult:
    counts: Counter[str] = Counter(records=len(records))
    problems: list[str] = []
    answers: list[ImportedAnswer] = []
    taken: dict[str, str] = {}
    ways: Counter[str] = Counter()
    renames: Counter[tuple[str, str, str]] = Counter()
    adversarial: list[tuple[Record, Question]] = []
    in_scope = {q.qid for qs in questions.values() for q in qs}
    claimed: set[str] = set()  # conversations a block was given to
    seen: set[str] = set()  # conversations a record matched in

    def problem(kind: str, record: Record, text: str) -> None:
        counts[kind] += 1
        problems.append(f"{kind.replace('_', ' ')}: {record.where}: {text}")

    def text_of(record: Record) -> Any:
        name = fields.pick("question", record.data)
        return record.data.get(name) if name else None

    # Each conversation's question texts, normalised once (not again for every record of every block).
    texts = {c.sample_id: {normalise(q.question) for q in c.questions} for c in dataset.conversations}
    for block in _blocks(records):
        conversation = _owner(block, dataset, claimed, text_of, texts)
        if conversation is None:
            for record in block:
                problem("unmatched", record, "no conversation left in the dataset for this block")
            continue
        claimed.add(conversation.sample_id)
        speakers = {w for name in conversation.speakers for w in _words(name)}
        block_renames: dict[str, str] = {}
        pending: list[tuple[Record, Question]] = []  # checked once the block's renamed speakers are known
        for record in block:
            text = text_of(record)
            free = [q for q in conversation.questions if q.qid not in taken]
            question, way, renamed = _find(text, _index(record.data), free, speakers)
            if question is None:  # a file without qa_index runs on into the next conversation
                question, way = _elsewhere(text, dataset, conversation, taken)
                renamed = None
            if question is None:
                everywhere = [q for q in conversation.questions if normalise(q.question) == normalise(text)]
                if everywhere:
                    problem(
                        "duplicate",
                        record,
                        f"{everywhere[0].qid} already imported from {taken[everywhere[0].qid]}",
                    )
                else:
                    problem(
                        "unmatched", record, f"no question {str(text)[:80]!r} in {conversation.sample_id}"
                    )
                continue
            taken[question.qid] = record.where
            seen.add(question.sample_id)
            ways[way] += 1
            for ours, file in (renamed or {}).items():
                renames[(conversation.sample_id, ours, file)] += 1
                block_renames.setdefault(ours, file)
            if way == "by position":
                problems.append(
                    f"by position: {record.where}: {question.qid} (qa_index {question.index}): file "
                    f"{str(text)[:60]!r}, LOCOMO {question.question[:60]!r}"
                )
            if question.qid not in in_scope:
                adversarial.append((record, question))
                continue
            pending.append((record, question))
        for record, question in pending:
            prediction_field = fields.pick("prediction", record.data)
            gold_field = fields.pick("gold", record.data, taken=prediction_field)
            gold = record.data.get(gold_field) if gold_field else None
            check = _gold_check(problem, block_renames, counts, gold, question)
            answers.append(checked_answer(record, question, fields, check, counts))
    counts["adversarial"] = len(adversarial)
    counts["renamed_speakers"] = len(renames)
    for way in _WAYS:
        counts[f"matched_{way.replace(' ', '_')}"] = ways[way]
    close_counts(counts, answers, seen, questions, taken)
    notes = [
        "records without a conversation id, matched by question text and order: "
        + ", ".join(f"{ways[w]} {w}" for w in _WAYS)
        + f", {counts['unmatched']} unmatched"
        + _verdict(records, fields)
    ]
    notes += [
        f"renamed speaker: {sid}: the file writes {file!r} for {ours!r} ({n} questions)"
        for (sid, ours, file), n in sorted(renames.items())
    ]
    if counts["gold_renamed"]:
        notes.append(
            f"renamed speaker: {counts['gold_renamed']} of the file's golds differ from LOCOMO's only by a "
            "renamed speaker (not counted as gold differs; LOCOMO's gold is scored)"
        )
    if adversarial:
        ids = ", ".join(q.qid for _, q in adversarial)
        notes.append(
            f"adversarial: {len(adversarial)} records answer LOCOMO category 5 questions ({ids}), left out as "
            "in our runs (--include-adversarial keeps them)" + _headline(records, fields, adversarial)
        )
    notes += category_notes(counts)
    return ImportResult(answers, problems, dict(counts), notes)


def _headline(records: Sequence[Record], fields: FieldMap, adversarial: list[tuple[Record, Question]]) -> str:
    """The file's own accuracy over all its labelled records, which is what its headline counts."""
    labels = []
    for record in records:
        name = fields.pick("judge", record.data)
        found, _ = _labels(record.data.get(name) if name else None)
        labels += [v for v in found[:1] if v is not None]
    if not labels:
        return ""
    return (
        f"; the file's own labels over all {len(labels)} labelled records, these included: "
        f"{100 * sum(labels) / len(labels):.2f}%"
    )


def _owner(
    block: list[Record],
    dataset: Dataset,
    claimed: set[str],
    text_of: Any,
    texts: Mapping[str, set[str]],
) -> Conversation | None:
    """The conversation most of the block's question texts name (`texts`: each conversation's normalised
    question texts); else the next unclaimed one in order."""
    votes: Counter[str] = Counter()
    for record in block:
        wanted = normalise(text_of(record))
        for c in dataset.conversations:
            if c.sample_id not in claimed and wanted in texts[c.sample_id]:
                votes[c.sample_id] += 1
    if votes:
        best = votes.most_common(1)[0][0]
        return next(c for c in dataset.conversations if c.sample_id == best)
    return next((c for c in dataset.conversations if c.sample_id not in claimed), None)


def _find(
    text: Any, index: int | None, free: list[Question], speakers: set[str]
) -> tuple[Question | None, str, dict[str, str] | None]:
    """(question, how it matched, the speaker renamed) among the conversation's free questions."""

    def first(found: list[Question]) -> Question | None:
        return next((q for q in found if q.index == index), found[0] if found else None)

    raw = str(text).strip()
    if (hit := first([q for q in free if q.question.strip() == raw])) is not None:
        return hit, "exact", None
    words = _words(text)
    if (hit := first([q for q in free if _words(q.question) == words])) is not None:
        return hit, "normalised", None
    for q in free:
        renamed = _rename(words, q, speakers)
        if renamed:
            return q, "renamed speaker", renamed
    at = next((q for q in free if q.index == index), None)
    return (at, "by position", None) if at is not None else (None, "", None)


def _elsewhere(
    text: Any, dataset: Dataset, here: Conversation, taken: Mapping[str, str]
) -> tuple[Question | None, str]:
    """The one free question of another conversation with this text (exact, else normalised), if exactly
    one conversation has it: records without qa_index are not cut into blocks."""
    raw, words = str(text).strip(), _words(text)
    for way, same in (
        ("exact", lambda q: q.question.strip() == raw),
        ("normalised", lambda q: _words(q.question) == words),
    ):
        found = [
            q
            for c in dataset.conversations
            if c is not here
            for q in c.questions
            if q.qid not in taken and same(q)
        ]
        if len({q.sample_id for q in found}) == 1:
            return found[0], way
    return None, ""


def _verdict(records: Sequence[Record], fields: FieldMap) -> str:
    """Which field the verdicts came from: memU's files also hold other booleans (`success`, the call's)."""
    names = Counter(fields.pick("judge", r.data) for r in records)
    if not any(names):
        return "; no verdict field (name it with --fields judge=FIELD)"
    return "; verdicts from " + ", ".join(f"'{n}'" for n in names if n)
