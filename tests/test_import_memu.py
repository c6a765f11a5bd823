"""`import` of memU's LOCOMO shape, on small files of that shape written here: as NevaMind-AI/memU publishes
it (scripts/evals/locomo/result.json), `{success, summary, detailed_results}` where `detailed_results` is a
list of records `{qa_index, question, generated_answer, standard_answer, category, is_correct,
explanation}` that name no conversation, `qa_index` restarting per conversation, speakers renamed in two
conversations' questions (and golds), and two adversarial records its headline counts. The figures are
worked out by hand below from the records as written, never read back from our output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem0bench.cli.import_answers import import_main
from mem0bench.rundir.schema import read_metrics, read_predictions

# (qa_index, question as memU wrote it, category, standard_answer, is_correct): locomo_mini's mini-1 then
# mini-2; the golds are LOCOMO's.
MEMU = [
    (0, "What breed is Maya's dog Biscuit?", 4, "A beagle mix", True),  # exact: mini-1:q0
    (1, "  when did maya adopt biscuit  ", 2, "The weekend before 8 May 2023", False),  # normalised: mini-1:q1
    (2, "What class did Tom start and where is it held?", 1, "Pottery, at the community studio on Elm Street",
     True),  # Tomas -> Tom: mini-1:q2
    (3, "What colour was the first bowl Tom made?", 4, "Dark blue", True),  # Tomas -> Tom: mini-1:q3
    (4, "In what year was the half marathon run?", 2, "2022", False),  # reworded: by position, mini-1:q4
    (11, "What breed is Tomas's dog?", 5, "No", True),  # adversarial: mini-1:q11
    (0, "Where did Priya get a job?", 4, "At the aquarium", True),  # qa_index restarts: mini-2:q0
    (1, "What does Samuel's bakery sell out of?", 4, "Cardamom buns", False),  # Sam -> Samuel: mini-2:q1
    (3, "Who did Sam hire and who did Priya go kayaking with?", 1, "Lena, Dev", True),  # mini-2:q3
    (5, "Which animals did Sam see at Pebble Bay?", 5, "No", True),  # adversarial: mini-2:q5
]  # fmt: skip


def _memu(records: list[dict]) -> dict:
    correct = sum(r["is_correct"] for r in records)
    summary = {
        "total_questions": len(records),
        "total_correct": correct,
        "overall_accuracy": correct / len(records),
    }
    return {"success": True, "summary": summary, "detailed_results": records}


def _memu_file(path: Path) -> Path:
    records = [
        {"qa_index": i, "question": q, "generated_answer": f"answer {n}", "standard_answer": gold, "category": c,
         "is_correct": ok, "explanation": "..."}
        for n, (i, q, c, gold, ok) in enumerate(MEMU)
    ]  # fmt: skip
    path.write_text(json.dumps(_memu(records)))
    return path


@pytest.fixture()
def imported(tmp_path: Path, locomo_mini: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    out = tmp_path / "memu"
    file = _memu_file(tmp_path / "memu_locomo.json")
    args = [str(file), "--out", str(out), "--dataset", str(locomo_mini), "--bootstrap-replicates", "20"]
    assert import_main(args) == 0
    return out, capsys.readouterr().out


def test_records_without_conversation_match_by_text_and_order(imported: tuple[Path, str]) -> None:
    out, printed = imported
    rows = {r.qid: r for r in read_predictions(out / "predictions.jsonl")}
    assert set(rows) == {
        "mini-1:q0", "mini-1:q1", "mini-1:q2", "mini-1:q3", "mini-1:q4", "mini-2:q0", "mini-2:q1", "mini-2:q3",
    }  # fmt: skip
    assert rows["mini-1:q4"].prediction == "answer 4" and rows["mini-2:q1"].prediction == "answer 7"
    # 5 exact (mini-1 q0, q11; mini-2 q0, q3, q5), 1 normalised, 3 renamed speaker, 1 by position.
    assert (
        "records without a conversation id, matched by question text and order: 5 exact, 1 normalised, "
        "3 renamed speaker, 1 by position, 0 unmatched; verdicts from 'is_correct'" in printed
    )
    assert "by position: detailed_results[4]: mini-1:q4 (qa_index 4)" in printed
    assert "renamed speaker: mini-1: the file writes 'tom' for 'tomas' (2 questions)" in printed
    assert "renamed speaker: mini-2: the file writes 'samuel' for 'sam' (1 questions)" in printed
    counts = json.loads((out / "run.json").read_text())["imported"]
    assert (counts["records"], counts["matched"], counts["adversarial"], counts["unmatched"]) == (10, 8, 2, 0)
    assert counts["renamed_speakers"] == 2 and counts["category_differs"] == 0
    assert counts["gold_differs"] == 0  # standard_answer is read as the gold and checked
    # In scope (categories 1-4): mini-1 has 11 questions (5 answered), mini-2 has 5 (3 answered).
    assert counts["missing"] == 6 + 2


def test_adversarial_records_are_reported_with_the_files_own_headline(imported: tuple[Path, str]) -> None:
    out, printed = imported
    # memU's headline: 7 of its 10 records correct, the 2 adversarial (both correct) included.
    assert "adversarial: 2 records answer LOCOMO category 5 questions (mini-1:q11, mini-2:q5)" in printed
    assert "the file's own labels over all 10 labelled records, these included: 70.00%" in printed
    metrics = read_metrics(out / "metrics.json")
    # Ours, categories 1-4: correct are mini-1 q0, q2, q3 and mini-2 q0, q3: 5 of 8.
    assert metrics.overall.judge["mean"] == pytest.approx(5 / 8)
    per_category = {name: b.judge["mean"] for name, b in metrics.categories.items()}
    # single-hop (4): mini-1 q0 T, q3 T, mini-2 q0 T, q1 F; temporal (2): q1 F, q4 F; multi-hop (1): 2 of 2.
    assert per_category == pytest.approx({"single_hop": 3 / 4, "temporal": 0.0, "multi_hop": 1.0})


def test_records_without_qa_index_run_on_and_problems_are_reported(
    tmp_path: Path, locomo_mini: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [
        {"question": "What breed is Maya's dog Biscuit?", "generated_answer": "beagle", "is_correct": True},
        {"question": "what breed is maya's dog biscuit?", "generated_answer": "beagle", "is_correct": False},
        {"question": "What is the capital of France?", "generated_answer": "Paris", "is_correct": True},
        {"question": "Where did Priya get a job?", "generated_answer": "aquarium", "is_correct": True},
        {"question": "What colour is the lighthouse Ade painted", "generated_answer": "red", "is_correct": False},
    ]  # fmt: skip
    file = tmp_path / "memu.json"
    file.write_text(json.dumps({"success": True, "detailed_results": records}))
    out = tmp_path / "out"
    assert import_main([str(file), "--out", str(out), "--dataset", str(locomo_mini)]) == 0
    printed = capsys.readouterr().out
    assert "duplicate: detailed_results[1]: mini-1:q0 already imported from detailed_results[0]" in printed
    assert "unmatched: detailed_results[2]: no question 'What is the capital of France?' in mini-1" in printed
    # mini-1:q0 exact; mini-2:q0 exact in the next conversation; mini-3:q0 without its '?': normalised.
    assert "2 exact, 1 normalised, 0 renamed speaker, 0 by position, 1 unmatched" in printed
    rows = {r.qid: r.judge for r in read_predictions(out / "predictions.jsonl")}
    assert rows == {"mini-1:q0": ("CORRECT",), "mini-2:q0": ("CORRECT",), "mini-3:q0": ("WRONG",)}
    counts = json.loads((out / "run.json").read_text())["imported"]
    # In scope: mini-1 11, mini-2 5, mini-3 2 questions, one answered in each.
    assert (counts["duplicate"], counts["unmatched"], counts["missing"]) == (1, 1, 10 + 4 + 1)


# Five records of memU's result.json (detailed_results[599, 600, 601, 614, 762], conv-43, where memU writes
# "Juan" for LOCOMO's speaker John), copied as published with answers and explanations shortened. LOCOMO
# writes "Johns's" in q176; memU's "Juans's" is the same rename. Its q28 gold renames the composer John
# Williams too, and its judge then failed the answer "John Williams".
REAL = [
    (13, "What does Tim do to escape reality?", "Read fantasy books.", 1, True),
    (14, "What kind of writing does Tim do?",
     "comments on favorite books in a fantasy literature forum, articles on fantasy novels, studying characters, "
     "themes, and making book recommendations, writing a fantasy novel", 1, True),
    (15, "Who is Anthony?", "likely Juan's friend, colleague or family", 3, True),
    (28, "Which popular music composer's tunes does Tim enjoy playing on the piano?", "Juan Williams", 3, False),
    (176, "What was Juans's reaction to sealing the deal with the beverage company?",
     "crazy feeling, sense of accomplishment", 4, True),
]  # fmt: skip


def test_real_memu_records_with_a_renamed_speaker(tmp_path: Path, locomo_path: Path, capsys) -> None:
    records = [
        {"qa_index": i, "question": q, "generated_answer": "...", "standard_answer": gold, "category": c,
         "is_correct": ok, "explanation": "..."}
        for i, q, gold, c, ok in REAL
    ]  # fmt: skip
    file = tmp_path / "result.json"
    file.write_text(json.dumps(_memu(records)))
    out = tmp_path / "run"
    assert (
        import_main(
            [str(file), "--out", str(out), "--dataset", str(locomo_path), "--bootstrap-replicates", "20"]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "4 exact, 0 normalised, 1 renamed speaker, 0 by position, 0 unmatched" in printed
    assert "renamed speaker: conv-43: the file writes 'juan' for 'john' (1 questions)" in printed
    # q15's and q28's golds differ from LOCOMO's by the rename only: not reported as golds that differ.
    assert "renamed speaker: 2 of the file's golds differ from LOCOMO's only by a renamed speaker" in printed
    counts = json.loads((out / "run.json").read_text())["imported"]
    assert (counts["matched"], counts["gold_differs"], counts["gold_renamed"]) == (5, 0, 2)
    assert {r.qid for r in read_predictions(out / "predictions.jsonl")} == {
        "conv-43:q13", "conv-43:q14", "conv-43:q15", "conv-43:q28", "conv-43:q176",
    }  # fmt: skip
    metrics = read_metrics(out / "metrics.json")
    assert metrics.overall.judge["mean"] == pytest.approx(4 / 5)  # all but q28
