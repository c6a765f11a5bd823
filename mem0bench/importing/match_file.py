"""A file (or folder) of published answers matched to a dataset's questions: which reader and matcher its
suite and shape call for, and which dataset it is matched against."""

from __future__ import annotations

import hashlib
from pathlib import Path

from mem0bench.common.errors import ConfigurationError
from mem0bench.data import load_dataset, resolve_dataset_path
from mem0bench.data.answer_key import apply_answer_key, read_answer_key
from mem0bench.data.model import Dataset
from mem0bench.importing.imported import FieldMap, ImportResult, match_records, read_records
from mem0bench.importing.imported_suites import (
    dataset_from_records,
    match_suite_records,
    read_suite_rows,
    suite_records,
)
from mem0bench.importing.unkeyed import match_unkeyed
from mem0bench.paths import data_home
from mem0bench.pipeline.experiment import dataset_request, dataset_suite, select_questions
from mem0bench.pipeline.spec import ScopeSpec
from mem0bench.suites import Suite

__all__ = ["match_file", "source_sha256"]


def match_file(
    file: Path,
    scope: ScopeSpec,
    fields: FieldMap,
    *,
    answer_key: str | Path | None = None,
    include_adversarial: bool = False,
) -> tuple[Suite, Dataset, ImportResult]:
    """`file`'s records matched to the questions of `scope`'s dataset (with `answer_key`'s answers in place
    of the dataset's); ConfigurationError when none matches."""
    suite = dataset_suite(scope)
    notes: list[str] = []
    records = None
    dataset = None
    if suite.name != "locomo":
        rows, notes = read_suite_rows(file, suite.name)
        records = suite_records(str(file), rows, suite.name, fields)
        held = data_home(scope.data_dir) / suite.sources[0].filename if suite.sources else None
        if scope.path is None and held is not None and not held.is_file() and not answer_key:
            # The dataset lives on the hub and no copy is here: a file that carries what scoring needs
            # (question ids, types, labels) is scored on its own labels rather than fetched against.
            dataset = dataset_from_records(records, suite.name, fields, str(file))
            if dataset is not None:
                notes.append(
                    f"no {suite.title} file at hand ({held}): nothing was matched against the dataset; the "
                    "file's own question ids, types and labels are scored as they are (dataset.path=FILE "
                    "matches and checks every id)"
                )
    if suite.name == "locomo":  # as it always was (the file named in --dataset's words)
        dataset = load_dataset(
            resolve_dataset_path(scope.path, data_home(scope.data_dir), option="--dataset FILE")
        )
    elif dataset is None:
        dataset = suite.load(dataset_request(scope))
    if answer_key:
        dataset = apply_answer_key(dataset, read_answer_key(answer_key, dataset), "replace")
    questions = {
        c.sample_id: select_questions(
            c, include_adversarial=include_adversarial, max_questions=None, suite=suite
        )
        for c in dataset.conversations
    }
    if records is None:
        records = read_records(file, fields)
        # records that name no conversation (memU's list) are matched by question text and order
        unkeyed = bool(records) and all(r.conversation is None for r in records)
        result = (match_unkeyed if unkeyed else match_records)(records, dataset, fields, questions)
    else:
        result = match_suite_records(records, dataset, fields, questions, graded=suite.grading == "graded")
    result.notes[:0] = notes
    if not result.answers:
        raise ConfigurationError(
            f"{file}: no record matched a {suite.title} question of {dataset.path} ({result.counts}); "
            f"is it a file of another suite or variant? (dataset={suite.name} here)"
        )
    return suite, dataset, result


def source_sha256(path: Path) -> str:
    """The file's sha256; a folder's: of its files' names and contents, in name order."""
    if not path.is_dir():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file()):
        digest.update(file.name.encode() + b"\0" + hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()
