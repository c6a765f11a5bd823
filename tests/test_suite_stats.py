"""`mem0bench data stats --suite NAME`: a suite's counts, on the golden mini files; LOCOMO's output as it
was with or without `--suite locomo`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem0bench.cli.data import data_main

DATA = Path(__file__).parent / "data"
S_MINI = DATA / "longmemeval_s_mini.json"
M_MINI = DATA / "longmemeval_m_mini.json"
PLUS = DATA / "locomo_plus_mini.json"
LOCOMO_MINI = DATA / "locomo_mini.json"


@pytest.fixture(autouse=True)
def _data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0BENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEM0BENCH_CACHE_DIR", str(tmp_path / "cache"))  # where `datasets` keeps its tables


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert data_main(["stats", *argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


def test_longmemeval_s_counts_per_category_and_per_question(capsys: pytest.CaptureFixture[str]) -> None:
    stats = _json(capsys, "--suite", "longmemeval_s", "--path", str(S_MINI))
    raw = json.loads(S_MINI.read_text())
    assert (stats["suite"], stats["conversations"], stats["questions"]) == ("longmemeval_s", 7, 7)
    assert stats["sessions"] == sum(len(q["haystack_sessions"]) for q in raw) == 36
    assert stats["turns"] == sum(len(s) for q in raw for s in q["haystack_sessions"])
    assert {k: v["questions"] for k, v in stats["categories"].items()} == {
        "single_session_user": 1, "single_session_assistant": 1, "single_session_preference": 1,
        "multi_session": 1, "temporal_reasoning": 1, "knowledge_update": 1, "abstention": 1,
    }  # fmt: skip
    assert stats["categories"]["multi_session"] == {"id": 14, "questions": 1, "release": 133}
    sizes = [len(q["haystack_sessions"]) for q in raw]
    assert stats["sessions_per_conversation"] == {"min": 4, "mean": round(sum(sizes) / 7, 1), "max": 7}
    # has_answer turns: none in the abstention question, four in the bikes question.
    assert stats["evidence_turns_per_question"]["min"] == 0
    assert stats["evidence_turns_per_question"]["max"] == 4
    named = sum(len(q["answer_session_ids"]) for q in raw)
    assert stats["evidence_sessions_per_question"] == {"min": 1, "mean": round(named / 7, 1), "max": 4}
    assert "question_type" in stats["release_note"]


def test_longmemeval_m_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert data_main(["stats", "--suite", "longmemeval_m", "--path", str(M_MINI)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"dataset  {M_MINI}\nsuite    LongMemEval_M (longmemeval_m)\n")
    lines = out.splitlines()
    assert next(line for line in lines if line.startswith("sessions ")).split() == ["sessions", "285"]
    assert "per conversation (one per question)" in out
    spread = next(line for line in lines if line.startswith("sessions  ") and "95.0" in line)
    assert spread.split() == ["sessions", "75", "95.0", "120"]
    assert any(line.split()[:3] == ["17", "abstention", "1"] for line in lines)


def test_locomo_plus_counts_follow_the_mode(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--suite", "locomo_plus", "--path", str(PLUS), "--host-path", str(LOCOMO_MINI)]
    faithful = _json(capsys, *base)
    grouped = _json(capsys, *base, "--mode", "grouped")
    items = len(json.loads(PLUS.read_text()))
    assert faithful["questions"] == grouped["questions"] == items
    assert faithful["conversations"] == items and grouped["conversations"] < items
    assert faithful["categories"] == {"cognitive": {"id": 6, "questions": items, "release": 401}}


def test_locomo_output_is_the_same_with_or_without_the_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert data_main(["stats", "--path", str(LOCOMO_MINI)]) == 0
    plain = capsys.readouterr().out
    assert data_main(["stats", "--suite", "locomo", "--path", str(LOCOMO_MINI)]) == 0
    assert capsys.readouterr().out == plain
    assert "tokens/conversation mean (cl100k_base)" in plain and "suite " not in plain


def test_unknown_suite_and_bad_file_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert data_main(["stats", "--suite", "nosuch"]) == 2
    assert capsys.readouterr().err.startswith("error: --suite: unknown suite 'nosuch'")
    bad = tmp_path / "bad.json"
    data = json.loads(S_MINI.read_text())
    del data[2]["question"]
    bad.write_text(json.dumps(data))
    assert data_main(["stats", "--suite", "longmemeval_s", "--path", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"error: {bad}: sample 0edc2aef: question: missing field 'question'\n"
