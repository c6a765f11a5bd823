"""`import` of LongMemEval's published shapes, on small files written here: the official evaluation log
(`autoeval_label: {model, label}`) and a folder holding a hypotheses file and a separate labels file
(`{question_id, question_type, correct}`) joined on question_id; with the dataset at hand (matched and
checked id by id) and without it (the file's own ids, types and labels scored, nothing matched). The
authors' three figures are worked out by hand from the labels as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem0bench.cli.import_answers import import_main
from mem0bench.rundir.schema import read_predictions
from tests.test_suites_e2e import SUITE_ARGS

# (question_id, question_type, correct): abstention questions (_abs) inside their types.
LABELS = [
    ("a1", "single-session-user", True),
    ("a2", "single-session-user", False),
    ("b1", "multi-session", True),
    ("b2_abs", "multi-session", True),
    ("c1", "temporal-reasoning", False),
    ("c2_abs", "temporal-reasoning", False),
    ("d1", "knowledge-update", True),
]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _folder(root: Path, labels: list[tuple[str, str, bool]]) -> Path:
    root.mkdir()
    _jsonl(
        root / "hypotheses.jsonl", [{"question_id": q, "hypothesis": f"answer to {q}"} for q, _, _ in labels]
    )
    rows = [{"question_id": q, "question_type": t, "correct": ok} for q, t, ok in labels]
    _jsonl(
        root / "labels.jsonl",
        [*rows, {"question_id": "z9", "question_type": "multi-session", "correct": True}],
    )
    return root


def _import(file: Path, out: Path, *overrides: str) -> tuple[int, dict]:
    code = import_main(
        [str(file), "--out", str(out), "dataset=longmemeval_s", *overrides, "--bootstrap-replicates", "20"]
    )
    metrics = json.loads((out / "metrics.json").read_text()) if code == 0 else {}
    return code, metrics


def test_labels_folder_without_the_dataset_scores_its_own_labels(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "no-data"
    empty.mkdir()
    code, metrics = _import(_folder(tmp_path / "lme", LABELS), tmp_path / "run", f"dataset.data_dir={empty}")
    assert code == 0
    printed = capsys.readouterr().out
    assert "nothing was matched against the dataset" in printed
    assert (
        "joined 7 hypotheses with 8 labels on question_id: 7 labelled, 0 hypotheses without a label, 1 labels without a hypothesis"
        in printed
    )
    overall = metrics["overall"]
    # Overall (micro): 4 of 7 correct.
    assert overall["lme_overall"] == pytest.approx(4 / 7)
    # Task-averaged over the types present, _abs inside: ssu 1/2, multi-session 2/2, temporal 0/2, ku 1/1.
    assert overall["lme_task_averaged"] == pytest.approx((0.5 + 1.0 + 0.0 + 1.0) / 4)
    # Abstention: b2_abs correct, c2_abs wrong.
    assert overall["lme_abstention"] == pytest.approx(0.5)
    assert overall["lme_type_multi_session"] == pytest.approx(1.0)
    assert overall["f1"] is None  # no reference answer without the dataset: not a 0
    rows = {r.qid: r for r in read_predictions(tmp_path / "run" / "predictions.jsonl")}
    assert (
        rows["b2_abs:q0"].category == "abstention"
        and rows["b2_abs:q0"].extra["question_type"] == "multi-session"
    )


def test_official_log_with_the_dataset_matches_every_id_and_flags_another_judge(
    tmp_path: Path, capsys
) -> None:
    log = _jsonl(
        tmp_path / "eval.log",
        [
            {"question_id": "e47becba", "hypothesis": "Business Administration.",
             "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": True}},
            {"question_id": "gpt4_2f8be40d_abs", "hypothesis": "You never said.",
             "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": True}},
            {"question_id": "6a1eabeb", "hypothesis": "Two.", "autoeval_label": {"model": "gpt-4o-mini", "label": False}},
            {"question_id": "not-in-the-file", "hypothesis": "x", "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": True}},
        ],
    )  # fmt: skip
    code, metrics = _import(log, tmp_path / "run", *SUITE_ARGS["longmemeval_s"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "unmatched: record 4: no question_id 'not-in-the-file'" in printed
    flagged = [line for line in printed.splitlines() if line.startswith("judge model: ")]
    assert len(flagged) == 1 and "1 from 'gpt-4o-mini', not gpt-4o-2024-08-06" in flagged[0]
    assert "nothing was matched" not in printed
    counts = json.loads((tmp_path / "run" / "run.json").read_text())["imported"]
    assert (counts["matched"], counts["unmatched"], counts["other_judge_model"]) == (3, 1, 1)
    overall = metrics["overall"]
    # ssu correct, temporal (the _abs one) correct, knowledge-update wrong: one question per type.
    assert overall["lme_overall"] == pytest.approx(2 / 3)
    assert overall["lme_task_averaged"] == pytest.approx((1 + 1 + 0) / 3)
    assert overall["lme_abstention"] == pytest.approx(1.0)
    assert overall["f1"] is not None  # matched against the dataset's gold


def test_labels_folder_with_the_dataset_checks_each_type(tmp_path: Path, capsys) -> None:
    labels = [
        ("e47becba", "single-session-user", True),
        ("gpt4_2f8be40d_abs", "temporal-reasoning", False),
        ("6a1eabeb", "multi-session", True),  # the dataset says knowledge-update
    ]
    code, metrics = _import(_folder(tmp_path / "lme", labels), tmp_path / "run", *SUITE_ARGS["longmemeval_s"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "category differs: record 3: 6a1eabeb:q0: the file says 'multi-session'" in printed
    assert "nothing was matched" not in printed
    # The dataset's types: ssu 1/1, temporal 0/1 (the _abs one), knowledge-update 1/1.
    assert metrics["overall"]["lme_task_averaged"] == pytest.approx(2 / 3)
    assert metrics["overall"]["lme_abstention"] == 0.0
