"""Other systems' published answers, matched to LOCOMO's questions (pure: file records in, matches out).

Accepted shapes (told apart by their content, no flag needed):
- EverMemOS's and MemOS's evaluation output: an object with `detailed_results`, itself an object of
  conversations as below, whose records hold `llm_judgments`, several boolean judgments (one per judge run);
- a JSON object whose keys name conversations (a sample id such as `conv-26`, or any key ending in an
  integer: the 0-based position of the conversation in the LOCOMO file) mapping to lists of records;
- a JSON list, or JSONL, of records that name their conversation in a field (same two forms);
- memU's result object: `detailed_results` as a list of records that name no conversation (matched by text
  and order: importing/unkeyed.py);
- Backboard's `{conversation_id, responses: [records]}`, one file per conversation: a folder of files is
  read as one file. A nested object's fields are read by dotted name (`evaluation.is_correct`).

Each record is matched by conversation and question text (whitespace and case normalised). Unmatched,
ambiguous and duplicate records, golds and categories that differ from LOCOMO's, and judge values that
are not a label are each reported in one line and counted: nothing is dropped silently. A category name
beside LOCOMO's number that disagrees with it (the Mem0 paper's names) is overruled by the number: counted
and said once.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mem0bench.data.errors import DatasetError, check_values
from mem0bench.data.model import Category, Conversation, Dataset, Question

__all__ = [
    "FieldMap", "ImportResult", "ImportedAnswer", "checked_answer", "close_counts", "match_records", "parse_fields",
    "read_data", "read_records",
]  # fmt: skip

DEFAULTS: dict[str, tuple[str, ...]] = {
    "question": ("question", "query"),
    # memU writes generated_answer / standard_answer, Backboard ai_response / expected_answer.
    "prediction": ("prediction", "response", "answer", "generated_answer", "ai_response"),
    "gold": (
        "golden_answer",
        "gold",
        "gold_answer",
        "answer",
        "ground_truth",
        "expected_answer",
        "standard_answer",
    ),
    "category": ("category", "category_id"),
    # A nested verdict is read through its dotted path (records are flattened one level on reading).
    "judge": (
        "grade",
        "llm_score",
        "label",
        "judge",
        "llm_judge",
        "llm_judgments",
        "is_correct",
        "evaluation.is_correct",
    ),
    "conversation": ("conversation", "sample_id", "conversation_id", "conv_id"),
}
# Backboard writes its names in question_type (single_hop beside LOCOMO's 1, temporal_reasoning beside 2).
_CATEGORY_NAMES = ("category_name", "category_label", "category_type", "question_type")
_NAME_SUFFIXES = ("_reasoning",)
_TRAILING_INT = re.compile(r"(\d+)$")
_RESULT_WRAPPER = (
    "detailed_results"  # EverMemOS / MemOS: {..., detailed_results: {conv: [...]}}; memU: a list
)
_RESPONSES = "responses"  # Backboard: {conversation_id, responses: [...]}, one file per conversation
EXPECTED_SHAPES = (
    "a JSON object of conversations (key -> list of records), an EverMemOS/MemOS result object with "
    "'detailed_results' (memU's: a list), Backboard's {conversation_id, responses}, or a JSON list or "
    "JSONL of records"
)
_LABELS = {"CORRECT": True, "WRONG": False, "TRUE": True, "FALSE": False, "1": True, "0": False}


@dataclass(frozen=True)
class FieldMap:
    """Which field of a record holds what; None: the first of DEFAULTS' names the record has."""

    question: str | None = None
    prediction: str | None = None
    gold: str | None = None
    category: str | None = None
    judge: str | None = None
    conversation: str | None = None

    def pick(self, role: str, record: Mapping[str, Any], taken: str | None = None) -> str | None:
        """The field name for `role` in this record (never `taken`, the field already used for another
        role: a record with `answer` and `golden_answer` has its prediction in `answer`)."""
        given = getattr(self, role)
        if given is not None:
            return given if given in record else None
        return next((name for name in DEFAULTS[role] if name in record and name != taken), None)


def parse_fields(text: str | None) -> FieldMap:
    """'question=q,prediction=resp' -> FieldMap; a role it does not know is an error."""
    if not text:
        return FieldMap()
    values: dict[str, str] = {}
    for part in text.split(","):
        role, sep, name = part.partition("=")
        role, name = role.strip(), name.strip()
        if not sep or role not in DEFAULTS or not name:
            raise ValueError(f"--fields: '{part}' is not ROLE=FIELD with ROLE one of {', '.join(DEFAULTS)}")
        values[role] = name
    return FieldMap(**values)


@dataclass(frozen=True)
class Record:
    """One record of the file, with where it came from (for messages) and its conversation key."""

    where: str
    conversation: Any
    data: Mapping[str, Any]


