"""Bad dataset files, failed downloads and the `data` command: one clear line naming file, sample, field."""

from __future__ import annotations

import copy
import hashlib
import http.server
import json
import pickle
import shutil
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from mem0bench.cli.data import data_main
from mem0bench.data import (
    LOCOMO_SHA256,
    DatasetError,
    download_locomo,
    load_dataset,
    resolve_dataset_path,
)

GOOD_SAMPLE: dict[str, Any] = {
    "sample_id": "conv-1",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Hello"},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Hi", "blip_caption": "a photo of a cat"},
        ],
        "session_2_date_time": "10:00 am on 9 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Again"}],
        "session_3_date_time": "11:00 am on 10 May, 2023",
        "session_3": [{"speaker": "Bob", "dia_id": f"D3:{j + 1}", "text": f"t{j}"} for j in range(6)],
    },
    "qa": [{"question": f"Q{i}?", "answer": f"A{i}", "category": 4, "evidence": ["D1:1"]} for i in range(14)],
    "event_summary": {},
}


def write(tmp_path: Path, data: Any, name: str = "locomo10.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def samples(n: int = 2) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        s = copy.deepcopy(GOOD_SAMPLE)
        s["sample_id"] = f"conv-{i + 1}"
        out.append(s)
    return out


def load_error(path: Path, **kwargs: Any) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        load_dataset(path, **kwargs)
    err = info.value
    assert "\n" not in str(err)
    assert path.name in str(err) and err.file == str(path)
    return err


def test_good_fixture_loads(tmp_path: Path) -> None:
    ds = load_dataset(write(tmp_path, samples()))
    assert [c.sample_id for c in ds.conversations] == ["conv-1", "conv-2"]
    assert ds.sha256 == hashlib.sha256((tmp_path / "locomo10.json").read_bytes()).hexdigest()


def test_error_str_format() -> None:
    err = DatasetError(
        "missing field 'question'", file="locomo10.json", sample="conv-26", field="qa[12].question"
    )
    assert str(err) == "locomo10.json: sample conv-26: qa[12].question: missing field 'question'"
    assert str(DatasetError("bad", file="f.json", sample=3)) == "f.json: sample #3: bad"
    assert str(DatasetError("two\nlines")) == "two lines"
    again = pickle.loads(pickle.dumps(err))
    assert (again.file, again.sample, again.field, again.message) == (
        err.file,
        err.sample,
        err.field,
        err.message,
    )


def test_truncated_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, samples())
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    err = load_error(path)
    assert "invalid JSON" in str(err) and "line " in str(err) and "column " in str(err)
    assert "truncated" in err.message
    assert err.sample is None


def test_not_a_list_and_sample_not_an_object(tmp_path: Path) -> None:
    err = load_error(write(tmp_path, {"sample_id": "conv-1"}))
    assert "list" in err.message
    err = load_error(write(tmp_path, [samples(1)[0], "oops"]))
    assert err.sample == 1 and "sample #1" in str(err) and "object" in err.message


def test_missing_sample_id_names_the_index(tmp_path: Path) -> None:
    data = samples()
    del data[1]["sample_id"]
    err = load_error(write(tmp_path, data))
    assert err.sample == 1 and err.field == "sample_id" and "sample #1" in str(err)


def test_question_without_question(tmp_path: Path) -> None:
    data = samples()
    del data[1]["qa"][12]["question"]
    err = load_error(write(tmp_path, data))
    assert err.sample == "conv-2" and err.field == "qa[12].question"
    assert (
        str(err) == f"{tmp_path / 'locomo10.json'}: sample conv-2: qa[12].question: missing field 'question'"
    )


def test_turn_without_text(tmp_path: Path) -> None:
    data = samples()
    del data[0]["conversation"]["session_3"][4]["text"]
    err = load_error(write(tmp_path, data))
    assert err.sample == "conv-1" and err.field == "conversation.session_3[4].text"
    assert "sample conv-1" in str(err) and "conversation.session_3[4].text" in str(err)


def test_unknown_category(tmp_path: Path) -> None:
    data = samples()
    data[1]["qa"][3]["category"] = 7
    err = load_error(write(tmp_path, data))
    assert err.sample == "conv-2" and err.field == "qa[3].category"
    assert "sample conv-2" in str(err) and "qa[3].category" in str(err) and "7" in err.message


def test_missing_answer_for_categories_1_to_4(tmp_path: Path) -> None:
    data = samples()
    del data[0]["qa"][5]["answer"]
    err = load_error(write(tmp_path, data))
    assert err.sample == "conv-1" and err.field == "qa[5].answer"


def test_unknown_conversation_id_lists_valid_ones(tmp_path: Path) -> None:
    err = load_error(write(tmp_path, samples()), conversations=["conv-1", "conv-99"])
    assert "conv-99" in str(err) and "valid: conv-1, conv-2" in str(err)
    assert "unknown conversation" in err.message


