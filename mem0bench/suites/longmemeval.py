"""LongMemEval (Wu et al., ICLR 2025): 500 questions, each with its own haystack of user-assistant sessions.

Each question becomes one conversation (its haystack, sessions sorted by date; the oracle file's are not
sorted) with one question, so every system runs through the same protocol as on LOCOMO. Speakers are
`User` and `Assistant`. Turn-level evidence: the `has_answer` turns (as dia_ids "D<session>:<turn>");
session-level evidence: `answer_session_ids` (as session indexes). The six question types are categories;
abstention questions (`question_id` ending in `_abs`) are a seventh, graded as the reference does: the
reply must say the question cannot be answered.

The authors' three figures (`print_qa_metrics.py`) are this suite's per-run aggregates, registered below:
overall (micro), task-averaged (the mean of the six question types' accuracies, each abstention question
counted in its `question_type`, not in our seventh category) and abstention; and each type's accuracy on
that same definition, so a published table's per-type row can be compared figure for figure.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from mem0bench.data.errors import DatasetError, check_path_id, check_values
from mem0bench.data.model import Category, Conversation, Dataset, Question, Session, Turn
from mem0bench.metrics.registry import Metric, register_metric
from mem0bench.paths import cache_home
from mem0bench.suites.base import SUITES, DatasetRequest, Rubric, SourceFile, check_counts, register_suite
from mem0bench.suites.files import resolve_source
from mem0bench.suites.hf_records import read_records

__all__ = ["ABSTENTION", "CATEGORIES", "QUESTION_TYPES", "load_longmemeval", "parse_lme_date"]

# The six question types (ids 11-16) and abstention (17: `question_id` ending in `_abs`) as a seventh, so an
# abstention question is graded by the abstention rubric, as the reference script does.
QUESTION_TYPES: dict[str, Category] = {
    qtype: Category("longmemeval", n, qtype.replace("-", "_"))
    for n, qtype in enumerate(
        ("single-session-user", "single-session-assistant", "single-session-preference", "multi-session",
         "temporal-reasoning", "knowledge-update"),
        11,
    )
}  # fmt: skip
(
    SINGLE_SESSION_USER,
    SINGLE_SESSION_ASSISTANT,
    SINGLE_SESSION_PREFERENCE,
    MULTI_SESSION,
    TEMPORAL_REASONING,
    KNOWLEDGE_UPDATE,
) = QUESTION_TYPES.values()
ABSTENTION = Category("longmemeval", 17, "abstention")
CATEGORIES = (*QUESTION_TYPES.values(), ABSTENTION)
# The paper's counts by question_type (abstention questions counted under their type), and abstention's.
TYPE_COUNTS = {
    SINGLE_SESSION_USER: 70,
    SINGLE_SESSION_ASSISTANT: 56,
    SINGLE_SESSION_PREFERENCE: 30,
    MULTI_SESSION: 133,
    TEMPORAL_REASONING: 133,
    KNOWLEDGE_UPDATE: 78,
    ABSTENTION: 30,
}
SPEAKERS = {"user": "User", "assistant": "Assistant"}
ABSTENTION_TYPES: dict[str, Category] = {}
"""An abstention question's `question_type` by the question's qid, as the loader read it: the authors count
an abstention question in its type. Rows carry the type (`question_type`) since issue 33; for a row
written before, with only our category (abstention), the per-type aggregates below look it up here (filled
when this process loaded the dataset, as a run and `import` do); a row found in neither leaves the by-type
figures out (null), never guessed."""
_DATE = re.compile(r"\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})\s*")

_HUB = "xiaowu0162/longmemeval-cleaned"
_LICENCE = (
    "MIT (the LICENSE of github.com/xiaowu0162/LongMemEval); the hub dataset card's own licence field is "
    "not checked here"
)


def _source(filename: str) -> SourceFile:
    return SourceFile(
        filename,
        f"https://huggingface.co/datasets/{_HUB}/blob/main/{filename}",
        None,
        _LICENCE,
        hub_repo=_HUB,
    )


# Our wording of the reference's per-type grading (src/evaluation/evaluate_qa.py).
_FACT = (
    "Count the response CORRECT when it gives the gold answer, something equivalent to it, or works through "
    "steps that arrive at it. A response that holds only part of what the gold answer needs is WRONG, and so "
    "is one that gives something else or no answer."
)
RUBRICS = {
    SINGLE_SESSION_USER: Rubric(_FACT),
    SINGLE_SESSION_ASSISTANT: Rubric(_FACT),
    MULTI_SESSION: Rubric(_FACT),
    TEMPORAL_REASONING: Rubric(
        _FACT + " A number of days, weeks or months that is off by one from the gold (19 days for 18) still "
        "counts as CORRECT."
    ),
    KNOWLEDGE_UPDATE: Rubric(
        "The information changed over time and the gold answer is its latest state. Count the response "
        "CORRECT when the answer it gives is that latest state, even if it also mentions what held before; "
        "WRONG when it gives an outdated or different answer."
    ),
    SINGLE_SESSION_PREFERENCE: Rubric(
        "The reference is not an answer but a description of what a personalised reply should do. Count the "
        "response CORRECT when it remembers the user's personal information and uses it as the description "
        "asks; it does not need to cover every point. Count it WRONG when it ignores or gets wrong what the "
        "user told.",
        reference="Description of the desired reply",
    ),
    ABSTENTION: Rubric(
        "The question cannot be answered from the chat history; the reference explains why. Count the "
        "response CORRECT when it recognises that it cannot answer: it says the information is missing or "
        "incomplete, or that only something related was mentioned. Count it WRONG when it asserts an answer.",
        reference="Why it cannot be answered",
    ),
}
_COMMON: dict[str, Any] = dict(
    categories=tuple(TYPE_COUNTS),
    scored=tuple(TYPE_COUNTS),
    expected_counts=TYPE_COUNTS,
    counts_note="the release's counts are by question_type, abstention questions included (30 of the 500); "
    "the file's by category count those under abstention",
    released=500,
    grading="binary",
    rubrics=RUBRICS,
    answer_intro=(
        "The conversation is one user's chat history with an AI assistant, over many sessions. The user asks "
        "the question below on {asked_on}: count elapsed time up to that date, and when the history does not "
        "hold the answer, say so."
    ),
    answer_style=(
        "6. Answer briefly: a few words for a fact; where the user asks for a suggestion or advice, one or "
        "two sentences that use what they told you before."
    ),
)


def parse_lme_date(text: str) -> datetime | None:
    """LongMemEval's dates, e.g. '2023/05/20 (Sat) 02:21'; None when not in that form or impossible."""
    m = _DATE.fullmatch(text)
    if m is None:
        return None
    try:
        year, month, day, hour, minute = (int(g) for g in m.groups())
        return datetime(year, month, day, hour, minute)
    except ValueError:
        return None


