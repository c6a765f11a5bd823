"""Other harnesses' answers to LongMemEval and Locomo-Plus, matched by each suite's own question identity
(pure: file records in, matches out). LOCOMO's files are `imported`'s.

- LongMemEval: the files its evaluation script reads and writes (src/evaluation/evaluate_qa.py): JSONL (or
  a JSON list) of `{question_id, hypothesis}`, and its log, where each line also has
  `autoeval_label: {model, label}` (a boolean: one run of the file's judge). Matched by `question_id`; an
  optional `question_type` is checked against the question's category (an abstention question, `_abs`,
  keeps its type in the file). A label from a judge model other than gpt-4o-2024-08-06 is counted and
  flagged in one line. A folder holding a hypotheses file and a labels file (`{question_id, question_type,
  correct}`) is joined on question_id (`read_suite_rows`). With no dataset file at hand, records that carry
  their type are scored on their own ids, types and labels (`dataset_from_records`), nothing matched.
- Locomo-Plus: the JSON list its evaluation framework writes (evaluation_framework/task_eval/
  evaluate_qa.py, then llm_as_judge.py): `{question_input, evidence, category, ground_truth, prediction,
  model, time_gap}` and, once judged, `judge_label` (correct / partial / wrong) and `judge_score` (1 / 0.5
  / 0). The records carry no item id: an item is its trigger, so a record is matched by the trigger's text
  (`question_input`, A/B or speaker names dropped) and, when triggers repeat, by the cue (`evidence`).
  Records of LOCOMO's own categories (the framework writes both in one file) are counted apart, not matched.

A file that is not the suite's (no `question_id` on a LongMemEval import, no trigger on a Locomo-Plus one)
is one line naming the file, the record and what the suite reads.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mem0bench.data.errors import DatasetError
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.importing.imported import FieldMap, ImportedAnswer, ImportResult, Record, normalise, read_data
from mem0bench.prompts.lme_judge import LME_JUDGE_MODEL  # the one model whose labels the authors accept
from mem0bench.suites.longmemeval import ABSTENTION, QUESTION_TYPES

__all__ = [
    "LME_JUDGE_MODEL", "LME_SHAPE", "PLUS_SHAPE", "dataset_from_records", "match_suite_records", "read_suite_rows",
    "suite_records",
]  # fmt: skip

LME_SHAPE = "LongMemEval's hypothesis file: JSONL of {question_id, hypothesis} (optionally autoeval_label)"
PLUS_SHAPE = (
    "Locomo-Plus's evaluation output: a JSON list of {question_input, evidence, category, prediction} "
    "(optionally judge_label / judge_score)"
)
_PREDICTION = {"longmemeval": ("hypothesis", "prediction"), "locomo_plus": ("prediction", "response")}
_QUESTION = {"longmemeval": ("question_id",), "locomo_plus": ("question_input", "trigger", "question")}
_JUDGE = {"longmemeval": ("autoeval_label", "correct"), "locomo_plus": ("judge_label", "judge_score")}
_GRADES = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}
_SPEAKER = re.compile(r"^[^:：\n]{1,40}[:：]\s*")
_COGNITIVE = "cognitive"


def family(suite: str) -> str:
    return "longmemeval" if suite.startswith("longmemeval") else suite


def _pick(data: Mapping[str, Any], given: str | None, names: Sequence[str]) -> str | None:
    if given is not None:
        return given if given in data else None
    return next((n for n in names if n in data), None)


def suite_records(file: str, rows: Any, suite: str, fields: FieldMap) -> list[Record]:
    """The file's rows (its parsed JSON or JSONL) as records of `suite`; a file or a row of another shape
    is one DatasetError line."""
    kind = family(suite)
    shape = LME_SHAPE if kind == "longmemeval" else PLUS_SHAPE
    if isinstance(rows, Mapping):  # a JSONL file of one line parses as one JSON object
        rows = [rows]
    if not isinstance(rows, list):
        raise DatasetError(
            f"a JSON {type(rows).__name__}, not {shape}; is it a file of another suite? (dataset={suite} here)",
            file=file,
        )  # fmt: skip
    records = []
    for i, row in enumerate(rows):
        where = f"record {i + 1}"
        if not isinstance(row, Mapping):
            raise DatasetError(
                f"a record must be an object, not {type(row).__name__}", file=file, field=where
            )
        key = _pick(row, fields.question, _QUESTION[kind])
        if key is None or _pick(row, fields.prediction, _PREDICTION[kind]) is None:
            missing = "question_id" if kind == "longmemeval" and key is None else (
                "a trigger (question_input)" if key is None else "a prediction"
            )  # fmt: skip
            raise DatasetError(
                f"no {missing}: not {shape}; is it a file of another suite? (dataset={suite} here)",
                file=file, field=where,
            )  # fmt: skip
        records.append(Record(where, row[key], row))
    return records


def _plain(text: Any) -> str:
    """A dialogue's words without its speakers ('A: ...', 'Maya: ...', 'Maya：...'), normalised."""
    return normalise(" ".join(_SPEAKER.sub("", line) for line in str(text).splitlines() if line.strip()))


