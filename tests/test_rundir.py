from __future__ import annotations

import json

import pytest

from mem0bench.common.jsonl import read_jsonl
from mem0bench.pipeline.rundir import JsonlAppender, RunDirectory, write_json


def test_torn_last_line_is_cut_and_skipped(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b"')  # a kill mid-write
    assert [r["a"] for r in read_jsonl(path)] == [1, 2]
    appender = JsonlAppender(path)
    appender.append({"a": 4})
    appender.close()
    assert [r["a"] for r in read_jsonl(path)] == [1, 2, 4]


def test_a_bad_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\nnot json\n{"a": 3}\n')
    with pytest.raises(ValueError, match="line 2"):
        list(read_jsonl(path))


def test_manifest_keeps_id_and_records_resumes(tmp_path):
    rundir = RunDirectory(tmp_path / "run")
    rundir.start(config_yaml="a: 1\n", method="mem0", dataset_path="x.json", dataset_sha256="abc")
    first = rundir.manifest()
    rundir.start(config_yaml="a: 1\n", method="mem0", dataset_path="x.json", dataset_sha256="abc")
    second = rundir.manifest()
    assert second["run_id"] == first["run_id"] and second["started"] == first["started"]
    assert len(second["resumed"]) == 1
    assert "python" in second["versions"] and second["status"] == "running"
    rundir.finish("complete")
    assert rundir.manifest()["status"] == "complete"


def test_write_json_is_whole(tmp_path):
    write_json(tmp_path / "m.json", {"x": 1})
    assert json.loads((tmp_path / "m.json").read_text()) == {"x": 1}
    assert not list(tmp_path.glob(".*.tmp"))