@register_suite(
    name="longmemeval_s", title="LongMemEval_S", sources=(_source("longmemeval_s_cleaned.json"),),
    notes="LongMemEval_S: ~40 sessions (~115k tokens) per question, 500 haystacks: ~50x LOCOMO's ingestion",
    **_COMMON,
)  # fmt: skip
def load_longmemeval_s(request: DatasetRequest) -> Dataset:
    return load_longmemeval(request, "longmemeval_s")


@register_suite(
    name="longmemeval_m", title="LongMemEval_M", sources=(_source("longmemeval_m_cleaned.json"),),
    notes="LongMemEval_M: ~500 sessions (~1.5M tokens) per question, 500 haystacks: ~500x LOCOMO's "
    "ingestion, and no full-context run fits a model's window",
    **_COMMON,
)  # fmt: skip
def load_longmemeval_m(request: DatasetRequest) -> Dataset:
    return load_longmemeval(request, "longmemeval_m")


@register_suite(
    name="longmemeval_oracle", title="LongMemEval (oracle)", sources=(_source("longmemeval_oracle.json"),),
    notes="LongMemEval oracle: only each question's evidence sessions", **_COMMON,
)  # fmt: skip
def load_longmemeval_oracle(request: DatasetRequest) -> Dataset:
    return load_longmemeval(request, "longmemeval_oracle")


