from __future__ import annotations

import json

import pytest

from mem0bench.common.jsonl import read_jsonl
from mem0bench.rundir.directory import JsonlAppender, RunDirectory, write_json


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


def test_find_run_dirs_takes_what_status_and_report_each_took(tmp_path):
    """One rule for every reader: a folder with run.json, config.yaml or metrics.json is a run (a job
    that stopped before metrics.json, a finished run, a results folder with metrics.json only); what is
    inside a run (state/, judges/<name>/) is not another run; sweeps come in natural order."""
    from mem0bench.rundir.find import find_run_dirs

    sweep = tmp_path / "sweep"
    for job, marker in [(10, "metrics.json"), (2, "run.json"), (1, "config.yaml"), (0, "metrics.json")]:
        (sweep / str(job)).mkdir(parents=True)
        (sweep / str(job) / marker).write_text("{}")
    (sweep / "0" / "judges" / "gpt-4o").mkdir(parents=True)
    (sweep / "0" / "judges" / "gpt-4o" / "metrics.json").write_text("{}")
    (sweep / "0" / "state" / "conv").mkdir(parents=True)
    (sweep / "0" / "state" / "conv" / "config.yaml").write_text("{}")
    (sweep / "notes").mkdir()
    assert find_run_dirs(sweep) == [sweep / "0", sweep / "1", sweep / "2", sweep / "10"]
    assert find_run_dirs(sweep / "2") == [sweep / "2"]
    assert find_run_dirs(sweep / "10" / "metrics.json") == [sweep / "10"]
    assert find_run_dirs(sweep / "notes") == []
    assert find_run_dirs(sweep / "0" / "run.json") == []
