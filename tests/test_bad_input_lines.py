"""Bad input of every kind the issue-32 walk found is one line naming the file, the sample and the field:
never a traceback, never a silently wrong number (a lone surrogate that killed a run mid-ingest, a category
of another suite dropped from scoring, a NaN answer that became the gold text 'nan', a nested file's
RecursionError, a damaged run file, a non-UTF-8 import)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
from devtools.standin.server import StandinServer
from mem0bench.cli.import_answers import import_main
from mem0bench.common.jsonfile import read_json_object
from mem0bench.common.jsonl import DamagedFileError, read_jsonl
from mem0bench.data import load_dataset
from mem0bench.data.answer_key import read_answer_key
from mem0bench.data.errors import DatasetError
from mem0bench.suites import DatasetRequest, get_suite
from tests.dataset_files import LME_S, LOCOMO_MINI, PLUS, edited, load_suite, one_line

DEEP = "[" * 200_000 + "]" * 200_000


def _locomo_error(path: Path) -> str:
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    return one_line(info.value, path)


def _lme_error(
    tmp_path: Path, change: Callable[[dict[str, Any]], Any] | None = None, text: str | None = None
) -> str:
    path = tmp_path / "lme.json"
    if text is None:
        data = json.loads(LME_S.read_text())
        assert change is not None
        change(data[1])
        text = json.dumps(data)
    path.write_text(text)
    with pytest.raises(DatasetError) as info:
        load_suite("longmemeval_s", path, tmp_path)
    return one_line(info.value, path)


def _plus_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plus.json"
    path.write_text(text)
    request = DatasetRequest(path=str(path), data_dir=tmp_path, host_path=str(LOCOMO_MINI))
    with pytest.raises(DatasetError) as info:
        get_suite("locomo_plus").load(request)
    return one_line(info.value, path)


# ---- a lone surrogate: refused at load, not a crash mid-ingest ----------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            lambda s: s["conversation"]["session_1"][0].update(text="hi \ud800"),
            "conversation.session_1[0].text",
        ),
        (
            lambda s: s["conversation"]["session_1"][1].update(blip_caption="a \udfff cat"),
            "conversation.session_1[1].blip_caption",
        ),
        (lambda s: s["qa"][2].update(question="when\ud83d?"), "qa[2].question"),
    ],
)
def test_locomo_lone_surrogate(tmp_path: Path, change: Any, field: str) -> None:
    path = edited(LOCOMO_MINI, tmp_path / "locomo.json", 0, change)
    assert "\\ud8" in path.read_text() or "\\udf" in path.read_text()
    line = _locomo_error(path)
    assert line.startswith(f"{path}: sample mini-1: {field}: ") and "surrogate" in line


def test_longmemeval_and_locomo_plus_lone_surrogate(tmp_path: Path) -> None:
    line = _lme_error(tmp_path, lambda q: q["haystack_sessions"][0][0].update(content="x\ud800"))
    assert ": sample 7161e7e2: haystack_sessions[0][0].content: " in line and "surrogate" in line
    data = json.loads(PLUS.read_text())
    data[1]["cue_dialogue"] = "A: I moved \ud800\nB: nice"
    line = _plus_error(tmp_path, json.dumps(data))
    assert ": sample #1: cue_dialogue: " in line and "surrogate" in line


# ---- a category the suite does not declare: refused, not dropped from scoring --------------------------------


@pytest.mark.parametrize("category", [6, 11, 17, 0])
def test_locomo_category_of_another_suite(tmp_path: Path, category: int) -> None:
    path = edited(LOCOMO_MINI, tmp_path / "locomo.json", 0, lambda s: s["qa"][3].update(category=category))
    line = _locomo_error(path)
    assert line.startswith(f"{path}: sample mini-1: qa[3].category: unknown category {category} ")


# ---- NaN / Infinity: refused, never the gold text 'nan' -----------------------------------------------------


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_locomo_non_finite_answer(tmp_path: Path, constant: str) -> None:
    path = edited(LOCOMO_MINI, tmp_path / "locomo.json", 0, lambda s: s["qa"][0].update(answer="PLACEHOLDER"))
    path.write_text(path.read_text().replace('"PLACEHOLDER"', constant, 1))
    line = _locomo_error(path)
    assert line.startswith(f"{path}: sample mini-1: qa[0].answer: ") and "NaN or Infinity" in line


def test_longmemeval_and_answer_key_non_finite(tmp_path: Path) -> None:
    data = json.loads(LME_S.read_text())
    data[1]["answer"] = "PLACEHOLDER"
    line = _lme_error(tmp_path, text=json.dumps(data).replace('"PLACEHOLDER"', "NaN"))
    assert ": sample 7161e7e2: answer: " in line and "NaN or Infinity" in line
    key = tmp_path / "key.json"
    key.write_text('{"mini-1:q0": NaN}')
    with pytest.raises(DatasetError) as info:
        read_answer_key(key, load_dataset(LOCOMO_MINI))
    assert one_line(info.value, key).startswith(f"{key}: mini-1:q0: ")


# ---- a deeply nested file: one line, not a RecursionError -----------------------------------------------------


def test_deeply_nested_files_areone_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    assert "nested too deeply" in _locomo_error(path)
    assert "nested too deeply" in _plus_error(tmp_path, DEEP)
    assert "nested too deeply" in _lme_error(tmp_path, text=f"[{DEEP}]")
    key = tmp_path / "key.json"
    key.write_text(DEEP)
    with pytest.raises(DatasetError, match="nested too deeply"):
        read_answer_key(key, load_dataset(LOCOMO_MINI))
    with pytest.raises(ValueError, match="nested too deeply"):
        read_json_object(path)
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"a": 1}\n' + DEEP + "\n" + '{"a": 2}\n')
    with pytest.raises(DamagedFileError, match="line 2"):
        list(read_jsonl(rows))


# ---- non-UTF-8 files: one line ---------------------------------------------------------------------------------


def test_non_utf8_dataset_files(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(LOCOMO_MINI.read_bytes().replace(b"Maya", b"May\xe4"))  # 'Mayä' in Latin-1
    assert "not UTF-8" in _locomo_error(path)
    plus = tmp_path / "plus.json"
    plus.write_bytes('[{"cue_dialogue": "A: caf\xe9"}]'.encode("latin-1"))
    request = DatasetRequest(path=str(plus), data_dir=tmp_path, host_path=str(LOCOMO_MINI))
    with pytest.raises(DatasetError, match="not UTF-8"):
        get_suite("locomo_plus").load(request)
    lme = tmp_path / "lme.json"
    lme.write_bytes(LME_S.read_bytes().replace(b"e47becba", b"e47becb\xe9"))  # one Latin-1 byte
    with pytest.raises(DatasetError, match="not UTF-8"):
        load_suite("longmemeval_s", lme, tmp_path)


def test_non_utf8_import_isone_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answers = tmp_path / "answers.json"
    record = {"conversation": "mini-1", "question": "x", "prediction": "caf\xe9"}
    answers.write_bytes(json.dumps([record], ensure_ascii=False).encode("latin-1"))
    code = import_main([str(answers), "--out", str(tmp_path / "out"), "--dataset", str(LOCOMO_MINI)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert err.startswith(f"error: {answers}: not UTF-8 text")
    assert not (tmp_path / "out").exists()


# ---- a run folder's damaged JSONL: a typed one-line error; a torn last line stays tolerated ------------------


def test_damaged_middle_row_is_typed_and_a_torn_tail_is_not(tmp_path: Path) -> None:
    rows = tmp_path / "answers.jsonl"
    rows.write_text('{"a": 1}\n{"a": 2, "b\n{"a": 3}\n')
    with pytest.raises(DamagedFileError) as info:
        list(read_jsonl(rows))
    assert info.value.path == rows and info.value.line == 2 and "\n" not in str(info.value)
    rows.write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(DamagedFileError, match="line 2"):
        list(read_jsonl(rows))
    rows.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(DamagedFileError, match="not UTF-8"):
        list(read_jsonl(rows))
    rows.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b')  # a write cut short by a kill: tolerated
    assert list(read_jsonl(rows)) == [{"a": 1}, {"a": 2}]


@pytest.mark.slow
def test_every_command_reports_a_damaged_run_file_inone_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with StandinServer(api_key=TEST_KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        args = ["run", "+exp=full_context", f"dataset.path={LOCOMO_MINI}", "dataset.conversations=[mini-1]",
                "eval.max_questions=3", "judge.runs=1", f"hydra.run.dir={run}", *FAST]  # fmt: skip
        first = run_cli(args, env)
        assert first.returncode == 0, first.stderr[-3000:]
        for name in ("answers.jsonl", "judgements.jsonl"):
            path = run / name
            good = path.read_text()
            lines = good.split("\n")
            lines[0] = lines[0][:20]  # the first of three rows cut: damage, not a torn tail
            path.write_text("\n".join(lines))
            for command in (args, ["status", str(run)], ["judge", str(run)]):
                result = run_cli(command, env)
                assert result.returncode == 2, (name, command[0], result.stderr[-3000:])
                assert "Traceback" not in result.stderr
                last = result.stderr.strip().splitlines()
                assert len(last) == 1 and f"{path}: line 1 is damaged" in last[0], (name, command[0], last)
            assert json.loads((run / "run.json").read_text())["status"] == "failed"  # not left 'running'
            path.write_text(good)
        again = run_cli(args, env)
        assert again.returncode == 0, again.stderr[-3000:]


@pytest.mark.parametrize(("value", "problem"), [('"x\\ud800"', "lone surrogate"), ("NaN", "NaN or Infinity")])
def test_import_refuses_a_surrogate_or_nan_before_making_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, problem: str
) -> None:
    questions = json.loads(LOCOMO_MINI.read_text())[0]["qa"]
    records = [
        {"conversation": "mini-1", "question": q["question"], "prediction": "P"} for q in questions[:3]
    ]
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(records).replace('"P"', value, 1))
    code = import_main([str(answers), "--out", str(tmp_path / "out"), "--dataset", str(LOCOMO_MINI)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0, err
    assert err.startswith(f"error: {answers}: [0].prediction: ") and problem in err
    assert not (tmp_path / "out").exists()


def test_the_value_check_names_keys_and_needs_no_stack() -> None:
    from mem0bench.data.errors import check_values

    with pytest.raises(DatasetError) as info:
        check_values({"ok": [1, 2.5, "fine"], "bad\ud800key": 1}, file="f.json", sample="s")
    assert str(info.value).startswith("f.json: sample s: ['bad\\ud800key']: a key holds a lone surrogate")
    deep: Any = float("inf")
    for _ in range(100_000):  # far past the interpreter's recursion limit
        deep = [deep]
    with pytest.raises(DatasetError, match="NaN or Infinity"):
        check_values(deep, file="f.json")
    check_values({"a": [{"b": "plain", "c": None, "d": True, "e": 3}]}, file="f.json")