FIELDS = (
    "question_id", "question_type", "question", "answer", "question_date",
    "haystack_session_ids", "haystack_dates", "haystack_sessions", "answer_session_ids",
)  # fmt: skip
"""The fields the repository's README documents, each read as the JSON value the file holds."""
CACHE_FOLDER = "datasets"
"""In the harness's cache folder: where `datasets` keeps the Arrow tables it builds from the files (a
second load of LongMemEval_M maps its table instead of parsing 2.7 GB of JSON again)."""


def load_longmemeval(request: DatasetRequest, suite: str) -> Dataset:
    path = resolve_source(request.path, request.data_dir, SUITES[suite].sources[0])
    file = str(path)
    records = read_records(path, FIELDS, request.cache_dir or cache_home() / CACHE_FOLDER)
    # Each question is a conversation: its question_id names the conversation's folders (state/<id>/).
    ids = [
        check_path_id(
            _req_str({"question_id": q}, "question_id", file, i), file=file, sample=i, field="question_id"
        )
        for i, q in enumerate(records.column("question_id"))
    ]
    # (ids that differ only in case share a folder on a case-insensitive file system: duplicates too)
    if len({q.casefold() for q in ids}) != len(ids):
        folded = Counter(q.casefold() for q in ids)
        twice = next(q for q in ids if folded[q.casefold()] > 1)
        raise DatasetError(
            "duplicate question_id" + ("" if Counter(ids)[twice] > 1 else " (differing only in case)"),
            file=file, sample=twice, field="question_id",
        )  # fmt: skip
    chosen: list[int] = list(range(len(ids)))
    if request.conversations is not None:
        wanted = set(request.conversations)
        unknown = [c for c in request.conversations if c not in set(ids)]
        if unknown:
            raise DatasetError(f"unknown question id(s) {', '.join(unknown[:5])}", file=file)
        chosen = [i for i, q in enumerate(ids) if q in wanted]
    conversations = tuple(_conversation(records[i], ids[i], i, file) for i in chosen)
    dataset = Dataset(path=file, sha256=records.sha256, conversations=conversations, suite=suite)
    if request.conversations is None:
        types = records.column("question_type")  # each checked by `_conversation`
        by_type = Counter(QUESTION_TYPES[types[i]] for i in chosen)
        by_type[ABSTENTION] = sum(1 for q in dataset.questions if q.category == ABSTENTION)
        check_counts(suite, dataset, whole_file=True, found=by_type)
    return dataset


