"""Loading LOCOMO: exact counts on the real file, and the loader's documented behaviour."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from mem0bench.data import (
    LOCOMO_SHA256,
    Dataset,
    dataset_stats,
    format_stats_table,
    load_dataset,
    parse_session_date,
)
from mem0bench.suites.locomo import ADVERSARIAL, TEMPORAL

ALL_IDS = [f"conv-{n}" for n in (26, 30, 41, 42, 43, 44, 47, 48, 49, 50)]


@pytest.fixture(scope="module")
def real(locomo_path: Path) -> Dataset:
    return load_dataset(locomo_path)


@pytest.fixture(scope="module")
def raw(locomo_path: Path) -> list[dict[str, Any]]:
    return json.loads(locomo_path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- the real file


def test_real_file_exact_counts(real: Dataset) -> None:
    stats = dataset_stats(real)
    assert stats["conversations"] == 10
    assert stats["sessions"] == 272
    assert stats["turns"] == 5882
    assert stats["questions"] == 1986
    assert stats["categories"] == {
        "multi_hop": 282,
        "temporal": 321,
        "open_domain": 96,
        "single_hop": 841,
        "adversarial": 446,
    }
    assert list(stats["categories"]) == ["multi_hop", "temporal", "open_domain", "single_hop", "adversarial"]
    assert stats["turns_with_images"] == 1226
    assert stats["sha256"] == LOCOMO_SHA256 == real.sha256
    assert list(stats["tokens_per_conversation"]) == ALL_IDS
    sizes = stats["tokens_per_conversation"].values()
    assert stats["tokens_min"] == min(sizes) and stats["tokens_max"] == max(sizes)
    assert stats["tokens_min"] <= stats["tokens_mean"] <= stats["tokens_max"]
    json.dumps(stats)  # JSON-ready
    table = format_stats_table(stats)
    assert "5,882" in table and "single_hop" in table and "conv-50" in table


def test_token_sizes_without_captions_match_the_brief(locomo_path: Path) -> None:
    """Rendered as '(date) speaker: text' lines without captions: 16,057..30,653 tokens (BRIEF section 2)."""
    stats = dataset_stats(load_dataset(locomo_path, fold_captions=False))
    assert stats["tokens_min"] == 16057
    assert stats["tokens_max"] == 30653
    assert round(stats["tokens_mean"]) == 26099


def test_turns_per_conversation_range(real: Dataset) -> None:
    sizes = [len(c.turns) for c in real.conversations]
    assert min(sizes) == 369 and max(sizes) == 689


def test_conv26_sessions_with_turns_only_and_dates_parsed(real: Dataset, raw: list[dict[str, Any]]) -> None:
    conv = real.conversations[0]
    assert conv.sample_id == "conv-26"
    assert conv.speakers == ("Caroline", "Melanie")
    # the file has date keys for sessions 20..35 but no turn lists for them
    assert "session_35_date_time" in raw[0]["conversation"]
    assert len(conv.sessions) == 19
    assert [s.index for s in conv.sessions] == list(range(1, 20))
    first = conv.sessions[0]
    assert first.date_text == "1:56 pm on 8 May, 2023"
    assert first.date_time == datetime(2023, 5, 8, 13, 56)
    assert all(isinstance(s.date_time, datetime) for c in real.conversations for s in c.sessions)
    assert all(t.session_index == s.index for s in conv.sessions for t in s.turns)


def test_caption_folding_on_and_off(locomo_path: Path, raw: list[dict[str, Any]]) -> None:
    source = raw[0]["conversation"]["session_1"][4]
    caption = source["blip_caption"]
    folded = load_dataset(locomo_path, conversations=["conv-26"])
    plain = load_dataset(locomo_path, conversations=["conv-26"], fold_captions=False)
    t_folded = folded.conversations[0].sessions[0].turns[4]
    t_plain = plain.conversations[0].sessions[0].turns[4]
    assert t_folded.dia_id == t_plain.dia_id == "D1:5"
    assert t_plain.text == source["text"]
    assert t_folded.text.startswith(source["text"]) and caption in t_folded.text
    assert t_folded.caption == t_plain.caption == caption
    # turns without an image are untouched either way
    assert folded.conversations[0].sessions[0].turns[0].text == raw[0]["conversation"]["session_1"][0]["text"]
    assert folded.conversations[0].sessions[0].turns[0].caption is None
    # the caption reaches the rendered lines only when folded
    assert any(caption in line for line in folded.conversations[0].render_lines())
    assert not any(caption in line for line in plain.conversations[0].render_lines())


def test_conversation_selection_keeps_file_order(locomo_path: Path) -> None:
    ds = load_dataset(locomo_path, conversations=["conv-30", "conv-26"])
    assert [c.sample_id for c in ds.conversations] == ["conv-26", "conv-30"]
    assert ds.sha256 == LOCOMO_SHA256
    assert {q.sample_id for q in ds.questions} == {"conv-26", "conv-30"}


def test_int_answers_become_strings(real: Dataset, raw: list[dict[str, Any]]) -> None:
    int_qids = [
        f"{s['sample_id']}:q{i}"
        for s in raw
        for i, q in enumerate(s["qa"])
        if isinstance(q.get("answer"), int)
    ]
    assert len(int_qids) == 6
    by_qid = {q.qid: q for q in real.questions}
    assert sorted(by_qid[qid].answer for qid in int_qids) == ["2", "2022", "2022", "2022", "2022", "3"]
    assert all(isinstance(q.answer, str) for q in real.questions)
    assert all(q.answer for q in real.questions if q.category is not ADVERSARIAL)


def test_adversarial_answers(real: Dataset) -> None:
    adversarial = [q for q in real.questions if q.category is ADVERSARIAL]
    assert len(adversarial) == 446
    assert sum(q.answer == "" for q in adversarial) == 444
    assert all(q.adversarial_answer for q in adversarial)
    assert all(q.adversarial_answer is None for q in real.questions if q.category is not ADVERSARIAL)


def test_qid_format_and_evidence(real: Dataset) -> None:
    qids = [q.qid for q in real.questions]
    assert len(set(qids)) == len(qids) == 1986
    for conv in real.conversations:
        for i, q in enumerate(conv.questions):
            assert q.index == i and q.sample_id == conv.sample_id
            assert q.qid == f"{conv.sample_id}:q{i}"
    assert real.questions[0].qid == "conv-26:q0"
    assert all(isinstance(q.evidence, tuple) for q in real.questions)
    assert all(isinstance(e, str) for q in real.questions for e in q.evidence)


# ---------------------------------------------------------------- small files


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_minimal_sample_ignores_annotations_and_extra_fields(tmp_path: Path) -> None:
    sample = {
        "sample_id": "s1",
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_2_date_time": "12:05 am on 1 January, 2024",
            "session_2": [
                {"speaker": "B", "dia_id": "D2:1", "text": "later", "img_url": ["x"], "re-download": True}
            ],
            "session_1_date_time": "12:30 pm on 31 December, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi", "query": "q"}],
            "session_3_date_time": "not a date, but there are no turns",
        },
        "qa": [
            {"question": "When?", "answer": 2023, "category": 2},
            {"question": "Huh?", "category": 5, "adversarial_answer": "nope", "evidence": ["D9:99", "bad"]},
        ],
    }
    ds = load_dataset(_write(tmp_path, [sample]))
    conv = ds.conversations[0]
    assert [s.index for s in conv.sessions] == [1, 2]
    assert conv.sessions[0].date_time == datetime(2023, 12, 31, 12, 30)
    assert conv.sessions[1].date_time == datetime(2024, 1, 1, 0, 5)
    assert conv.render_lines() == [
        "(12:30 pm on 31 December, 2023) A: hi",
        "(12:05 am on 1 January, 2024) B: later",
    ]
    q0, q1 = conv.questions
    assert (q0.qid, q0.answer, q0.category) == ("s1:q0", "2023", TEMPORAL)
    assert (q1.answer, q1.adversarial_answer, q1.evidence) == ("", "nope", ("D9:99", "bad"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("12:00 am on 1 Jan, 2024", datetime(2024, 1, 1, 0, 0)),
        ("12:00 pm on 1 January, 2024", datetime(2024, 1, 1, 12, 0)),
        ("9:05 AM on 29 February 2024", datetime(2024, 2, 29, 9, 5)),
        ("13:00 pm on 1 May, 2023", None),
        ("1:00 pm on 30 February, 2023", None),
        ("8 May 2023", None),
        ("", None),
    ],
)
def test_parse_session_date(text: str, expected: datetime | None) -> None:
    assert parse_session_date(text) == expected


def test_a_conversation_fingerprint_changes_with_its_turns_and_the_settings(locomo_mini: Path) -> None:
    conversation = load_dataset(locomo_mini).conversations[0]
    assert conversation.fingerprint() == load_dataset(locomo_mini).conversations[0].fingerprint()
    assert conversation.fingerprint({"k": 1}) != conversation.fingerprint({"k": 2})
    first = conversation.sessions[0]
    edited_turn = dataclasses.replace(first.turns[0], text=first.turns[0].text + "!")
    edited = dataclasses.replace(
        conversation,
        sessions=(
            dataclasses.replace(first, turns=(edited_turn, *first.turns[1:])),
            *conversation.sessions[1:],
        ),
    )
    assert edited.fingerprint() != conversation.fingerprint()