@dataclass(frozen=True)
class ImportedAnswer:
    question: Question
    prediction: str
    labels: tuple[bool | float | None, ...]
    """The file's own judge labels, one per judge run (several when the record holds several judgments,
    as EverMemOS's `llm_judgments`); () when the file has none for this record, None for a run whose value
    is not a label; a graded suite's 1 / 0.5 / 0 as a score."""


@dataclass(frozen=True)
class ImportResult:
    answers: list[ImportedAnswer]
    problems: list[str]
    """One line per record that was not imported as is, in file order."""
    counts: dict[str, int] = field(default_factory=dict)
    """records, matched, unmatched, ambiguous, duplicate, gold_differs, category_differs, bad_judge,
    missing (LOCOMO questions of the matched conversations that no record answers)."""
    notes: list[str] = field(default_factory=list)
    """One-line summaries of how the file was read (how records without a conversation matched, category
    names overruled by the numbers, another judge model): printed after the problems."""


def read_data(path: Path) -> Any:
    """The file's JSON, or its JSONL lines as a list."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"cannot read: {exc.strerror or exc}", file=name) from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not UTF-8 text (byte offset {exc.start}); save it as UTF-8", file=name) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = _jsonl(text, name)
    except RecursionError:
        raise DatasetError("JSON nested too deeply to read (not a file of answers)", file=name) from None
    # A lone surrogate (no answers.jsonl row can hold it) or a NaN (the text 'nan' as an answer): refused
    # before the run folder is made.
    check_values(data, file=name)
    return data


def read_records(path: Path, fields: FieldMap) -> list[Record]:
    """The records of a file, or of every JSON / JSONL file of a folder (Backboard writes one file per
    conversation: the folder is one run), in file-name order."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".json", ".jsonl"))
        if not files:
            raise DatasetError("a folder without .json or .jsonl files", file=str(path))
        return [
            Record(f"{file.name}: {r.where}", r.conversation, r.data)
            for file in files
            for r in read_records(file, fields)
        ]
    name = str(path)
    data = read_data(path)
    records: list[Record] = []
    if isinstance(data, dict) and isinstance(data.get(_RESULT_WRAPPER), dict):
        data = data[_RESULT_WRAPPER]
    if isinstance(data, dict) and isinstance(data.get(_RESULT_WRAPPER), list):
        # memU: {success, ..., detailed_results: [records without a conversation]}; matched by question
        # text and order (importing/unkeyed.py).
        for i, item in enumerate(data[_RESULT_WRAPPER]):
            where = f"{_RESULT_WRAPPER}[{i}]"
            records.append(Record(where, None, _flat(_obj(item, name, where))))
    elif isinstance(data, dict) and isinstance(data.get(_RESPONSES), list):
        # Backboard: one conversation a file, {conversation_id, responses: [records]}.
        key = next((data[k] for k in DEFAULTS["conversation"] if isinstance(data.get(k), (str, int))), None)
        if key is None:
            raise DatasetError(
                f"'{_RESPONSES}' without a conversation field ({', '.join(DEFAULTS['conversation'])})",
                file=name,
            )  # fmt: skip
        for i, item in enumerate(data[_RESPONSES]):
            where = f"{_RESPONSES}[{i}]"
            item = _flat(_obj(item, name, where))
            own = fields.pick("conversation", item)
            records.append(Record(where, item[own] if own else key, item))
    elif isinstance(data, dict):
        for key, items in data.items():
            if not isinstance(items, list):
                raise DatasetError(
                    f"unknown shape: '{key}' holds a {type(items).__name__}, not a list of records; "
                    f"expected {EXPECTED_SHAPES}",
                    file=name,
                )
            records += [
                Record(f"{key}[{i}]", key, _flat(_obj(r, name, f"{key}[{i}]"))) for i, r in enumerate(items)
            ]
    elif isinstance(data, list):
        for i, item in enumerate(data):
            where = f"record {i + 1}"
            item = _flat(_obj(item, name, where))
            role = fields.pick("conversation", item)
            if role is None:
                hint = (
                    " or, for LongMemEval's {question_id, hypothesis} file, add dataset=longmemeval_s "
                    "(or _m, _oracle)" if "question_id" in item else ""
                )  # fmt: skip
                raise DatasetError(
                    f"no conversation field (name it with --fields conversation=...{hint})", file=name,
                    field=where,
                )  # fmt: skip
            records.append(Record(where, item[role], item))
    else:
        raise DatasetError(
            f"unknown shape: a JSON {type(data).__name__}; expected {EXPECTED_SHAPES}", file=name
        )
    for record in records:
        for role in ("question", "prediction"):
            if fields.pick(role, record.data) is None:
                raise DatasetError(
                    f"no {role} field (name it with --fields {role}=...)", file=name, field=record.where
                )
    return records