def _conversation(item: dict[str, Any], qid: str, position: int, file: str) -> Conversation:
    qtype = _req_str(item, "question_type", file, qid)
    if qtype not in QUESTION_TYPES:
        raise DatasetError(
            f"unknown question_type {qtype!r} (expected one of {', '.join(QUESTION_TYPES)})",
            file=file, sample=qid, field="question_type",
        )  # fmt: skip
    category = ABSTENTION if qid.endswith("_abs") else QUESTION_TYPES[qtype]
    if category == ABSTENTION:
        ABSTENTION_TYPES[f"{qid}:q0"] = QUESTION_TYPES[qtype]
    lists = {
        "haystack_session_ids": _req_list(item, "haystack_session_ids", file, qid, of_text=True),
        "haystack_dates": _req_list(item, "haystack_dates", file, qid),
        "haystack_sessions": _req_list(item, "haystack_sessions", file, qid),
    }
    if len({len(v) for v in lists.values()}) != 1:
        raise DatasetError(
            "haystack_session_ids, haystack_dates and haystack_sessions differ in length "
            f"({', '.join(str(len(v)) for v in lists.values())})",
            file=file, sample=qid, field="haystack_sessions",
        )  # fmt: skip
    dated = []
    for j, (sid, date_text) in enumerate(
        zip(lists["haystack_session_ids"], lists["haystack_dates"], strict=True)
    ):
        when = parse_lme_date(date_text) if isinstance(date_text, str) else None
        if when is None:
            raise DatasetError(
                f"cannot parse the date {date_text!r} (expected e.g. '2023/05/20 (Sat) 02:21')",
                file=file, sample=qid, field=f"haystack_dates[{j}]",
            )  # fmt: skip
        dated.append((when, j, sid))
    dated.sort(key=lambda d: (d[0], d[1]))  # by date; the oracle file's sessions are not in order
    sessions: list[Session] = []
    index_of: dict[str, int] = {}
    evidence: list[str] = []
    for n, (when, j, sid) in enumerate(dated, start=1):
        turns = _turns(lists["haystack_sessions"][j], n, f"haystack_sessions[{j}]", file, qid, evidence)
        index_of.setdefault(sid, n)
        sessions.append(Session(index=n, date_time=when, date_text=lists["haystack_dates"][j], turns=turns))
    answer_sessions = _req_list(item, "answer_session_ids", file, qid, of_text=True)
    question_date = _req_str(item, "question_date", file, qid)
    if parse_lme_date(question_date) is None:
        raise DatasetError(
            f"cannot parse the date {question_date!r}", file=file, sample=qid, field="question_date"
        )
    answer = item.get("answer")  # text; a number (a count) is taken too, as its text
    if answer is None:
        raise DatasetError("missing field 'answer'", file=file, sample=qid, field="answer")
    if isinstance(answer, (dict, list, bool)):
        raise DatasetError(
            f"expected text or a number, found {_kind(answer)}", file=file, sample=qid, field="answer"
        )
    check_values(answer, file=file, sample=qid, where="answer")  # NaN would become the gold text 'nan'
    question = Question(
        qid=f"{qid}:q0",
        sample_id=qid,
        index=0,
        question=_req_str(item, "question", file, qid),
        answer=str(answer),
        category=category,
        evidence=tuple(evidence),
        evidence_sessions=tuple(sorted({index_of[s] for s in answer_sessions if s in index_of})),
        asked_on=question_date,
        question_type=qtype,
    )
    return Conversation(
        sample_id=qid, speaker_a=SPEAKERS["user"], speaker_b=SPEAKERS["assistant"],
        sessions=tuple(s for s in sessions if s.turns), questions=(question,), position=position,
    )  # fmt: skip


def _turns(raw: Any, n: int, where: str, file: str, qid: str, evidence: list[str]) -> tuple[Turn, ...]:
    if not isinstance(raw, list):
        raise DatasetError(
            f"expected a list of turns, found {_kind(raw)}", file=file, sample=qid, field=where
        )
    turns = []
    for k, t in enumerate(raw, start=1):
        at = f"{where}[{k - 1}]"
        if not isinstance(t, dict):
            raise DatasetError(f"expected a turn object, found {_kind(t)}", file=file, sample=qid, field=at)
        if t.get("role") not in SPEAKERS:
            raise DatasetError(
                f"expected 'user' or 'assistant', found {_kind(t.get('role'))}",
                file=file, sample=qid, field=f"{at}.role",
            )  # fmt: skip
        content = _req_str(t, "content", file, qid, at=f"{at}.content")
        marked = t.get("has_answer")  # only on some turns: the evidence ones, and the answer sessions' others
        if marked is not None and not isinstance(marked, bool):
            raise DatasetError(
                f"expected true or false, found {_kind(marked)}",
                file=file,
                sample=qid,
                field=f"{at}.has_answer",
            )
        dia_id = f"D{n}:{k}"
        if marked:
            evidence.append(dia_id)
        turns.append(Turn(speaker=SPEAKERS[t["role"]], dia_id=dia_id, text=content))
    return tuple(turns)


