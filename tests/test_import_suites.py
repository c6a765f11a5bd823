"""`import` on LongMemEval and Locomo-Plus: the files their own evaluation scripts write (small fixtures in
tests/fixtures/published), matched by each suite's identity, the suite's categories, the graded scale, and
one line for a file of another suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem0bench.cli.import_answers import import_main
from mem0bench.rundir.schema import read_metrics, read_predictions
from tests.test_import_compare import FIXTURES
from tests.test_suites_e2e import SUITE_ARGS


def _import(file: Path, out: Path, suite: str, *extra: str) -> int:
    args = [str(file), "--out", str(out), f"dataset={suite}", *SUITE_ARGS[suite]]
    return import_main([*args, "--bootstrap-replicates", "50", *extra])


def _imported(name: str, suite: str, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict]:
    """Import a fixture: what it printed and the counts in run.json."""
    assert _import(FIXTURES / name, out, suite) == 0
    return capsys.readouterr().out, json.loads((out / "run.json").read_text())["imported"]


def test_longmemeval_log_matches_by_question_id_with_its_judge(tmp_path: Path, capsys) -> None:
    out = tmp_path / "lme"
    printed, counts = _imported("longmemeval_hypotheses.jsonl.log", "longmemeval_s", out, capsys)
    assert "unmatched: record 4: no question_id '0a1b2c3d'" in printed
    assert "duplicate: record 5: e47becba:q0 already imported from record 1" in printed
    assert (counts["records"], counts["matched"], counts["unmatched"], counts["duplicate"]) == (5, 3, 1, 1)
    assert counts["missing"] == 0 and counts["bad_judge"] == 0
    rows = {r.qid: r for r in read_predictions(out / "predictions.jsonl")}
    assert set(rows) == {"e47becba:q0", "gpt4_2f8be40d_abs:q0", "6a1eabeb:q0"}
    assert rows["gpt4_2f8be40d_abs:q0"].category == "abstention"  # the suite's category, from the _abs id
    assert rows["6a1eabeb:q0"].gold == "3" and rows["6a1eabeb:q0"].judge == ("WRONG",)
    metrics = read_metrics(out / "metrics.json")
    assert metrics.overall.judge["mean"] == pytest.approx(2 / 3)
    assert set(metrics.categories) == {"single_session_user", "abstention", "knowledge_update"}
    assert metrics.overall.value("f1") is not None  # there is a gold answer: F1 applies


def test_longmemeval_hypotheses_without_a_judge(tmp_path: Path, capsys) -> None:
    out = tmp_path / "lme"
    printed, _ = _imported("longmemeval_hypotheses.jsonl", "longmemeval_s", out, capsys)
    assert "1 LongMemEval_S questions without a record" in printed
    rows = read_predictions(out / "predictions.jsonl")
    assert len(rows) == 2 and all(r.judge == (None,) for r in rows)  # no label from the file


def test_locomo_plus_output_matches_by_trigger_with_graded_labels(tmp_path: Path, capsys) -> None:
    out = tmp_path / "plus"
    printed, counts = _imported("locomo_plus_judged.json", "locomo_plus", out, capsys)
    assert "bad judge: record 5: 'maybe' is not a label" in printed
    assert "unmatched: record 6: no trigger" in printed
    assert "1 records of another suite skipped" in printed and "F1 n/a, BLEU-1 n/a" in printed
    assert (counts["matched"], counts["other_suite"], counts["missing"]) == (4, 1, 1)
    rows = {r.question.split("\n")[0]: r for r in read_predictions(out / "predictions.jsonl")}
    labels = {text.split(": ", 1)[1][:20]: r.judge for text, r in rows.items()}
    assert labels == {
        "I had a double espre": ("CORRECT",), "I signed up for a tr": ("PARTIAL",),
        "I just saw a really ": ("WRONG",), "This Sunday is packe": (None,),
    }  # fmt: skip
    metrics = read_metrics(out / "metrics.json")
    assert metrics.overall.judge["mean"] == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3 labelled
    assert set(metrics.categories) == {"cognitive"} and metrics.overall.value("f1") is None


@pytest.mark.parametrize(
    ("file", "suite", "says"),
    [
        ("longmemeval_hypotheses.jsonl", "locomo_plus", "no a trigger (question_input): not Locomo-Plus's"),
        ("locomo_plus_judged.json", "longmemeval_s", "no question_id: not LongMemEval's hypothesis file"),
        ("by_conversation.json", "longmemeval_s", "no question_id: not LongMemEval's hypothesis file"),
    ],
)
def test_a_file_of_another_suite_is_one_line(
    file: str, suite: str, says: str, tmp_path: Path, capsys
) -> None:
    assert _import(FIXTURES / file, tmp_path / "out", suite) != 0
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and says in err and f"(dataset={suite} here)" in err and "Traceback" not in err
    )


def test_a_longmemeval_file_on_locomo_says_which_suite(tmp_path: Path, capsys, locomo_mini: Path) -> None:
    code = import_main(
        [
            str(FIXTURES / "longmemeval_hypotheses.jsonl"),
            "--out",
            str(tmp_path / "o"),
            "--dataset",
            str(locomo_mini),
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1 and "add dataset=longmemeval_s" in err


def test_another_variant_matches_nothing_in_one_line(tmp_path: Path, capsys) -> None:
    lone = tmp_path / "other.jsonl"
    lone.write_text(json.dumps({"question_id": "not_in_this_file", "hypothesis": "x"}) + "\n")
    assert _import(lone, tmp_path / "out", "longmemeval_s") != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no record matched a LongMemEval_S question" in err
