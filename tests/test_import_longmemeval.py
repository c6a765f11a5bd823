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
        "joined 7 hypotheses (hypotheses.jsonl) with 8 labels on question_id: 7 labelled, 0 hypotheses without a label, 1 labels without a hypothesis"
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


# MenteDB's published LongMemEval_S results (nambok/mentedb, benchmarks/longmemeval/results/): the official
# log `hypotheses_baseline-shared_q0-500.jsonl.eval-results-gpt-4o-2024-08-06`, whose labels are 1 / 0 (not
# booleans) and repeated in a top-level `label`. Eight of its records, hypotheses shortened; the types are
# those of its report's per-question table (the log carries none).
MENTEDB = [
    ("e47becba", "single-session-user", 1),
    ("66f24dbb", "single-session-user", 0),
    ("0862e8bf_abs", "single-session-user", 1),
    ("0a995998", "multi-session", 0),
    ("eeda8a6d_abs", "multi-session", 1),
    ("gpt4_f49edff3", "temporal-reasoning", 1),
    ("gpt4_93159ced_abs", "temporal-reasoning", 0),
    ("830ce83f", "knowledge-update", 1),
]
LOG_NAME = "hypotheses_baseline-shared_q0-500.jsonl.eval-results-gpt-4o-2024-08-06"


def _mentedb_folder(root: Path, *, changed_answer: bool = False) -> Path:
    root.mkdir()
    hypotheses = [{"question_id": q, "hypothesis": f"MenteDB's answer to {q}"} for q, _, _ in MENTEDB]
    log = [{**h, "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": ok}, "label": ok}
           for h, (_, _, ok) in zip(hypotheses, MENTEDB, strict=True)]  # fmt: skip
    _jsonl(root / LOG_NAME, log)
    if changed_answer:  # the published hypotheses file holds 20 answers other than those its log judged
        hypotheses[3] = {**hypotheses[3], "hypothesis": "another answer"}
    _jsonl(root / "hypotheses_baseline-shared_q0-500.jsonl", hypotheses)
    _jsonl(
        root / "types.jsonl",
        [{"question_id": q, "question_type": t, "correct": bool(ok)} for q, t, ok in MENTEDB],
    )
    return root


def test_official_log_beside_its_hypotheses_file_is_one_answer_each(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "no-data"
    empty.mkdir()
    folder = _mentedb_folder(tmp_path / "results")
    code, metrics = _import(folder, tmp_path / "run", f"dataset.data_dir={empty}")
    assert code == 0
    printed = capsys.readouterr().out
    assert (
        f"joined 8 hypotheses (hypotheses_baseline-shared_q0-500.jsonl, {LOG_NAME}) with 8 labels" in printed
    )
    assert "judge model:" not in printed  # the log's model is the authors'
    assert "LongMemEval: overall 62.50, task-averaged 66.67, abstention 66.67" in printed
    overall = metrics["overall"]
    assert overall["lme_overall"] == pytest.approx(5 / 8)
    # ssu 2/3 (the _abs one inside), multi-session 1/2, temporal 1/2, knowledge-update 1/1.
    assert overall["lme_task_averaged"] == pytest.approx((2 / 3 + 1 / 2 + 1 / 2 + 1) / 4)
    assert overall["lme_abstention"] == pytest.approx(2 / 3)


def test_a_log_that_judged_other_answers_than_its_hypotheses_file_is_refused(tmp_path: Path, capsys) -> None:
    folder = _mentedb_folder(tmp_path / "results", changed_answer=True)
    code, _ = _import(folder, tmp_path / "run")
    assert code != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert (
        f"two different hypotheses for 0a995998: hypotheses_baseline-shared_q0-500.jsonl and {LOG_NAME}"
        in err
    )


# A results object as caura-ai/caura-longmemeval publishes it (outputs/<run>/eval_results.json): the
# headline beside `results`, rows of {question_id, question, gold_answer, hypothesis, question_type, correct,
# judge_reason, judge_model}; the object names the dated snapshot its judge alias served. Records adapted
# from its oracle-500-agentic-v1 run (the third and fourth changed to other types and a wrong verdict).
CAURA_ROWS = [
    {"question_id": "e47becba", "question": "What degree did I graduate with?", "gold_answer": "Business Administration",
     "hypothesis": "You graduated with a degree in Business Administration.", "question_type": "single-session-user",
     "correct": True, "judge_reason": "yes", "judge_model": "gpt-4o"},
    {"question_id": "1e043500", "question": "What is the name of the playlist I created on Spotify?",
     "gold_answer": "Summer Vibes", "hypothesis": "The name of the playlist is \"Summer Vibes\".",
     "question_type": "single-session-user", "correct": True, "judge_reason": "Yes", "judge_model": "gpt-4o"},
    {"question_id": "6a1eabeb", "question": "q", "gold_answer": "a", "hypothesis": "h",
     "question_type": "knowledge-update", "correct": False, "judge_reason": "No.", "judge_model": "gpt-4o"},
    {"question_id": "gpt4_2f8be40d_abs", "question": "q", "gold_answer": "a", "hypothesis": "h",
     "question_type": "temporal-reasoning", "correct": True, "judge_reason": "Yes.", "judge_model": "gpt-4o"},
]  # fmt: skip


@pytest.mark.parametrize("resolved", [True, False])
def test_a_results_object_scores_its_own_rows(tmp_path: Path, capsys, resolved: bool) -> None:
    empty = tmp_path / "no-data"
    empty.mkdir()
    document = {
        "overall_accuracy": 0.75,
        "total_questions": 4,
        "judge_model": "gpt-4o",
        "results": CAURA_ROWS,
    }
    if resolved:
        document["judge_model_resolved"] = "gpt-4o-2024-08-06"
    file = tmp_path / "eval_results.json"
    file.write_text(json.dumps(document))
    code, metrics = _import(file, tmp_path / "run", f"dataset.data_dir={empty}")
    assert code == 0
    printed = capsys.readouterr().out
    assert "nothing was matched against the dataset" in printed
    flagged = [line for line in printed.splitlines() if line.startswith("judge model: ")]
    # The alias alone is not the pinned snapshot print_qa_metrics.py asserts; the object's resolved one is.
    assert flagged == ([] if resolved else [flagged[0]])
    assert resolved or "4 from 'gpt-4o', not gpt-4o-2024-08-06" in flagged[0]
    overall = metrics["overall"]
    assert overall["lme_overall"] == pytest.approx(3 / 4)  # the file's own headline, 0.75
    # ssu 2/2, knowledge-update 0/1, temporal 1/1 (the _abs one inside its type).
    assert overall["lme_task_averaged"] == pytest.approx((1 + 0 + 1) / 3)
    assert overall["lme_abstention"] == pytest.approx(1.0)