def _flat(item: Mapping[str, Any]) -> Mapping[str, Any]:
    """The record with each nested object's fields added under dotted names (Backboard's verdict is
    `evaluation.is_correct`); the record's own fields stay as they are."""
    nested = {
        f"{key}.{inner}": value
        for key, obj in item.items()
        if isinstance(obj, Mapping)
        for inner, value in obj.items()
        if f"{key}.{inner}" not in item
    }
    return {**item, **nested} if nested else item


def _jsonl(text: str, name: str) -> list[Any]:
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"neither JSON nor JSONL: line {number}: {exc.msg}", file=name) from None
        except RecursionError:
            raise DatasetError(f"line {number}: JSON nested too deeply to read", file=name) from None
    return rows


def _obj(item: Any, name: str, where: str) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise DatasetError(f"a record must be an object, not {type(item).__name__}", file=name, field=where)
    return item


def normalise(text: Any) -> str:
    return " ".join(str(text).split()).casefold()


def _conversation(key: Any, dataset: Dataset) -> Conversation | None:
    by_id = {c.sample_id: c for c in dataset.conversations}
    if isinstance(key, str) and key in by_id:
        return by_id[key]
    match = _TRAILING_INT.search(str(key)) if not isinstance(key, bool) else None
    if match is None:
        return None
    by_position = {c.position: c for c in dataset.conversations}
    return by_position.get(int(match.group(1)))


def _same_category(value: Any, category: Category) -> bool:
    """The file's category is LOCOMO's number (an int or, as EverMemOS writes it, a string: "4" is
    single-hop, checked against LOCOMO's per-question categories, not guessed from a label) or LOCOMO's own
    name (single_hop). Another source's label ("multi-hop" meaning category 3, as the Mem0 paper uses it)
    is not trusted: it differs and is reported."""
    text = str(value).strip()
    name = text.casefold().replace("-", "_").replace(" ", "_")
    for suffix in _NAME_SUFFIXES:  # 'temporal_reasoning' is LOCOMO's temporal
        name = name.removesuffix(suffix)
    return text == str(int(category)) or name == category.label


def _run_order(key: str) -> tuple[int, str]:
    """judgment_2 before judgment_10: by the key's trailing number, then by name."""
    match = _TRAILING_INT.search(key)
    return (int(match.group(1)) if match else -1, key)


def _labels(value: Any) -> tuple[tuple[bool | None, ...], bool]:
    """(one label per judge run, all understood): an object of several judgments (EverMemOS's
    `llm_judgments`: {judgment_1: true, ...}) or a list is several runs; one value is one run."""
    if isinstance(value, Mapping):
        values = [value[k] for k in sorted(value, key=lambda k: _run_order(str(k)))]
    elif isinstance(value, list):
        values = list(value)
    elif value is None:
        return (), True
    else:
        values = [value]
    found = [_label(v) for v in values]
    return tuple(label for label, _ in found), all(ok for _, ok in found)


def _label(value: Any) -> tuple[bool | None, bool]:
    """(label, understood): bool, 0/1 or CORRECT/WRONG (any case); None / missing is no label."""
    if value is None:
        return None, True
    if isinstance(value, bool):
        return value, True
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value), True
    if isinstance(value, str) and value.strip().upper() in _LABELS:
        return _LABELS[value.strip().upper()], True
    return None, False


def match_records(
    records: Sequence[Record], dataset: Dataset, fields: FieldMap, questions: Mapping[str, Sequence[Question]]
) -> ImportResult:
    """Match each record to one of `questions` (sample id -> the questions in scope)."""
    counts: Counter[str] = Counter(records=len(records))
    problems: list[str] = []
    taken: dict[str, str] = {}  # qid -> where the record that took it is
    answers: list[ImportedAnswer] = []
    conversations_seen: set[str] = set()

    def problem(kind: str, record: Record, text: str) -> None:
        counts[kind] += 1
        problems.append(f"{kind.replace('_', ' ')}: {record.where}: {text}")

    for record in records:
        data = record.data
        question_field = fields.pick("question", data)
        if question_field is None:
            problem("unmatched", record, "no question field")
            continue
        question_text = data[question_field]
        prediction_field = fields.pick("prediction", data)
        conversation = _conversation(record.conversation, dataset)
        if conversation is None:
            problem("unmatched", record, f"no conversation {record.conversation!r} in the dataset")
            continue
        conversations_seen.add(conversation.sample_id)
        wanted = normalise(question_text)
        candidates = [q for q in questions.get(conversation.sample_id, ()) if normalise(q.question) == wanted]
        gold_field = fields.pick("gold", data, taken=prediction_field)
        gold = data.get(gold_field) if gold_field else None
        if len(candidates) > 1 and gold is not None:
            same_gold = [q for q in candidates if normalise(q.answer) == normalise(gold)]
            candidates = same_gold or candidates
        free = [q for q in candidates if q.qid not in taken]
        if not candidates:
            problem(
                "unmatched", record, f"no question {str(question_text)[:80]!r} in {conversation.sample_id}"
            )
            continue
        if len({(normalise(q.answer), q.category) for q in candidates}) > 1:
            ids = ", ".join(q.qid for q in candidates)
            problem("ambiguous", record, f"{str(question_text)[:80]!r} matches {ids} (golds differ)")
            continue
        if not free:  # every interchangeable candidate already has its record: the first one stands
            problem(
                "duplicate", record, f"{candidates[0].qid} already imported from {taken[candidates[0].qid]}"
            )
            continue
        question = free[0]
        taken[question.qid] = record.where
        answers.append(checked_answer(record, question, fields, problem, counts))
    close_counts(counts, answers, conversations_seen, questions, taken)
    notes = category_notes(counts)
    return ImportResult(answers, problems, dict(counts), notes)