def test_bad_date(tmp_path: Path) -> None:
    data = samples()
    data[1]["conversation"]["session_2_date_time"] = "sometime in May"
    err = load_error(write(tmp_path, data))
    assert err.sample == "conv-2" and err.field == "conversation.session_2_date_time"
    assert "sample conv-2" in str(err) and "session_2_date_time" in str(err) and "sometime in May" in str(err)


def test_missing_date_for_a_session_with_turns(tmp_path: Path) -> None:
    data = samples()
    del data[0]["conversation"]["session_1_date_time"]
    err = load_error(write(tmp_path, data))
    assert err.sample == "conv-1" and err.field == "conversation.session_1_date_time"


def test_missing_file(tmp_path: Path) -> None:
    err = load_error(tmp_path / "absent.json")
    assert "not found" in err.message


# ---------------------------------------------------------------- download


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loopback HTTP server over a folder: (base url, folder)."""
    root = tmp_path / "served"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def test_download_offline_says_to_pass_a_path(tmp_path: Path) -> None:
    dest = tmp_path / "data"
    with pytest.raises(DatasetError) as info:
        download_locomo(dest, url="http://127.0.0.1:9/locomo10.json", timeout=5)
    msg = str(info.value)
    assert "download failed" in msg and "dataset.path=FILE" in msg and "\n" not in msg
    assert not dest.exists()  # nothing left behind


def test_download_hash_mismatch_names_both_hashes(tmp_path: Path, served: tuple[str, Path]) -> None:
    url, root = served
    payload = b"[]"
    (root / "locomo10.json").write_bytes(payload)
    dest = tmp_path / "data"
    with pytest.raises(DatasetError) as info:
        download_locomo(dest, url=f"{url}/locomo10.json")
    msg = str(info.value)
    assert LOCOMO_SHA256 in msg and hashlib.sha256(payload).hexdigest() in msg
    assert not (dest / "locomo10.json").exists()
    assert not any(dest.glob("*")) if dest.exists() else True


def test_download_then_no_op(tmp_path: Path, served: tuple[str, Path], locomo_path: Path) -> None:
    url, root = served
    shutil.copy(locomo_path, root / "locomo10.json")
    dest_dir = tmp_path / "data"
    got = download_locomo(dest_dir, url=f"{url}/locomo10.json")
    assert got == dest_dir / "locomo10.json"
    assert hashlib.sha256(got.read_bytes()).hexdigest() == LOCOMO_SHA256
    assert sorted(p.name for p in dest_dir.iterdir()) == ["locomo10.json"]  # no temp file left
    # present with the right hash: the (now unreachable) URL is not contacted
    assert download_locomo(dest_dir, url="http://127.0.0.1:9/locomo10.json", timeout=5) == got


def test_resolve_dataset_path(tmp_path: Path, locomo_path: Path) -> None:
    given = write(tmp_path, samples(), name="mine.json")
    assert resolve_dataset_path(str(given), tmp_path / "unused") == given
    with pytest.raises(DatasetError, match="absent.json: file not found"):
        resolve_dataset_path(str(tmp_path / "absent.json"), tmp_path)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copy(locomo_path, data_dir / "locomo10.json")
    assert resolve_dataset_path(None, data_dir) == data_dir / "locomo10.json"


# ---------------------------------------------------------------- the `data` command


def test_cli_stats_json_on_real_file(locomo_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert data_main(["stats", "--path", str(locomo_path), "--json"]) == 0
    out, err = capsys.readouterr()
    stats = json.loads(out)
    assert (stats["conversations"], stats["sessions"], stats["turns"], stats["questions"]) == (
        10,
        272,
        5882,
        1986,
    )
    assert stats["categories"]["single_hop"] == 841 and stats["sha256"] == LOCOMO_SHA256
    assert err == ""


def test_cli_stats_table_from_default_data_dir(
    tmp_path: Path, locomo_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "data").mkdir()
    shutil.copy(locomo_path, tmp_path / "data" / "locomo10.json")
    monkeypatch.setenv("MEM0BENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path / "data")  # the folder the command runs from does not matter
    assert data_main(["stats"]) == 0
    out = capsys.readouterr().out
    assert "adversarial" in out and "1,986" in out


def test_cli_bad_file_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = samples()
    del data[0]["conversation"]["session_3"][4]["text"]
    path = write(tmp_path, data, name="broken.json")
    assert data_main(["stats", "--path", str(path), "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "broken.json" in err and "conv-1" in err and "conversation.session_3[4].text" in err
    assert "Traceback" not in err


def test_cli_download_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def offline(url: str, timeout: float) -> Any:
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    assert data_main(["download", "--dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "dataset.path=FILE" in err
    assert "Traceback" not in err


def test_cli_usage_error_returns_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert data_main(["frobnicate"]) == 2
    assert "usage: mem0bench data" in capsys.readouterr().err