def _grade(value: Any, graded: bool) -> tuple[bool | float | None, bool]:
    """(label, understood) of one judge value: a boolean, LongMemEval's {label: bool}, correct / wrong
    (any case) or 1 / 0, and on a graded suite partial or 0.5 too (a score then, not a boolean)."""
    if isinstance(value, Mapping):
        value = value.get("label")
    if value is None:
        return None, True
    if isinstance(value, bool):
        return value, True
    score = None
    if isinstance(value, str):
        score = _GRADES.get(value.strip().casefold())
    elif isinstance(value, (int, float)) and value in (0, 0.5, 1):
        score = float(value)
    if score is None or (score == 0.5 and not graded):
        return None, False
    return (score if graded else score == 1.0), True


def match_suite_records(
    records: Sequence[Record],
    dataset: Dataset,
    fields: FieldMap,
    questions: Mapping[str, Sequence[Question]],
    *,
    graded: bool,
) -> ImportResult:
    """Match each record to one of `questions` (sample id -> the questions in scope) by the suite's own
    identity: LongMemEval's question_id, Locomo-Plus's trigger (then cue)."""
    kind = family(dataset.suite)
    counts: Counter[str] = Counter(records=len(records))
    for name in ("matched", "unmatched", "ambiguous", "duplicate", "gold_differs", "category_differs",
                 "bad_judge", "missing", "other_suite"):  # fmt: skip
        counts[name] += 0
    problems: list[str] = []
    answers: list[ImportedAnswer] = []
    taken: dict[str, str] = {}
    other_models: Counter[str] = Counter()
    unnamed = 0  # labels that name no judge model (a plain labels file)
    scope = [q for qs in questions.values() for q in qs]
    by_id = {q.sample_id: q for q in scope} if kind == "longmemeval" else {}
    by_trigger: dict[str, list[Question]] = {}
    for q in scope:
        by_trigger.setdefault(_plain(q.question), []).append(q)

    def problem(name: str, record: Record, text: str) -> None:
        counts[name] += 1
        problems.append(f"{name.replace('_', ' ')}: {record.where}: {text}")

    for record in records:
        data = record.data
        if kind == "locomo_plus":
            category = _pick(data, fields.category, ("category",))
            value = str(data.get(category, _COGNITIVE)) if category else _COGNITIVE
            if value.strip().casefold() != _COGNITIVE:
                counts["other_suite"] += 1  # LOCOMO's own questions, written beside the cognitive ones
                continue
            candidates = by_trigger.get(_plain(record.conversation), [])
            evidence = data.get("evidence")
            if len(candidates) > 1 and evidence:
                candidates = [q for q in candidates if _plain(q.answer) == _plain(evidence)] or candidates
        else:
            found = by_id.get(str(record.conversation))
            candidates = [found] if found is not None else []
        if not candidates:
            what = "question_id" if kind == "longmemeval" else "trigger"
            problem("unmatched", record, f"no {what} {str(record.conversation)[:80]!r} in {dataset.path}")
            continue
        free = [q for q in candidates if q.qid not in taken]
        if len(candidates) > 1 and len(free) > 1:
            ids = ", ".join(q.qid for q in candidates)
            problem("ambiguous", record, f"{str(record.conversation)[:80]!r} matches {ids}")
            continue
        if not free:
            problem(
                "duplicate", record, f"{candidates[0].qid} already imported from {taken[candidates[0].qid]}"
            )
            continue
        question = free[0]
        taken[question.qid] = record.where
        qtype = data.get("question_type") if kind == "longmemeval" else None
        if qtype is not None and not _same_type(qtype, question):
            problem(
                "category_differs", record,
                f"{question.qid}: the file says {qtype!r}, the dataset {question.category.label}",
            )  # fmt: skip
        prediction = data[_pick(data, fields.prediction, _PREDICTION[kind]) or ""]
        judge = _pick(data, fields.judge, _JUDGE[kind])
        given = None if judge is None else data.get(judge)
        model = _judge_model(data, given) if kind == "longmemeval" and given is not None else LME_JUDGE_MODEL
        if model is None:
            unnamed += 1
        elif model != LME_JUDGE_MODEL:
            other_models[model] += 1
        label, understood = _grade(given, graded)
        if not understood:
            problem("bad_judge", record, f"{given!r} is not a label")
        labels: tuple[bool | float | None, ...] = () if given is None else (label,)
        answers.append(ImportedAnswer(question, "" if prediction is None else str(prediction), labels))
    counts["matched"] = len(answers)
    counts["missing"] = sum(1 for q in scope if q.qid not in taken)
    notes = []
    if other_models:
        counts["other_judge_model"] = sum(other_models.values())
        models = ", ".join(f"{n} from {m!r}" for m, n in sorted(other_models.items()))
        notes.append(
            f"judge model: labels {models}, not {LME_JUDGE_MODEL} (the only model LongMemEval's "
            "print_qa_metrics.py accepts): not comparable with the authors' figures"
        )
    if unnamed:
        counts["unnamed_judge_model"] = unnamed
        notes.append(
            f"judge model: {unnamed} labels name no judge model (no autoeval_label.model, judge_model): not "
            f"checked against {LME_JUDGE_MODEL}, the only model LongMemEval's print_qa_metrics.py accepts"
        )
    return ImportResult(answers, problems, dict(counts), notes)


