"""LongMemEval's S and M files, read through the `datasets` library from golden mini files in the cleaned
releases' exact format (xiaowu0162/longmemeval-cleaned; fields as the repository's README documents them):
counts, dates, the user/assistant speakers, evidence turns and sessions, abstention, numbers as answers,
and one line naming file, question and field for each kind of malformed input."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from mem0bench.data.errors import DatasetError
from mem0bench.data.model import Dataset
from mem0bench.suites import DatasetRequest, get_suite
from mem0bench.suites.longmemeval import ABSTENTION, CACHE_FOLDER, MULTI_SESSION, parse_lme_date

DATA = Path(__file__).parent / "data"
S_MINI = DATA / "longmemeval_s_mini.json"
M_MINI = DATA / "longmemeval_m_mini.json"


def _load(suite: str, path: Path, folder: Path, **kw: Any) -> Dataset:
    request = DatasetRequest(path=str(path), data_dir=folder / "data", cache_dir=folder / "hf", **kw)
    return get_suite(suite).load(request)


def _raw(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_s_file_every_type_abstention_and_a_number_answer(tmp_path: Path) -> None:
    ds = _load("longmemeval_s", S_MINI, tmp_path)
    raw = _raw(S_MINI)
    assert [c.sample_id for c in ds.conversations] == [item["question_id"] for item in raw]
    assert Counter(q.category.label for q in ds.questions) == {
        "single_session_user": 1, "single_session_assistant": 1, "single_session_preference": 1,
        "multi_session": 1, "temporal_reasoning": 1, "knowledge_update": 1, "abstention": 1,
    }  # fmt: skip
    by_id = {q.sample_id: q for q in ds.questions}
    # An `_abs` question is abstention whatever its question_type says.
    assert raw[-1]["question_type"] == "temporal-reasoning"
    assert by_id["gpt4_2f8be40d_abs"].category is ABSTENTION
    # Numbers as answers (JSON 4 and 3, beside text answers in the same file) come through as text.
    assert [type(item["answer"]) for item in raw].count(int) == 2
    assert by_id["gpt4_d84a3211"].answer == "4" and by_id["6aeb4375"].answer == "3"
    # Sessions, turns and dates as the file has them (S is sorted by date already).
    for conv, item in zip(ds.conversations, raw, strict=True):
        assert [s.date_text for s in conv.sessions] == item["haystack_dates"]
        assert [len(s.turns) for s in conv.sessions] == [len(s) for s in item["haystack_sessions"]]
        assert conv.questions[0].asked_on == item["question_date"]
        assert conv.speakers == ("User", "Assistant")
        for session, turns in zip(conv.sessions, item["haystack_sessions"], strict=True):
            assert [t.speaker for t in session.turns] == [t["role"].capitalize() for t in turns]
            assert [t.text for t in session.turns] == [t["content"] for t in turns]
    first = ds.conversations[0]
    assert first.sessions[0].date_time == datetime(2023, 5, 21, 0, 5)
    assert first.sessions[0].date_text == "2023/05/21 (Sun) 00:05"


def test_s_file_evidence_turns_and_sessions(tmp_path: Path) -> None:
    by_id = {q.sample_id: q for q in _load("longmemeval_s", S_MINI, tmp_path).questions}
    # has_answer: true turns only (the answer sessions' other user turns carry has_answer: false).
    bikes = by_id["gpt4_d84a3211"]
    assert bikes.evidence == ("D1:1", "D3:1", "D5:1", "D6:1") and bikes.evidence_sessions == (1, 3, 5, 6)
    degree = by_id["e47becba"]
    assert degree.evidence == ("D3:1",) and degree.evidence_sessions == (3,)
    # single-session-assistant: the evidence is what the assistant said.
    ds = _load("longmemeval_s", S_MINI, tmp_path, conversations=["7161e7e2"])
    (conv,) = ds.conversations
    (q,) = conv.questions
    assert q.evidence == ("D2:2",) and q.evidence_sessions == (2,)
    assert conv.sessions[1].turns[1].speaker == "Assistant"
    assert conv.sessions[1].turns[1].text.startswith("Try Monteverde")
    # Abstention: its session is named, but no turn holds an answer.
    abstention = by_id["gpt4_2f8be40d_abs"]
    assert abstention.evidence == () and abstention.evidence_sessions == (2,)


def test_m_file_many_sessions_per_question(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="mem0bench.suites"):
        ds = _load("longmemeval_m", M_MINI, tmp_path)
    raw = _raw(M_MINI)
    assert ds.suite == "longmemeval_m" and len(ds.conversations) == 3
    assert [len(c.sessions) for c in ds.conversations] == [120, 90, 75]
    assert sum(len(c.turns) for c in ds.conversations) == sum(
        len(s) for item in raw for s in item["haystack_sessions"]
    )
    for conv, item in zip(ds.conversations, raw, strict=True):
        times = [s.date_time for s in conv.sessions]
        assert times == sorted(times) and times[-1] < parse_lme_date(item["question_date"])  # type: ignore[operator]
        assert [s.index for s in conv.sessions] == list(range(1, len(item["haystack_sessions"]) + 1))
    spanish = ds.conversations[0].questions[0]
    assert spanish.category is MULTI_SESSION and spanish.answer == "2"
    assert spanish.evidence_sessions == (18, 65, 104)
    assert spanish.evidence == ("D18:1", "D65:1", "D104:1")
    abstention = ds.conversations[2].questions[0]
    assert abstention.category is ABSTENTION and abstention.evidence_sessions == (31,)
    # Against the release's counts: a file of another size is a note in the log.
    assert "1 multi_session questions where the release of LongMemEval_M has 133" in caplog.text


def test_read_through_datasets_into_the_cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = _load("longmemeval_s", S_MINI, tmp_path)
    assert any((tmp_path / "hf").rglob("*.arrow"))  # the Arrow table `datasets` built
    assert not (tmp_path / "data").exists()  # the data folder is for the files themselves
    # Without a cache_dir: the `datasets` folder of the harness's cache.
    monkeypatch.setenv("MEM0BENCH_CACHE_DIR", str(tmp_path / "cache"))
    get_suite("longmemeval_m").load(DatasetRequest(path=str(M_MINI), data_dir=tmp_path / "data"))
    assert any((tmp_path / "cache" / CACHE_FOLDER).rglob("*.arrow"))
    import hashlib

    assert ds.sha256 == hashlib.sha256(S_MINI.read_bytes()).hexdigest()  # of the file, not the cache
    again = _load("longmemeval_s", S_MINI, tmp_path)  # from the cached table: the same objects
    assert again == ds


def test_fields_beyond_the_readme_and_extra_turn_keys_are_ignored(tmp_path: Path) -> None:
    data = _raw(S_MINI)
    data[0]["annotator_note"] = {"checked": True}
    data[1]["annotator_note"] = "x"
    data[0]["haystack_sessions"][0][0]["lang"] = "en"
    path = tmp_path / "extra.json"
    path.write_text(json.dumps(data))
    plain = _load("longmemeval_s", S_MINI, tmp_path / "a")
    assert _load("longmemeval_s", path, tmp_path / "b").conversations == plain.conversations


def _question(i: int) -> str:
    return str(_raw(S_MINI)[i]["question_id"])


@pytest.mark.parametrize(
    ("index", "change", "where"),
    [
        (3, lambda q: q.pop("question_date"), "question_date: missing field 'question_date'"),
        (2, lambda q: q.update(question_date=20230702), "question_date: expected text, found the number"),
        (0, lambda q: q.update(answer=["a", "b"]), "answer: expected text or a number, found a list"),
        (4, lambda q: q.pop("answer"), "answer: missing field 'answer'"),
        (1, lambda q: q.pop("answer_session_ids"), "answer_session_ids: missing field"),
        (1, lambda q: q.update(answer_session_ids=[7]), "answer_session_ids[0]: expected text, found the number 7"),
        (5, lambda q: q["haystack_dates"].__setitem__(1, 20230101), "haystack_dates[1]: cannot parse the date"),
        (5, lambda q: q.update(haystack_sessions="none"), "haystack_sessions: expected a list, found the text"),
        (6, lambda q: q["haystack_sessions"][1][0].update(has_answer="yes"),
         "haystack_sessions[1][0].has_answer: expected true or false, found the text 'yes'"),
        (2, lambda q: q["haystack_sessions"][0][1].update(content=5),
         "haystack_sessions[0][1].content: expected text, found the number 5"),
        (2, lambda q: q["haystack_sessions"][0][1].pop("role"), "haystack_sessions[0][1].role: expected 'user'"),
        (0, lambda q: q.update(question_type="abstention"), "question_type: unknown question_type 'abstention'"),
    ],
)  # fmt: skip
def test_malformed_record_is_one_line_naming_file_question_and_field(
    tmp_path: Path, index: int, change: Any, where: str
) -> None:
    data = _raw(S_MINI)
    change(data[index])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(DatasetError) as err:
        _load("longmemeval_s", bad, tmp_path)
    text = str(err.value)
    # The record at fault is named (a wrong type in one record never turns up as another's problem).
    assert "\n" not in text and text.startswith(f"{bad}: sample {_question(index)}: {where}"), text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"questions": []}', "expected a JSON list of records at the top level"),
        ("[]", "the file holds no records"),
        ('[{"question_id": "a"}, "x"]', "sample #1: expected an object"),
        ('[{"question_id": "a"', "invalid JSON in record #0"),
        ('["e47becba"]', "sample #0: expected an object"),
        ('[{"question_id": 7, "question_type": "multi-session"}]', "sample #0: question_id: expected text"),
    ],
)
def test_malformed_file_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(DatasetError) as err:
        _load("longmemeval_m", bad, tmp_path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{bad}: ") and message in text, text


def test_without_a_path_and_without_the_hub_one_line_says_to_pass_a_file(tmp_path: Path) -> None:
    # conftest sets HF_HUB_OFFLINE: the hub client refuses at once, as it would after its retries offline.
    with pytest.raises(DatasetError) as err:
        get_suite("longmemeval_s").load(
            DatasetRequest(path=None, data_dir=tmp_path, cache_dir=tmp_path / "hf")
        )
    text = str(err.value)
    assert "\n" not in text and text.startswith(
        "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/"
    )
    assert "download from the hub failed (the hub cannot be reached and HF_HUB_OFFLINE is set)" in text
    assert text.endswith("pass dataset.path=FILE pointing at a copy of longmemeval_s_cleaned.json")


def test_dry_run_on_m_prices_a_question_and_the_whole_release(tmp_path: Path) -> None:
    from devtools.e2e import cli_env, run_cli

    env = cli_env("http://127.0.0.1:9/v1", tmp_path / "cache")  # nothing listens: no call could be made
    result = run_cli(
        ["run", "+exp=mem0", "dataset=longmemeval_m", f"dataset.path={M_MINI}", "run.dry_run=true"], env
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = [line for line in result.stdout.splitlines() if not line.startswith("[")]  # not the log's lines
    assert out[0] == "dry run: mem0 on LongMemEval_M, 3 conversations, 3 questions (no LLM call made)"
    assert any(line.startswith("ingests 3 conversations, 285 sessions, 850 turns") for line in out)
    assert any(
        line.startswith("note: LongMemEval_M: ~500 sessions (~1.5M tokens) per question") for line in out
    )
    total = next(line for line in out if line.startswith("total: about "))
    calls, usd = total.removeprefix("total: about ").split("  ")[0].split(" calls, $")
    per = out[out.index(total) + 1]
    assert per.startswith(f"per question: about {float(calls.replace(',', '')) / 3:,.0f} calls, ")
    assert per.endswith("(its conversation: 95 sessions on average)")
    warning = out[out.index(total) + 2]
    release = float(usd) / 3 * 500
    assert warning.startswith("warning: at this rate all 500 questions of the release would be about ")
    assert f"${release:,.2f}, if their conversations are the size of these" in warning


def test_the_list_is_copied_one_record_at_a_time_whatever_the_chunk_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from mem0bench.suites import hf_records

    whole = _load("longmemeval_s", S_MINI, tmp_path / "whole")
    monkeypatch.setattr(hf_records, "_CHUNK", 7)  # every record, string and number cut across reads
    tiny = _load("longmemeval_s", S_MINI, tmp_path / "tiny")
    assert tiny.conversations == whole.conversations
    lines = (
        tmp_path / "tiny" / "hf" / f"{hashlib.sha256(S_MINI.read_bytes()).hexdigest()}.jsonl"
    ).read_text()
    assert [json.loads(line) for line in lines.splitlines()] == _raw(S_MINI)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[{"question_id": "a"} {"question_id": "b"}]', "invalid JSON after record #0: expected ',' or ']'"),
        ('[{"question_id": "a"}] []', "invalid JSON: text after the list"),
        ('[{"question_id": "a"}, {"question_id": }]', "invalid JSON in record #1: Expecting value"),
    ],
)
def test_broken_lists_are_one_line(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(DatasetError, match=message):
        _load("longmemeval_oracle", bad, tmp_path)
    assert not list((tmp_path / "hf").glob("*.jsonl*"))  # no partial copy is left to be found later