def close_counts(
    counts: Counter[str],
    answers: Sequence[ImportedAnswer],
    seen: set[str],
    questions: Mapping[str, Sequence[Question]],
    taken: Mapping[str, str],
) -> None:
    """The closing tallies of a match: matched, missing (questions in scope of the conversations `seen`
    that no record took) and a 0 for each kind of problem that did not occur."""
    counts["matched"] = len(answers)
    counts["missing"] = sum(1 for sid in seen for q in questions.get(sid, ()) if q.qid not in taken)
    for kind in ("unmatched", "ambiguous", "duplicate", "gold_differs", "category_differs", "bad_judge"):
        counts.setdefault(kind, 0)


Problem = Callable[[str, Record, str], None]


def checked_answer(
    record: Record, question: Question, fields: FieldMap, problem: Problem, counts: Counter[str]
) -> ImportedAnswer:
    """The record as the answer to `question`, its gold, category and judge value checked (each
    difference one `problem` line)."""
    data = record.data
    prediction_field = fields.pick("prediction", data)
    gold_field = fields.pick("gold", data, taken=prediction_field)
    gold = data.get(gold_field) if gold_field else None
    if gold is not None and normalise(gold) != normalise(question.answer):
        problem(
            "gold_differs",
            record,
            f"{question.qid}: file {str(gold)[:60]!r}, LOCOMO {question.answer[:60]!r}",
        )
    number, name = _category_parts(data, fields)
    if number is not None and not _same_category(number, question.category):
        problem(
            "category_differs", record, f"{question.qid}: file {number!r}, LOCOMO {int(question.category)}"
        )
    elif number is None and name is not None and not _same_category(name, question.category):
        problem("category_differs", record, f"{question.qid}: file {name!r}, LOCOMO {int(question.category)}")
    elif number is not None and name is not None and not _same_category(name, question.category):
        # Another source's names beside LOCOMO's numbers (the Mem0 paper's 'multi-hop' for category 3):
        # the number is LOCOMO's own and wins; counted, and said once (category_notes).
        counts["category_name_overruled"] += 1
        counts[f"category_name_overruled:{name}->{int(question.category)}"] += 1
    judge_field = fields.pick("judge", data)
    labels, understood = _labels(data.get(judge_field) if judge_field else None)
    if not understood:
        problem(
            "bad_judge", record, f"{question.qid}: judge value {data.get(judge_field or '')!r} is not a label"
        )
    prediction = data.get(prediction_field) if prediction_field else None
    return ImportedAnswer(question, str(prediction or ""), labels)


def _category_parts(data: Mapping[str, Any], fields: FieldMap) -> tuple[Any, Any]:
    """(LOCOMO's category number, a category name) of the record: a file may write both (Backboard:
    `category: 3` beside `category_name: "multi-hop"`), or either in `category`."""
    if fields.category is not None:
        value = data.get(fields.category)
        return (value, None) if _is_number(value) else (None, value)
    values = [data[k] for k in (*DEFAULTS["category"], *_CATEGORY_NAMES) if data.get(k) is not None]
    number = next((v for v in values if _is_number(v)), None)
    name = next((v for v in values if not _is_number(v)), None)
    return number, name


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and str(value).strip().isdigit()


def category_notes(counts: Counter[str]) -> list[str]:
    """One line on category names the numbers overruled (and drop the per-name tallies from counts)."""
    pairs = sorted(k.split(":", 1)[1] for k in counts if k.startswith("category_name_overruled:"))
    for key in [k for k in counts if k.startswith("category_name_overruled:")]:
        del counts[key]
    if not pairs:
        return []
    return [
        f"category names: {counts['category_name_overruled']} records name a category other than their "
        f"LOCOMO number ({', '.join(pairs)}); the numbers are used"
    ]