def _judge_model(data: Mapping[str, Any], given: Any) -> str | None:
    """The model that gave a LongMemEval label: the official log's `autoeval_label.model`, else the row's
    `judge_model_resolved` (the dated snapshot), else its `judge_model`; None when the row names none."""
    if isinstance(given, Mapping):
        return None if given.get("model") is None else str(given.get("model"))
    for key in ("judge_model_resolved", "judge_model"):
        if isinstance(data.get(key), str):
            return str(data[key])
    return None


def _same_type(value: Any, question: Question) -> bool:
    """The file's question_type is the question's (an abstention question keeps its type in the file)."""
    category = QUESTION_TYPES.get(str(value).strip())
    if category is None:
        return False
    return question.category == ABSTENTION or category == question.category


def read_suite_rows(path: Path, suite: str) -> tuple[Any, list[str]]:
    """The rows of a suite's file (its JSON or JSONL; a results object's `results` list), or of a LongMemEval
    folder holding hypotheses files (a plain one, the official log, or both: the same answers merged) and
    labels files ({question_id, question_type, correct}), joined on question_id; with the notes saying how
    the join went."""
    if not path.is_dir():
        return _results_rows(read_data(path)), []
    name = str(path)
    if family(suite) != "longmemeval":
        raise DatasetError(
            f"a folder imports as one run on LOCOMO and LongMemEval only (dataset={suite})", file=name
        )
    hypotheses: dict[str, dict[str, Any]] = {}
    where: dict[str, str] = {}
    labels: dict[str, Mapping[str, Any]] = {}
    files: list[str] = []  # the hypotheses files, in the order read
    for file in sorted(p for p in path.iterdir() if p.is_file() and _suite_file(p)):
        rows = _results_rows(read_data(file))
        rows = [rows] if isinstance(rows, Mapping) else rows
        if not isinstance(rows, list) or not all(isinstance(r, Mapping) and "question_id" in r for r in rows):
            raise DatasetError("not rows with a question_id (a hypotheses or a labels file)", file=str(file))
        if any("hypothesis" in r for r in rows):
            files.append(file.name)
            for row in rows:
                qid = str(row["question_id"])
                known = hypotheses.get(qid)
                # The authors' evaluate_qa.py writes its log beside the hypotheses file it read: the same
                # answer in both is one answer (the log adds its label); two different answers are refused.
                if known is not None and known.get("hypothesis") != row.get("hypothesis"):
                    raise DatasetError(
                        f"two different hypotheses for {qid}: {where[qid]} and {file.name}; import the one "
                        "whose labels you mean (a log holds the answers its labels judged)",
                        file=name,
                    )
                hypotheses[qid] = {**(known or {}), **row}
                where.setdefault(qid, file.name)
            continue
        for i, row in enumerate(rows):
            if "correct" not in row and "autoeval_label" not in row:
                raise DatasetError(
                    "neither a hypothesis nor a label (correct)", file=str(file), field=f"record {i + 1}"
                )
            labels[str(row["question_id"])] = row
    if not hypotheses:
        raise DatasetError(
            "no hypotheses file (rows with question_id and hypothesis) in the folder", file=name
        )
    joined = [{**labels.get(qid, {}), **h} for qid, h in hypotheses.items()]
    ids = set(hypotheses)
    labelled = {qid for qid, h in hypotheses.items() if "autoeval_label" in h} | (ids & set(labels))
    orphans = sorted(set(labels) - ids)
    notes = [
        f"joined {len(hypotheses)} hypotheses ({', '.join(files)}) with {len(labels)} labels on question_id: "
        f"{len(labelled)} labelled, {len(ids - labelled)} hypotheses without a label, {len(orphans)} labels "
        f"without a hypothesis (skipped, as LongMemEval's scripts skip a missing answer"
        + (f": {', '.join(orphans[:5])})" if orphans else ")")
    ]
    return joined, notes


