"""BEAM: the loader on the released 100K files and on broken ones, Kendall tau and the ordering score
against hand-computed values, the rubric score's switches, the two averages, the judge's reply reading,
and the rubric judge's calls (one per item) against the stand-in."""

from __future__ import annotations

import asyncio
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from mem0bench.data.errors import DatasetError
from mem0bench.prompts.beam import UNFILLED_QUESTION, build_rubric_messages, read_item_score
from mem0bench.suites import get_suite
from mem0bench.suites.base import DatasetRequest
from mem0bench.suites.beam import ABILITIES, beam_authors_file_names, parse_anchor
from mem0bench.suites.beam_scoring import (
    align,
    authors_average,
    conversation_bootstrap,
    kendall_tau_b,
    ordering_score,
    per_question_average,
    rubric_score,
)


def beam_folder() -> Path:
    """BEAM's repository folder with the 100K chats (the realdata tests'): $MEM0BENCH_BEAM_DATA, the clone's
    data/beam, the shared folder beside the clone, or the per-user data folder; absent, the test fails with
    one line saying where to put it (never skips)."""
    from mem0bench.paths import data_home

    repo = Path(__file__).resolve().parents[1]
    candidates = [Path(p) for p in [os.environ.get("MEM0BENCH_BEAM_DATA")] if p] + [
        repo / "data" / "beam", repo.parent / "shared" / "data" / "beam", data_home() / "beam",
    ]  # fmt: skip
    for candidate in candidates:
        if (candidate / "chats" / "100K" / "1" / "chat.json").is_file():
            return candidate
    pytest.fail(
        "BEAM's 100K chats are needed by this realdata test and were found at none of "
        f"{', '.join(map(str, candidates))}: clone github.com/mohammadtavakoli78/BEAM there, or deselect these "
        "tests with -m 'not realdata'",
        pytrace=False,
    )


def _load(path: Path, scale: str = "100K", **options: Any) -> Any:
    request = DatasetRequest(path=str(path), data_dir=path, scale=scale, options=options)
    return get_suite("beam").load(request)


# ---- the loader ----


@pytest.mark.realdata
def test_the_100k_files_load_as_20_conversations_of_20_questions() -> None:
    beam = beam_folder()
    dataset = _load(beam)
    assert [c.sample_id for c in dataset.conversations][:3] == ["100K-1", "100K-2", "100K-3"]
    assert len(dataset.conversations) == 20 and len(dataset.questions) == 400
    assert {q.category for q in dataset.questions} == set(ABILITIES.values())
    first = dataset.conversations[0]
    assert len(first.sessions) == 3  # one session per batch, dated by its time anchor
    assert first.sessions[0].date_text == "March-15-2024" and first.sessions[0].date_time.day == 15
    assert first.turns[0].speaker == "User" and first.turns[0].dia_id == "D1:0"
    ordering = next(q for q in first.questions if q.category == ABILITIES["event_ordering"])
    assert json.loads(ordering.answer) == ordering_rubric(beam, 1, 0)
    assert ordering.evidence and all(e.startswith("D") for e in ordering.evidence)  # message ids as dia_ids
    one = _load(beam, **{"judge_question": "unfilled"})  # a switch is taken
    assert len(one.conversations) == 20


def ordering_rubric(root: Path, n: int, k: int) -> list[str]:
    data = json.loads(
        (root / "chats" / "100K" / str(n) / "probing_questions" / "probing_questions.json").read_text()
    )
    return data["event_ordering"][k]["rubric"]


@pytest.mark.realdata
def test_a_scale_without_chats_is_one_line_naming_the_file() -> None:
    beam = beam_folder()
    with pytest.raises(DatasetError, match=r"500K/1/chat\.json: sample 500K-1: missing chat\.json .*hub"):
        _load(beam, scale="500K")
    with pytest.raises(DatasetError, match="dataset.scale must be one of 100K, 500K, 1M, 10M"):
        _load(beam, scale="2M")


def _write(root: Path, chat: Any, questions: Any, n: int = 1) -> Path:
    folder = root / "chats" / "100K" / str(n)
    (folder / "probing_questions").mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(chat))
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(questions))
    return folder


def _message(mid: int, role: str = "user", **more: Any) -> dict[str, Any]:
    return {"role": role, "id": mid, "content": f"message {mid}", **more}


