"""`import` of the EverMemOS / MemOS result shape, on the real published files in ../shared (never skipped):
the locomo-audit full-context run with three judgments per answer gives exactly the README's figures; and,
on a small file of that shape written here, the spread `import` prints is the population one."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mem0bench.cli.import_answers import import_main
from mem0bench.rundir.schema import read_metrics

AUDIT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "external" / "locomo-audit"


def _audit_file(name: str) -> Path:
    path = AUDIT / name
    if not path.is_file():
        pytest.fail(f"the published file {path} is needed by this realdata test", pytrace=False)
    return path


# Each import scores 1,540 answers (BLEU-1, bootstrap): about half a minute on the busy test machine.
slow = pytest.mark.slow


@pytest.fixture(scope="module")
def full_context(tmp_path_factory, locomo_path):
    out = tmp_path_factory.mktemp("memos") / "fc"
    code = import_main(
        [str(_audit_file("fc_gpt-4o-mini_memos.json")), "--out", str(out), "--dataset", str(locomo_path),
         "--bootstrap-replicates", "50"]
    )  # fmt: skip
    assert code == 0
    return out


@slow
def test_memos_shape_is_detected_and_every_record_matches(full_context):
    counts = json.loads((full_context / "run.json").read_text())["imported"]
    assert counts["records"] == 1540 and counts["matched"] == 1540
    assert counts["unmatched"] == counts["ambiguous"] == counts["duplicate"] == 0
    # The file's categories are LOCOMO's numbers as strings: they agree with LOCOMO on every question.
    assert counts["category_differs"] == 0 and counts["bad_judge"] == 0


@slow
def test_three_judgments_become_three_judge_runs_with_the_published_j(full_context):
    metrics = read_metrics(full_context / "metrics.json")
    judge = metrics.overall.judge
    assert judge["runs"] == 3
    assert [round(100 * v, 2) for v in judge["per_run"]] == [74.22, 74.29, 74.35]
    assert round(100 * judge["mean"], 2) == 74.29
    # The file's own spread: 1143, 1144 and 1145 of 1,540 correct -> deviations -1, 0, +1 (/1540), so the
    # population std (ddof 0, the harnesses') is sqrt(2/3) / 1540 = 0.053 points (the sample std: 0.065).
    assert [round(1540 * v) for v in judge["per_run"]] == [1143, 1144, 1145]
    assert judge["std"] == pytest.approx(math.sqrt(2 / 3) / 1540) and judge["std_ddof"] == 0
    per_category = {name: round(100 * b.judge["mean"], 2) for name, b in metrics.categories.items()}
    # The README's figures, per LOCOMO category (1 multi_hop, 2 temporal, 3 open_domain, 4 single_hop).
    assert per_category == {"multi_hop": 70.21, "temporal": 51.09, "open_domain": 56.60, "single_hop": 86.52}
    assert {name: b.extra["n"] for name, b in metrics.categories.items()} == {
        "multi_hop": 282, "temporal": 321, "open_domain": 96, "single_hop": 841,
    }  # fmt: skip


@slow
def test_vague_stress_file_imports_with_its_three_runs(tmp_path, locomo_path):
    out = tmp_path / "ap"
    args = [str(_audit_file("ap_v2_vague_scored.json")), "--out", str(out), "--dataset", str(locomo_path)]
    assert import_main([*args, "--bootstrap-replicates", "20"]) == 0
    judge = read_metrics(out / "metrics.json").overall.judge
    assert [round(100 * v, 2) for v in judge["per_run"]] == [62.99, 62.47, 62.99]


def test_an_unknown_shape_is_one_line_naming_what_was_expected(tmp_path, locomo_path, capsys):
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"accuracy": 0.7, "results": {"a": 1}}))
    assert import_main([str(odd), "--out", str(tmp_path / "o"), "--dataset", str(locomo_path)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "unknown shape" in err[0] and "detailed_results" in err[0] and str(odd) in err[0]


@slow
def test_zeps_published_grades_give_its_figures(tmp_path, locomo_path):
    source = AUDIT.parent / "zep" / "zep_locomo_grades.json"
    if not source.is_file():
        pytest.fail(f"the published file {source} is needed by this realdata test", pytrace=False)
    out = tmp_path / "zep"
    assert (
        import_main(
            [str(source), "--out", str(out), "--dataset", str(locomo_path), "--bootstrap-replicates", "20"]
        )
        == 0
    )
    metrics = read_metrics(out / "metrics.json")
    assert round(100 * metrics.overall.judge["mean"], 2) == 75.13
    per_category = {name: round(100 * b.judge["mean"], 2) for name, b in metrics.categories.items()}
    # Zep's README prints temporal and open-domain under each other's names; LOCOMO's numbers decide.
    assert per_category == {"multi_hop": 74.11, "temporal": 66.04, "open_domain": 67.71, "single_hop": 79.79}


def test_the_printed_spread_is_the_population_one(tmp_path: Path, locomo_mini: Path, capsys) -> None:
    # The same shape, four records with three judgments each, written here: runs 3/4, 2/4 and 4/4 correct.
    judgments = [(True, True, True), (True, True, True), (True, False, True), (False, False, True)]
    questions = [
        ("What breed is Maya's dog Biscuit?", "A beagle mix", "4"),
        ("When did Maya adopt Biscuit?", "The weekend before 8 May 2023", "2"),
        (
            "What class did Tomas start and where is it held?",
            "Pottery, at the community studio on Elm Street",
            "1",
        ),
        ("What colour was the first bowl Tomas made?", "Dark blue", "4"),
    ]
    records = [
        {"question_id": f"locomo_0_qa{i}", "question": q, "golden_answer": gold, "generated_answer": "x",
         "llm_judgments": {f"judgment_{k + 1}": v for k, v in enumerate(runs)}, "category": c}
        for i, ((q, gold, c), runs) in enumerate(zip(questions, judgments, strict=True))
    ]  # fmt: skip
    file = tmp_path / "evermemos.json"
    file.write_text(json.dumps({"total_questions": 4, "detailed_results": {"locomo_exp_user_0": records}}))
    assert import_main([str(file), "--out", str(tmp_path / "run"), "--dataset", str(locomo_mini)]) == 0
    printed = capsys.readouterr().out
    # Mean 75; deviations 0, -25, +25: population std sqrt(1250 / 3) = 20.41 (the sample std would be 25).
    assert "J = 75.00% ± 20.41 (population std over 3 runs: 75.00 / 50.00 / 100.00)" in printed
