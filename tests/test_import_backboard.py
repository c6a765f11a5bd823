"""`import` of Backboard's LOCOMO shape, on small files of that shape written here: one JSON file per
conversation (the folder imports as one run), as Backboard-io/Backboard-Locomo-Benchmark publishes them
(locomo_conversation_<n>.json): `{conversation_id, total, correct_count, accuracy_percentage, by_type,
responses}`, each response `{conversation_id, question_type, category, question, expected_answer,
ai_response, evaluation: {is_correct, reasoning, error}}`; `by_type` repeats the responses grouped by type
and is not read again. `question_type` carries the Mem0 paper's names beside LOCOMO's numbers (single_hop
beside 1, multi_hop beside 3, open_domain beside 4; temporal_reasoning beside 2 agrees): the numbers win.
The figures are worked out by hand from the records as written, never read back from our output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem0bench.cli.import_answers import import_main
from mem0bench.rundir.schema import read_metrics, read_predictions

# Backboard's question_type for each LOCOMO category number, as its files write it.
NAMES = {1: "single_hop", 2: "temporal_reasoning", 3: "multi_hop", 4: "open_domain"}
# conversation -> (question, LOCOMO category number, LOCOMO's gold, is_correct)
BACKBOARD = {
    "mini-1": [
        ("What breed is Maya's dog Biscuit?", 4, "A beagle mix", True),  # mini-1:q0
        ("When did Maya adopt Biscuit?", 2, "The weekend before 8 May 2023", False),  # mini-1:q1
        ("What class did Tomas start and where is it held?", 1, "Pottery, at the community studio on Elm Street",
         True),  # mini-1:q2
        ("Would Maya likely enjoy a Thai cooking class?", 3, "Likely yes; she orders Thai food", False),  # q5
    ],
    "mini-2": [
        ("Where did Priya get a job?", 4, "At the aquarium", True),  # mini-2:q0
        ("Who did Sam hire and who did Priya go kayaking with?", 1, "Lena, Dev", True),  # mini-2:q3
        ("What animals might Priya enjoy seeing?", 3, "Sea animals; jellyfish; seals", True),  # mini-2:q4
    ],
}  # fmt: skip


def _folder(root: Path) -> Path:
    root.mkdir()
    for n, (conversation, items) in enumerate(BACKBOARD.items(), 1):
        responses = [
            {"conversation_id": conversation, "question_type": NAMES[c], "category": c, "question": q,
             "expected_answer": gold, "ai_response": f"{conversation} answer {i}",
             "evaluation": {"is_correct": ok, "reasoning": "...", "error": None}}
            for i, (q, c, gold, ok) in enumerate(items)
        ]  # fmt: skip
        by_type: dict[str, dict] = {}
        for r in responses:
            group = by_type.setdefault(r["question_type"], {"total": 0, "correct_count": 0, "responses": []})
            group["total"] += 1
            group["correct_count"] += r["evaluation"]["is_correct"]
            group["responses"].append(r)
        correct = sum(r["evaluation"]["is_correct"] for r in responses)
        document = {
            "conversation_id": conversation, "total": len(responses), "evaluated_count": len(responses),
            "correct_count": correct, "accuracy_percentage": 100 * correct / len(responses), "by_type": by_type,
            "responses": responses,
        }  # fmt: skip
        (root / f"locomo_conversation_{n}.json").write_text(json.dumps(document))
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
    assert rows["mini-2:q4"].prediction == "mini-2 answer 2"  # ai_response
    assert "0 gold differs" in printed  # expected_answer is read as the gold and checked
    counts = json.loads((out / "run.json").read_text())["imported"]
    assert (counts["records"], counts["matched"], counts["unmatched"], counts["category_differs"]) == (
        7,
        7,
        0,
        0,
    )
    # Six records carry a Mem0-paper name that is not LOCOMO's for their number (temporal_reasoning agrees).
    assert counts["category_name_overruled"] == 6
    names = [line for line in printed.splitlines() if line.startswith("category names: ")]
    assert len(names) == 1 and "6 records" in names[0]
    assert "(multi_hop->3, open_domain->4, single_hop->1)" in names[0]  # temporal_reasoning agrees with 2
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
    assert _import(folder / "locomo_conversation_2.json", tmp_path / "one", locomo_mini) == 0
    metrics = read_metrics(tmp_path / "one" / "metrics.json")
    assert metrics.overall.judge["mean"] == pytest.approx(1.0)  # mini-2's three records are all correct


def test_an_empty_folder_is_one_line(tmp_path: Path, locomo_mini: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    assert _import(tmp_path / "empty", tmp_path / "o", locomo_mini) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a folder without .json or .jsonl files" in err


# Four records of Backboard's locomo_conversation_1.json (conv-26), one per category, copied as published
# (answers and reasoning shortened); record 21 is one of its eight wrong ones.
REAL = [
    ("temporal_reasoning", 2, "When did Caroline go to the LGBTQ support group?", "7 May 2023",
     "Caroline attended an LGBTQ support group on May 7, 2023.", True),
    ("multi_hop", 3, "What fields would Caroline be likely to pursue in her educaton?",
     "Psychology, counseling certification", "Caroline is likely to pursue education in counseling or mental health, ...", True),
    ("single_hop", 1, "What did Caroline research?", "Adoption agencies",
     "Caroline researched adoption agencies as part of her dream to have a family ...", True),
    ("open_domain", 4, "What did the charity race raise awareness for?", "mental health",
     "The charity race that Melanie participated in raised awareness for mental health.", True),
    ("temporal_reasoning", 2, "When did Caroline have a picnic?", "The week before 6 July 2023",
     "Caroline had a picnic with friends and family on July 6, 2023.", False),
]  # fmt: skip


def test_real_backboard_records_match_the_real_locomo(tmp_path: Path, locomo_path: Path, capsys) -> None:
    responses = [
        {"conversation_id": "conv-26", "question_type": t, "category": c, "question": q, "expected_answer": g,
         "ai_response": a, "evaluation": {"is_correct": ok, "reasoning": "...", "error": None}}
        for t, c, q, g, a, ok in REAL
    ]  # fmt: skip
    file = tmp_path / "locomo_conversation_1.json"
    file.write_text(json.dumps({"conversation_id": "conv-26", "total": 5, "responses": responses}))
    assert _import(file, tmp_path / "run", locomo_path) == 0
    printed = capsys.readouterr().out
    counts = json.loads((tmp_path / "run" / "run.json").read_text())["imported"]
    assert (counts["matched"], counts["gold_differs"], counts["category_differs"]) == (5, 0, 0)
    assert counts["category_name_overruled"] == 3  # single_hop (1), multi_hop (3), open_domain (4)
    assert "(multi_hop->3, open_domain->4, single_hop->1)" in printed
    metrics = read_metrics(tmp_path / "run" / "metrics.json")
    assert metrics.overall.judge["mean"] == pytest.approx(4 / 5)
    assert metrics.categories["temporal"].judge["mean"] == pytest.approx(1 / 2)
