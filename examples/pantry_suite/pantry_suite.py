"""Pantry: the smallest complete mem0bench suite of one's own (its README runs it).

A suite is one module that registers itself, plus one dataset yaml naming it (`suite:`) and this module
(`module:`). The module owns everything the harness asks of a suite: its file format (`load`), its
categories (ids disjoint from every other suite's: LOCOMO 1-5, Locomo-Plus 6, LongMemEval 11-17), which of
them are scored, the judge's wording per category, whether the lexical scores apply, and any figure it
reports beyond the micro mean (here "macro J": the mean of its categories' J, a registered metric).

The file (pantry.json) is a JSON list of chats:
    {"id": "...", "speakers": ["A", "B"],
     "sessions": [{"date": "2024-03-02 18:30", "turns": [["A", "text"], ...]}, ...],
     "questions": [{"question": "...", "answer": "...", "kind": "fact" | "preference",
                    "evidence": ["D1:2"]}, ...]}
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from mem0bench.data.errors import DatasetError, check_path_id, parse_json
from mem0bench.data.model import Category, Conversation, Dataset, Question, Session, Turn
from mem0bench.metrics.registry import Metric, register_metric
from mem0bench.suites import DatasetRequest, Rubric, register_suite

# The suite's own categories: (suite, id, name). The name is what run files and metrics.json write.
FACT = Category("pantry", 41, "pantry_fact")
PREFERENCE = Category("pantry", 42, "pantry_preference")
KINDS = {"fact": FACT, "preference": PREFERENCE}

# The judge's words for a category (a category without one is graded by `judge.prompt`, as LOCOMO's).
PREFERENCE_RUBRIC = Rubric(
    "The question asks what one of the speakers likes, dislikes or avoids. Count the answer CORRECT when it "
    "names the same preference as the reference, in any words; count it WRONG when it names another one, "
    "states the opposite, or does not answer.",
    reference="The speaker's preference",
)


def macro_judge(rows: Sequence[Any]) -> float | None:
    """J averaged over the categories (each category's mean of its questions' judge scores), so the two
    preference questions weigh as much as the four facts: the figure this suite reports beside the micro J."""
    by_category: dict[int, list[float]] = {}
    for row in rows:
        if row.judge_mean is not None:
            by_category.setdefault(row.category_id, []).append(row.judge_mean)
    means = [sum(scores) / len(scores) for scores in by_category.values()]
    return sum(means) / len(means) if means else None


# A per-run metric: metrics.json's overall block gets `pantry_macro_j`, the report's Table 1 a column.
register_metric(
    Metric("pantry_macro_j", "macro J", "run", macro_judge, suites=frozenset({"pantry"}), table=True)
)


@register_suite(
    name="pantry",
    title="Pantry (example suite)",
    categories=(FACT, PREFERENCE),
    scored=(FACT, PREFERENCE),
    expected_counts={FACT: 4, PREFERENCE: 2},
    rubrics={PREFERENCE: PREFERENCE_RUBRIC},
    lexical=True,  # short reference answers: F1 and BLEU-1 apply
    notes="an example suite: two chats about cooking, six questions",
)
def load_pantry(request: DatasetRequest) -> Dataset:
    """pantry.json (`dataset.path`, relative to the folder the run starts in) as conversations."""
    path = Path(request.path or "pantry.json")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"cannot read the file ({exc.strerror})", file=str(path)) from None
    chats = parse_json(raw, file=str(path))  # a syntax error: one line with its line and column
    if not isinstance(chats, list):
        raise DatasetError("expected a JSON list of chats", file=str(path))
    wanted = None if request.conversations is None else set(request.conversations)
    conversations = tuple(
        _conversation(chat, i, str(path))
        for i, chat in enumerate(chats)
        if wanted is None or chat.get("id") in wanted
    )
    return Dataset(str(path), hashlib.sha256(raw).hexdigest(), conversations, suite="pantry")


def _conversation(chat: dict[str, Any], position: int, file: str) -> Conversation:
    # The id and the speakers name folders of the run: the harness's one rule for such names.
    sid = check_path_id(str(chat.get("id", f"#{position}")), file=file, sample=position, field="id")
    speaker_a, speaker_b = (
        check_path_id(str(name), file=file, sample=sid, field="speakers") for name in chat["speakers"]
    )
    sessions = []
    for n, session in enumerate(chat["sessions"], start=1):
        turns = tuple(
            Turn(speaker=speaker, dia_id=f"D{n}:{t}", text=text)
            for t, (speaker, text) in enumerate(session["turns"], start=1)
        )
        when = datetime.strptime(session["date"], "%Y-%m-%d %H:%M")
        sessions.append(Session(index=n, date_time=when, date_text=session["date"], turns=turns))
    questions = []
    for i, q in enumerate(chat["questions"]):
        if q.get("kind") not in KINDS:
            raise DatasetError(
                f"unknown kind {q.get('kind')!r} (expected one of {', '.join(KINDS)})",
                file=file, sample=sid, field=f"questions[{i}].kind",
            )  # fmt: skip
        questions.append(
            Question(
                qid=f"{sid}:q{i}",
                sample_id=sid,
                index=i,
                question=q["question"],
                answer=str(q["answer"]),
                category=KINDS[q["kind"]],
                evidence=tuple(q.get("evidence", ())),
            )  # fmt: skip
        )
    return Conversation(sid, speaker_a, speaker_b, tuple(sessions), tuple(questions), position)
