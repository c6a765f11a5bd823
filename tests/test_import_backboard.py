"""`import` of Backboard's LOCOMO shape, on small files of that shape written here: one JSON file per
conversation (the folder imports as one run), records under `responses`, the verdict nested in
`evaluation.is_correct`, and the Mem0 paper's category names beside LOCOMO's numbers (the numbers win).
The figures are worked out by hand from the records as written, never read back from our output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem0bench.cli.import_answers import import_main
from mem0bench.rundir.schema import read_metrics, read_predictions

# conversation -> (question, LOCOMO category number, the Mem0 paper's name written beside it, is_correct)
BACKBOARD = {
    "mini-1": [
        ("What breed is Maya's dog Biscuit?", 4, "open-domain", True),  # mini-1:q0
        ("When did Maya adopt Biscuit?", 2, "temporal", False),  # mini-1:q1 (the names agree here)
        ("What class did Tomas start and where is it held?", 1, "single-hop", True),  # mini-1:q2
        ("Would Maya likely enjoy a Thai cooking class?", 3, "multi-hop", False),  # mini-1:q5
    ],
    "mini-2": [
        ("Where did Priya get a job?", 4, "open-domain", True),  # mini-2:q0
        ("Who did Sam hire and who did Priya go kayaking with?", 1, "single-hop", True),  # mini-2:q3
        ("What animals might Priya enjoy seeing?", 3, "multi-hop", True),  # mini-2:q4
    ],
}


def _folder(root: Path) -> Path:
    root.mkdir()
    for conversation, items in BACKBOARD.items():
        responses = [
            {"question": q, "response": f"{conversation} answer {i}", "ground_truth": None, "category": c,
             "category_name": name, "evaluation": {"is_correct": ok, "reasoning": "..."}}
            for i, (q, c, name, ok) in enumerate(items)
        ]  # fmt: skip
        document = {"conversation_id": conversation, "responses": responses, "accuracy": 0.0}
        (root / f"{conversation}.json").write_text(json.dumps(document))
    return root


def _import(file: Path, out: Path, locomo: Path) -> int:
    return import_main(
        [str(file), "--out", str(out), "--dataset", str(locomo), "--bootstrap-replicates", "20"]
    )


def test_a_folder_of_conversation_files_imports_as_one_run(tmp_path: Path, locomo_mini: Path, capsys) -> None:
    out = tmp_path / "run"
    assert _import(_folder(tmp_path / "backboard"), out, locomo_mini) == 0
    printed = capsys.readouterr().out
    rows = {r.qid: r for r in read_predictions(out / "predictions.jsonl")}
    assert set(rows) == {
        "mini-1:q0",
        "mini-1:q1",
        "mini-1:q2",
        "mini-1:q5",
        "mini-2:q0",
        "mini-2:q3",
        "mini-2:q4",
    }
    assert rows["mini-2:q4"].prediction == "mini-2 answer 2"
    counts = json.loads((out / "run.json").read_text())["imported"]
    assert (counts["records"], counts["matched"], counts["unmatched"], counts["category_differs"]) == (
        7,
        7,
        0,
        0,
    )
    # Six records carry a Mem0-paper name that is not LOCOMO's for their number (only 'temporal' agrees).
    assert counts["category_name_overruled"] == 6
    names = [line for line in printed.splitlines() if line.startswith("category names: ")]
    assert len(names) == 1 and "6 records" in names[0] and "multi-hop->3" in names[0]
    assert names[0].endswith("the numbers are used")
    metrics = read_metrics(out / "metrics.json")
    # The nested verdicts: 5 of 7 correct (mini-1 q0, q2; mini-2 q0, q3, q4).
    assert metrics.overall.judge["mean"] == pytest.approx(5 / 7)
    per_category = {name: b.judge["mean"] for name, b in metrics.categories.items()}
    # By LOCOMO's numbers: 4 single_hop 2/2, 2 temporal 0/1, 1 multi_hop 2/2, 3 open_domain 1/2.
    assert per_category == pytest.approx(
        {"single_hop": 1.0, "temporal": 0.0, "multi_hop": 1.0, "open_domain": 0.5}
    )


def test_one_conversation_file_imports_alone(tmp_path: Path, locomo_mini: Path) -> None:
    folder = _folder(tmp_path / "backboard")
    assert _import(folder / "mini-2.json", tmp_path / "one", locomo_mini) == 0
    metrics = read_metrics(tmp_path / "one" / "metrics.json")
    assert metrics.overall.judge["mean"] == pytest.approx(1.0)  # mini-2's three records are all correct


def test_an_empty_folder_is_one_line(tmp_path: Path, locomo_mini: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    assert _import(tmp_path / "empty", tmp_path / "o", locomo_mini) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a folder without .json or .jsonl files" in err
