from __future__ import annotations

import json

import pytest

from mem0bench.data import DatasetError, load_dataset
from mem0bench.data.answer_key import apply_answer_key, read_answer_key

AUDIT = "locomo_audit_errors.json"


@pytest.fixture(scope="module")
def dataset(locomo_path):
    return load_dataset(locomo_path)


def test_the_audit_file_maps_onto_the_real_questions(dataset, locomo_path):
    key = read_answer_key(locomo_path.parent / AUDIT, dataset)
    assert len(key) == 156
    assert key["conv-26:q2"] == "Counseling or mental health"


def test_replace_and_exclude(dataset):
    key = {"conv-26:q1": "in 2022"}
    replaced = apply_answer_key(dataset, key, "replace")
    assert next(q for q in replaced.questions if q.qid == "conv-26:q1").answer == "in 2022"
    excluded = apply_answer_key(dataset, key, "exclude")
    assert len(excluded.questions) == len(dataset.questions) - 1


def test_a_key_for_other_questions_is_an_error(dataset, tmp_path):
    path = tmp_path / "key.json"
    path.write_text(
        json.dumps([{"question_id": "locomo_0_qa1", "question": "Something else?", "correct_answer": "x"}])
    )
    with pytest.raises(DatasetError, match=r"key.json: sample conv-26: \[0\]: locomo_0_qa1 does not match"):
        read_answer_key(path, dataset)
    path.write_text(json.dumps({"conv-99:q1": "x"}))
    with pytest.raises(DatasetError, match="unknown question id"):
        read_answer_key(path, dataset)


def test_audit_ids_follow_file_order_when_a_subset_is_selected(locomo_path):
    subset = load_dataset(locomo_path, conversations=["conv-30"])  # second in the file
    key = read_answer_key(locomo_path.parent / AUDIT, subset)
    assert key and all(qid.startswith("conv-30:") for qid in key)