def _kind(value: Any) -> str:
    """What a JSON value is, for a message."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    return "a list" if isinstance(value, list) else "an object"


def _req_str(item: dict[str, Any], key: str, file: str, sample: str | int, *, at: str | None = None) -> str:
    """`item[key]` as text; absent (None, as `datasets` gives a field a record lacks) or of another type is
    one line naming the record and the field (`at`, else `key`)."""
    value = item.get(key)
    if value is None:
        raise DatasetError(f"missing field {key!r}", file=file, sample=sample, field=at or key)
    if not isinstance(value, str):
        raise DatasetError(f"expected text, found {_kind(value)}", file=file, sample=sample, field=at or key)
    return value


def _req_list(item: dict[str, Any], key: str, file: str, sample: str, *, of_text: bool = False) -> list[Any]:
    value = item.get(key)
    if value is None:
        raise DatasetError(f"missing field {key!r}", file=file, sample=sample, field=key)
    if not isinstance(value, list):
        raise DatasetError(f"expected a list, found {_kind(value)}", file=file, sample=sample, field=key)
    if of_text:
        for j, v in enumerate(value):
            if not isinstance(v, str):
                raise DatasetError(
                    f"expected text, found {_kind(v)}", file=file, sample=sample, field=f"{key}[{j}]"
                )
    return value


# The authors' figures (src/evaluation/print_qa_metrics.py): per-run aggregates over a run's LongMemEval rows.
# A row's score is its judge mean (the share of judge runs that said CORRECT; with one run, its label); a row
# the judge never labelled is left out. A failed answer is WRONG, as in J, unless `eval.missing_answers=skipped`
# (the authors' script skips a question with no answer in the file): the aggregate then passes only answered rows.


def _scored(rows: Sequence[Any]) -> list[tuple[Any, float]]:
    return [(r, r.judge_mean) for r in rows if r.judge_mean is not None]


def _base_type(row: Any) -> Category | None:
    """The question's `question_type`, abstention questions included: the row's own (`question_type`, in
    rows written since it was added), else its category, else (an abstention row of an older file) as the
    dataset loaded in this process says; None if not known."""
    written = getattr(row, "extra", {}).get("question_type")
    if written is not None:
        return QUESTION_TYPES.get(written)
    if row.category_id != int(ABSTENTION):
        return next((c for c in QUESTION_TYPES.values() if int(c) == row.category_id), None)
    return ABSTENTION_TYPES.get(row.qid)


def _by_type(rows: Sequence[Any]) -> dict[Category, list[float]] | None:
    """Each question type's scores, each abstention question in its type; None if some row's type is not
    known (a run aggregated without its dataset loaded)."""
    out: dict[Category, list[float]] = {}
    for row, score in _scored(rows):
        qtype = _base_type(row)
        if qtype is None:
            return None
        out.setdefault(qtype, []).append(score)
    return out


def overall_accuracy(rows: Sequence[Any]) -> float | None:
    """Overall (micro): the mean over every labelled question."""
    scores = [score for _, score in _scored(rows)]
    return sum(scores) / len(scores) if scores else None


def task_averaged_accuracy(rows: Sequence[Any]) -> float | None:
    """Task-averaged: the mean of the question types' accuracies, abstention questions inside their types
    (over the types the run has: all six on a whole file)."""
    by_type = _by_type(rows)
    if not by_type:
        return None
    return sum(sum(v) / len(v) for v in by_type.values()) / len(by_type)


def abstention_accuracy(rows: Sequence[Any]) -> float | None:
    """Abstention: the mean over the `_abs` questions."""
    scores = [score for row, score in _scored(rows) if row.category_id == int(ABSTENTION)]
    return sum(scores) / len(scores) if scores else None


def _type_accuracy(qtype: Category) -> Callable[[Sequence[Any]], float | None]:
    def accuracy(rows: Sequence[Any]) -> float | None:
        by_type = _by_type(rows)
        scores = None if by_type is None else by_type.get(qtype)
        return sum(scores) / len(scores) if scores else None

    accuracy.__doc__ = f"{qtype.label}'s accuracy, its abstention questions included (the authors' tables)."
    return accuracy


_LME = frozenset({"longmemeval"})
AGGREGATES = (
    Metric("lme_overall", "LME overall (micro)", "run", overall_accuracy, suites=_LME, table=True),
    Metric("lme_task_averaged", "LME task-averaged (6 types, _abs inside)", "run", task_averaged_accuracy,
           suites=_LME, table=True),
    Metric("lme_abstention", "LME abstention", "run", abstention_accuracy, suites=_LME, table=True),
    *(
        Metric(f"lme_type_{c.label}", f"LME {c.label} (abstention inside)", "run", _type_accuracy(c),
               suites=_LME)
        for c in QUESTION_TYPES.values()
    ),
)  # fmt: skip
for _m in AGGREGATES:
    register_metric(_m)