def _suite_file(path: Path) -> bool:
    """A JSON / JSONL file, or the official log evaluate_qa.py names `<hypotheses>.eval-results-<model>`."""
    return path.suffix in (".json", ".jsonl", ".log") or ".eval-results-" in path.name


def _results_rows(data: Any) -> Any:
    """A results object's rows: `{..., results: [{question_id, ...}]}` (a harness's eval_results.json, its
    headline beside the per-question rows) is its `results` list; the object's `judge_model_resolved` (the
    dated snapshot its judge alias served) goes onto each row that does not name its own."""
    if not isinstance(data, Mapping) or "question_id" in data:
        return data
    rows = data.get("results")
    if (
        not isinstance(rows, list)
        or not rows
        or not all(isinstance(r, Mapping) and "question_id" in r for r in rows)
    ):
        return data
    resolved = data.get("judge_model_resolved")
    if not isinstance(resolved, str):
        return rows
    return [r if "judge_model_resolved" in r else {**r, "judge_model_resolved": resolved} for r in rows]


def dataset_from_records(
    records: Sequence[Record], suite: str, fields: FieldMap, file: str
) -> Dataset | None:
    """LongMemEval's questions as the file names them (question_id, question_type), for scoring the file's
    own labels when the dataset file is not at hand; None unless every record carries a known type and
    some a label (an unlabelled record is left out of the figures, as an unjudged one)."""
    if family(suite) != "longmemeval" or not records:
        return None
    if not any(_pick(r.data, fields.judge, _JUDGE["longmemeval"]) for r in records):
        return None
    conversations: list[Conversation] = []
    for position, record in enumerate(records):
        qid, qtype = str(record.conversation), record.data.get("question_type")
        if not isinstance(qtype, str) or qtype not in QUESTION_TYPES:
            return None
        if any(c.sample_id == qid for c in conversations):
            continue  # a duplicate record: reported by the matching
        category = ABSTENTION if qid.endswith("_abs") else QUESTION_TYPES[qtype]
        question = Question(
            qid=f"{qid}:q0",
            sample_id=qid,
            index=0,
            question="",
            answer="",
            category=category,
            question_type=qtype,
        )
        conversations.append(Conversation(qid, "User", "Assistant", (), (question,), position))
    return Dataset(
        path=f"{file} (its own question ids and types)",
        sha256="",
        conversations=tuple(conversations),
        suite=suite,
    )
