"""A swappable answer key: score against corrected gold answers, or without the disputed questions.

About 6% of LOCOMO's gold answers are wrong (third-party audits). An answer key file is JSON in one of
two shapes:
- a mapping {qid: answer}, with mem0bench's qids ("conv-26:q12");
- a list of audit entries {"question_id": "locomo_<conversation index>_qa<question index>", "question": ...,
  "correct_answer": ...} (the locomo-audit format; both indexes 0-based, conversations in file order).
Every entry must name a question of the dataset, and audit entries must carry the same question text:
a key built for another version of the file is an error, never a silent mismatch.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, Literal

from mem0bench.data.errors import DatasetError, check_values
from mem0bench.data.model import Dataset, Question

AnswerKeyMode = Literal["replace", "exclude"]
_AUDIT_ID = re.compile(r"^locomo_(\d+)_qa(\d+)$")


def read_answer_key(path: str | Path, dataset: Dataset) -> dict[str, str]:
    """qid -> corrected answer, checked against `dataset`. Raises DatasetError naming file and entry."""
    name = str(path)
    try:
        data: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(f"cannot read the answer key: {exc.strerror or exc}", file=name) from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"invalid JSON at line {exc.lineno}, column {exc.colno}", file=name) from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not UTF-8 text (byte offset {exc.start})", file=name) from None
    except RecursionError:
        raise DatasetError("JSON nested too deeply to read (not an answer key)", file=name) from None
    check_values(data, file=name)  # a NaN answer would become the gold text 'nan'
    by_qid = {q.qid: q for q in dataset.questions}
    if isinstance(data, dict):
        key = {}
        for qid, answer in data.items():
            if qid not in by_qid:
                raise DatasetError(f"unknown question id {qid!r}", file=name, field=qid)
            key[qid] = str(answer)
        return key
    if isinstance(data, list):
        return _from_audit(data, dataset, name)
    raise DatasetError("an answer key is a JSON object {qid: answer} or a list of audit entries", file=name)


def _from_audit(entries: list[Any], dataset: Dataset, name: str) -> dict[str, str]:
    key: dict[str, str] = {}
    for position, entry in enumerate(entries):
        where = f"[{position}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("question_id"), str):
            raise DatasetError("an audit entry needs a 'question_id'", file=name, field=where)
        match = _AUDIT_ID.match(entry["question_id"])
        if match is None:
            raise DatasetError(f"unrecognised question_id {entry['question_id']!r}", file=name, field=where)
        conv_index, q_index = int(match[1]), int(match[2])
        conversation = next((c for c in dataset.conversations if c.position == conv_index), None)
        if conversation is None:
            continue  # a conversation not selected for this run
        question = next((q for q in conversation.questions if q.index == q_index), None)
        if question is None or question.question != entry.get("question"):
            raise DatasetError(
                f"{entry['question_id']} does not match the dataset's question text",
                file=name, sample=conversation.sample_id, field=where,
            )  # fmt: skip
        if "correct_answer" not in entry:
            raise DatasetError("an audit entry needs a 'correct_answer'", file=name, field=where)
        key[question.qid] = str(entry["correct_answer"])
    return key


def apply_answer_key(dataset: Dataset, key: dict[str, str], mode: AnswerKeyMode) -> Dataset:
    """`replace`: the key's answers become the gold; `exclude`: the key's questions are dropped."""
    if mode not in ("replace", "exclude"):
        raise DatasetError(f"dataset.answer_key_mode must be replace or exclude, not {mode!r}")

    def fix(q: Question) -> Question | None:
        if q.qid not in key:
            return q
        return None if mode == "exclude" else dataclasses.replace(q, answer=key[q.qid])

    conversations = tuple(
        dataclasses.replace(c, questions=tuple(f for q in c.questions if (f := fix(q)) is not None))
        for c in dataset.conversations
    )
    return dataclasses.replace(dataset, conversations=conversations)
