"""A full disk while a run writes its files (issue 32, item 5): one line naming the file and the reason,
exit 1, run.json `stopped` (not `running`), and nothing paid lost: the same command later finishes the
run without buying again what was bought before the disk filled."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from devtools.e2e import TEST_KEY
from devtools.reliability import StageCount, small_sample
from devtools.standin.server import StandinServer
from mem0bench.cli.config import plain
from mem0bench.cli.errors import report_errors
from mem0bench.paths import CONFIG_DIR
from mem0bench.pipeline.experiment import main_from_config
from mem0bench.rundir import directory
from mem0bench.rundir.storage import describe, storage_error_in

QUESTIONS = 4


class _DiskFillsUp:
    """Stands in for the `os` module of the run's appenders: once the second answer row has gone out,
    every write fails like a full disk does (ENOSPC, and os.write names no file)."""

    def __init__(self, code: int) -> None:
        self.code = code
        self.paths: dict[int, Path] = {}
        self.answers = 0
        self.full = False

    def __getattr__(self, name: str):
        return getattr(os, name)

    def open(self, path, flags, mode=0o777):
        fd = os.open(path, flags, mode)
        self.paths[fd] = Path(path)
        return fd

    def write(self, fd, data):
        if self.full:
            raise OSError(self.code, os.strerror(self.code))
        if self.paths.get(fd, Path()).name == "answers.jsonl":
            self.answers += 1
            self.full = self.answers > 2
            if self.full:
                raise OSError(self.code, os.strerror(self.code))
        return os.write(fd, data)


def _run(dataset: Path, run_dir: Path) -> int:
    overrides = [
        "+exp=rag", f"dataset.path={dataset}", "judge.runs=1", "run.progress=false", "llm.max_concurrency=1",
        "llm.backoff_base_s=0.01", "llm.backoff_max_s=0.05", "llm.timeout_s=5",
    ]  # fmt: skip
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="run", overrides=overrides)
    return report_errors(lambda: main_from_config(plain(cfg), run_dir))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS])
def test_a_full_disk_stops_the_run_in_one_line_and_loses_nothing_paid(
    code, tmp_path, locomo_mini, monkeypatch, capsys
):
    dataset = small_sample(tmp_path, locomo_mini, questions=QUESTIONS)
    run_dir = tmp_path / "run"
    stages = StageCount()
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(stages)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("MEM0BENCH_CACHE_DIR", str(tmp_path / "cache"))
        disk = _DiskFillsUp(code)
        with monkeypatch.context() as full:
            full.setattr(directory, "os", disk)
            assert _run(dataset, run_dir) == 1
        assert disk.full
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err and "bug" not in err, err
        assert f"{run_dir / 'answers.jsonl'}: {os.strerror(code).lower()}" in lines[0], lines[0]
        assert "rerun the same command" in lines[0]
        manifest = json.loads((run_dir / "run.json").read_text())
        assert manifest["status"] == "stopped" and os.strerror(code).lower() in manifest["reason"]

        # Room again: the same command finishes, and what was bought before is not bought again.
        assert _run(dataset, run_dir) == 0, capsys.readouterr().err
    # Each answer bought once: those whose rows were written and the one whose row the disk refused (its
    # reply is in the response cache). The one request in flight when the run stopped (llm.max_concurrency
    # is 1) was cancelled before its reply came, and is asked again.
    assert QUESTIONS <= stages.seen["answer"] <= QUESTIONS + 1, stages.seen
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"


def test_the_storage_error_is_found_under_what_wraps_it(tmp_path):
    disk = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "state" / "x.npy"))
    try:
        try:
            raise disk
        except OSError as exc:
            raise RuntimeError("a system's crash") from exc
    except RuntimeError as crash:
        group = ExceptionGroup("tasks", [ValueError("other"), crash])
    assert storage_error_in(group) is disk
    assert storage_error_in(ValueError("x")) is None
    assert str(tmp_path / "state" / "x.npy") in describe(disk, tmp_path)