GOOD_CHAT = [
    {"batch_number": 1, "time_anchor": None,
     "turns": [[_message(0, time_anchor="March-15-2024"), _message(1, "assistant")]]},
    {"batch_number": 2, "time_anchor": None, "turns": [[_message(2), _message(3, "assistant")]]},
]  # fmt: skip
GOOD_QUESTIONS = {
    "event_ordering": [{"question": "In what order?", "rubric": ["a", "b"], "source_chat_ids": [0, [2, 9]]}],
    "abstention": [{"question": "What was never said?", "rubric": ["says it was not said"]}],
}


def test_a_small_chat_loads_with_inherited_dates_and_evidence(tmp_path: Path) -> None:
    _write(tmp_path, GOOD_CHAT, GOOD_QUESTIONS)
    dataset = _load(tmp_path)
    (conv,) = dataset.conversations
    assert conv.sample_id == "100K-1"
    assert [s.date_text for s in conv.sessions] == ["March-15-2024", "March-15-2024"]  # inherited
    ordering, abstention = conv.questions
    assert ordering.evidence == ("D1:0", "D2:2")  # nested ids read; 9 names no message: left out
    assert abstention.evidence == () and abstention.qid == "100K-1:q1"


BROKEN = [
    ("chat", "not a list", r"chat\.json: sample 100K-1: expected a non-empty list of batches"),
    ("chat", [{"turns": "x"}], r"chat\.json: sample 100K-1: \[0\]\.turns: expected a list of turns"),
    ("chat", [{"turns": [[_message(0, "robot", time_anchor="March-15-2024")]]}],
     r"sample 100K-1: \[0\]\.turns\[0\]\[0\]\.role: expected 'user' or 'assistant'"),
    ("chat", [{"turns": [[_message(0, time_anchor="Marchy-40-2024")]]}],
     r"\[0\]\.time_anchor: cannot parse the time anchor 'Marchy-40-2024'"),
    ("chat", [{"turns": [[_message(0)]]}], r"\[0\]\.time_anchor: the first batch has no time anchor"),
    ("chat", [{"turns": [[_message(0, time_anchor="March-15-2024"), _message(0, "assistant")]]}],
     r"\[0\]\.turns\[0\]\[1\]\.id: message id 0 appears twice"),
    ("chat", [{"turns": [[{"role": "user", "id": "0", "content": "x", "time_anchor": "March-15-2024"}]]}],
     r"\[0\]\.turns\[0\]\[0\]\.id: expected an integer message id"),
    ("questions", {"telepathy": []}, r"probing_questions\.json: sample 100K-1: telepathy: unknown ability"),
    ("questions", {"abstention": [{"question": "q", "rubric": []}]},
     r"probing_questions\.json: sample 100K-1: abstention\[0\]\.rubric: expected a non-empty list"),
    ("questions", {"abstention": [{"rubric": ["r"]}]}, r"abstention\[0\]\.question: expected the question's text"),
    ("questions", {"abstention": [{"question": "q", "rubric": ["r"], "source_chat_ids": [{"a": 1.5}]}]},
     r"abstention\[0\]\.source_chat_ids: expected message ids \(integers\), found float"),
]  # fmt: skip


@pytest.mark.parametrize(("part", "value", "message"), BROKEN)
def test_broken_files_are_one_line_naming_file_conversation_and_field(
    part: str, value: Any, message: str, tmp_path: Path
) -> None:
    chat, questions = (value, GOOD_QUESTIONS) if part == "chat" else (GOOD_CHAT, value)
    _write(tmp_path, chat, questions)
    with pytest.raises(DatasetError, match=message) as caught:
        _load(tmp_path)
    assert "\n" not in str(caught.value)


def test_invalid_json_and_missing_folders_and_unknown_ids(tmp_path: Path) -> None:
    folder = _write(tmp_path, GOOD_CHAT, GOOD_QUESTIONS)
    with pytest.raises(DatasetError, match=r"unknown conversation id\(s\) 100K-7"):
        get_suite("beam").load(
            DatasetRequest(path=str(tmp_path), data_dir=tmp_path, conversations=["100K-7"])
        )
    (folder / "chat.json").write_text("[{")
    with pytest.raises(DatasetError, match=r"chat\.json: .*"):
        _load(tmp_path)
    with pytest.raises(DatasetError, match=r"no chats/100K/ folder"):
        _load(tmp_path / "elsewhere")
    with pytest.raises(DatasetError, match=r"dataset\.partial_credit must be one of kept, authors"):
        _load(tmp_path, partial_credit="half")


def test_time_anchors_and_the_authors_file_names() -> None:
    assert parse_anchor("January-10-2024").month == 1  # type: ignore[union-attr]
    assert parse_anchor("Feb-30-2024") is None
    names = beam_authors_file_names("rag.json")
    assert names["run_evaluation_parallel"] == "evaluation-rag.json"
    assert "evaluation-results" not in names["run_evaluation_parallel"]  # their report never finds it


# ---- Kendall tau and the ordering score, by hand ----


def test_kendall_tau_b_against_hand_computed_values() -> None:
    assert kendall_tau_b([1, 2, 3], [1, 2, 3]) == 1.0
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0
    # (1,2) and (1,3) concordant, (2,3) discordant: (2 - 1) / 3
    assert kendall_tau_b([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # five concordant pairs, one tied in y only: 5 / sqrt((5 + 0) * (5 + 1))
    assert kendall_tau_b([1, 2, 3, 4], [1, 2, 5, 5]) == pytest.approx(5 / math.sqrt(30))
    assert kendall_tau_b([1, 1], [1, 2]) is None  # one side all tied: undefined (scipy's NaN)


def test_the_ordering_score_against_hand_computed_values() -> None:
    # Swapped first two: tau 1/3, normalised 2/3; every item found: F1 1.
    swapped = ordering_score(["A", "B", "C"], ["B", "A", "C"])
    assert swapped["tau_norm"] == pytest.approx(2 / 3) and swapped["f1"] == 1.0
    assert swapped["final_score"] == pytest.approx(2 / 3)
    # B missing, a stray line X: union A B C X, ranks 1 2 3 5 against 1 5 3 2 (missing items rank last,
    # tied): three concordant, three discordant pairs, tau 0, normalised 0.5; precision = recall = 2/3.
    stray = ordering_score(["A", "B", "C"], ["A", "X", "C"])
    assert stray["tau_norm"] == pytest.approx(0.5)
    assert stray["precision"] == pytest.approx(2 / 3) and stray["recall"] == pytest.approx(2 / 3)
    assert stray["final_score"] == pytest.approx(0.5 * 2 / 3)
    assert ordering_score(["A", "B", "C"], ["A", "B", "C"])["tau_norm"] == 1.0


def test_align_replaces_each_line_by_its_first_unused_match_and_asks_nothing_for_blank_lines() -> None:
    asked: list[tuple[int, int]] = []

    async def same(i: int, item: str, k: int, line: str) -> bool:
        asked.append((k, i))
        return item.lower() in line.lower()

    lines = ["1. the setup of b", "", "2. first a", "3. b again", "4. something else"]
    aligned = asyncio.run(align(["A", "B"], lines, same))
    assert aligned == ["B", "", "A", "3. b again", "4. something else"]  # B already used: stays itself
    assert all(k != 1 for k, _ in asked)  # the blank line cost no call
    assert asked == [(0, 0), (0, 1), (2, 0)]  # (4 and 3: every item used, nothing left to ask)


# ---- scores and averages ----


def test_rubric_score_keeps_or_truncates_a_half() -> None:
    assert rubric_score([1.0, 0.5, 0.0], truncate_partial=False) == pytest.approx(0.5)
    assert rubric_score([1.0, 0.5, 0.0], truncate_partial=True) == pytest.approx(1 / 3)  # int(0.5) == 0


def test_the_authors_average_and_the_per_question_one_differ_as_they_should() -> None:
    scores = [
        ("c1", "summarization", 1.0), ("c1", "summarization", 0.0), ("c1", "abstention", 1.0),
        ("c2", "summarization", 1.0),
    ]  # fmt: skip
    overall, by_ability = authors_average(scores)
    # summarization: c1 0.5, c2 1.0 -> 0.75; abstention: c1 only -> 1.0; overall (0.75 + 1.0) / 2
    assert by_ability == {"abstention": 1.0, "summarization": 0.75}
    assert overall == pytest.approx(0.875)
    assert per_question_average(scores) == pytest.approx(0.75)
    low, high = conversation_bootstrap(scores, per_question_average, replicates=200, seed=1)  # type: ignore[misc]
    assert 0.0 <= low <= 0.75 <= high <= 1.0
    assert conversation_bootstrap(scores[:1], per_question_average) is None


# ---- the judge's prompt and reply ----


def test_the_question_placeholder_switch_and_reading_a_score() -> None:
    filled = build_rubric_messages("Which port?", "says 8080", "8080")[0]["content"]
    unfilled = build_rubric_messages(None, "says 8080", "8080")[0]["content"]
    assert "Which port?" in filled and UNFILLED_QUESTION not in filled
    assert f"QUESTION the user asked: {UNFILLED_QUESTION}" in unfilled
    assert read_item_score('{"score": 0.5, "reason": "r"}') == 0.5
    assert read_item_score('```json\n{"score": 1.0, "reason": "r"}\n```') == 1.0
    assert read_item_score('Here: {"score": 0, "reason": "r"} done') == 0.0
    assert read_item_score('{"score": 1.0, "reason": "unterminated') == 1.0  # as their json_repair does
    assert read_item_score('{"score": 0.7}') is None and read_item_score("no idea") is None


# ---- the hub's files, through `datasets` (written here, no network) ----


def _hub_row(cid: str) -> dict[str, Any]:
    # The hub's shape: each batch a flat list of messages; questions a Python literal of the JSON object.
    batches = [
        [_message(0, time_anchor="March-15-2024", question_type="main_question"), _message(1, "assistant")],
        [_message(2, time_anchor="April-01-2024", question_type="main_question"), _message(3, "assistant"),
         _message(4, question_type="main_question"), _message(5, "assistant")],
    ]  # fmt: skip
    return {"conversation_id": cid, "chat": json.dumps(batches), "probing_questions": repr(GOOD_QUESTIONS)}


def test_the_hub_files_are_read_through_datasets(tmp_path: Path) -> None:
    import datasets

    rows = [_hub_row("1"), _hub_row("2")]
    # `chat` goes in as JSON text and is decoded by a map: Arrow wants one type per column, as the hub has.
    table = datasets.Dataset.from_list(rows).map(lambda r: {"chat": json.loads(r["chat"])})
    datasets.DatasetDict({"100K": table}).save_to_disk(str(tmp_path / "saved"))
    dataset = _load(tmp_path / "saved")
    assert [c.sample_id for c in dataset.conversations] == ["100K-1", "100K-2"]
    conv = dataset.conversations[0]
    assert [s.date_text for s in conv.sessions] == ["March-15-2024", "April-01-2024"]
    assert [t.dia_id for t in conv.sessions[1].turns] == ["D2:2", "D2:3", "D2:4", "D2:5"]
    assert conv.questions[0].evidence == ("D1:0", "D2:2")
    table.to_parquet(str(tmp_path / "100K.parquet"))
    assert len(_load(tmp_path / "100K.parquet").conversations) == 2
    with pytest.raises(DatasetError, match=r"saved: no split 1M \(it has 100K\)"):
        _load(tmp_path / "saved", scale="1M")


# ---- the rubric judge itself, on a fake client: calls, switches, scores ----


class _Reply:
    def __init__(self, text: str) -> None:
        self.text = text


class _FakeClient:
    """Scores rubric items from a list in order; answers the alignment by substring."""

    def __init__(self, scores: list[float]) -> None:
        self.scores = list(scores)
        self.prompts: list[str] = []
        self.salts: list[str] = []

    async def chat(self, messages: list[dict[str, str]], *, stage: str, salt: str = "", **_: Any) -> _Reply:
        assert stage == "judge"
        text = messages[-1]["content"]
        self.prompts.append(text)
        self.salts.append(salt)
        if text.startswith("First snippet: "):
            first, second = text.removeprefix("First snippet: ").split("\nSecond snippet: ")
            return _Reply("YES" if first.lower() in second.lower() else "NO")
        return _Reply(json.dumps({"score": self.scores.pop(0), "reason": "r"}))


def _answer(category: str, rubric: list[str], prediction: str) -> Any:
    from mem0bench.rundir.records import AnswerRecord

    return AnswerRecord(
        qid="100K-1:q0", conversation="100K-1", question="Which order?", gold=json.dumps(rubric),
        category=f"beam_{category}", category_id=int(ABILITIES[category]), prediction=prediction,
        context_tokens=1, search_latency_s=0.0, total_latency_s=0.0,
    )  # fmt: skip


def _judge(client: _FakeClient, answer: Any, **options: str) -> Any:
    from mem0bench.pipeline.beam_judge import judge_beam
    from mem0bench.pipeline.judge import JudgeSettings
    from mem0bench.suites.beam import configure_judge

    configure_judge(options)
    try:
        return asyncio.run(judge_beam(client, JudgeSettings(model="judge-model", runs=1), answer, 0))
    finally:
        configure_judge({})


def test_the_rubric_judge_asks_once_per_item_and_applies_the_switches() -> None:
    answer = _answer("summarization", ["covers a", "covers b", "covers c"], "a and b")
    ours = _FakeClient([1.0, 0.5, 0.0])
    judged = _judge(ours, answer)
    assert len(ours.prompts) == 3 and len(set(ours.salts)) == 3  # one call, one cache key, per item
    assert "Which order?" in ours.prompts[0]
    assert (
        judged.score == pytest.approx(0.5)
        and judged.label == "PARTIAL"
        and judged.detail["items"] == [1.0, 0.5, 0.0]
    )
    authors = _FakeClient([1.0, 0.5, 0.0])
    judged = _judge(authors, answer, judge_question="unfilled", partial_credit="authors")
    assert judged.score == pytest.approx(1 / 3)  # int(0.5) == 0
    assert "Which order?" not in authors.prompts[0] and "<question>" in authors.prompts[0]


def test_event_ordering_is_scored_by_tau_and_keeps_half_credit() -> None:
    rubric = ["alpha", "beta", "gamma"]
    answer = _answer("event_ordering", rubric, "1. beta\n2. alpha\n3. gamma")
    client = _FakeClient([1.0, 0.5, 1.0])
    judged = _judge(client, answer, partial_credit="authors")
    # beta, alpha, gamma against alpha, beta, gamma: tau 1/3, normalised 2/3 (the authors' report figure)
    assert judged.score == pytest.approx(2 / 3) and judged.detail["tau_norm"] == pytest.approx(2 / 3)
    assert judged.detail["rubric"] == pytest.approx(2.5 / 3)  # event ordering keeps the 0.5
    # alignment: line 1 tries alpha then beta; line 2 alpha; line 3 gamma: 4 calls after the 3 items
    assert len(client.prompts) == 3 + 4
    rubric_scored = _judge(_FakeClient([1.0, 0.5, 1.0]), answer, event_ordering_score="rubric")
    assert rubric_scored.score == pytest.approx(2.5 / 3)


def test_an_unreadable_item_is_a_judge_failure_not_a_zero() -> None:
    class Mute(_FakeClient):
        async def chat(
            self, messages: list[dict[str, str]], *, stage: str, salt: str = "", **_: Any
        ) -> _Reply:
            return _Reply("I think it is fine")

    judged = _judge(Mute([]), _answer("abstention", ["declines"], "I cannot know"))
    assert judged.label is None and judged.score is None
    assert judged.failure.startswith("malformed: no score of 1, 0.5 or 0 in the reply to rubric item 0")


def test_locomo_only_judge_and_answer_settings_are_refused_for_beam() -> None:
    from mem0bench.common.errors import ConfigurationError
    from mem0bench.pipeline.spec import check_suite

    scope: Any = type("Scope", (), {"suite": "beam"})()
    check_suite(scope, "default", "lenient")  # the defaults: the suite's own judge and answer prompt
    with pytest.raises(
        ConfigurationError, match="judge.prompt=paper is a LOCOMO grading; beam is graded by its own"
    ):
        check_suite(scope, "default", "paper")
    with pytest.raises(ConfigurationError, match="judge.prompt=longmemeval is LongMemEval's"):
        check_suite(scope, "default", "longmemeval")
    with pytest.raises(ConfigurationError, match="answer.prompt=paper is the Mem0 paper's LOCOMO wording"):
        check_suite(scope, "paper", "lenient")


@pytest.mark.realdata
def test_data_stats_counts_a_scale(capsys: pytest.CaptureFixture[str]) -> None:
    from mem0bench.cli.data import data_main

    assert data_main(["stats", "--suite", "beam", "--path", str(beam_folder()), "--scale", "100K"]) == 0
    out = capsys.readouterr().out
    assert "conversations     20" in out and "questions        400" in out and "beam_event_ordering" in out
    assert data_main(["stats", "--suite", "beam", "--path", str(beam_folder()), "--scale", "1M"]) == 2
    assert "1M/1/chat.json: sample 1M-1: missing chat.json" in capsys.readouterr().err
