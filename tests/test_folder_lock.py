"""One process per run folder: a second `run` (or `judge`) on a folder a live process owns is refused in
one line naming the owner, and a lock left by a dead process is taken over."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.e2e import REPO, TEST_KEY, cli_env, run_cli
from devtools.reliability import finish_cli, run_args, small_sample, start_cli, wait_for
from devtools.standin.server import StandinServer
from mem0bench.common.folder_lock import LOCK_NAME, FolderInUse, folder_lock, lock_owner

_HOLD = """
import sys, time
from pathlib import Path
from mem0bench.common.folder_lock import folder_lock
with folder_lock(Path(sys.argv[1]), what="the run folder", advice="wait"):
    print("locked", flush=True)
    time.sleep(600)
"""


def _holder(folder: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(folder)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_owner_is_refused_with_the_first_ones_pid_and_host(tmp_path):
    holder = _holder(tmp_path)
    try:
        with (
            pytest.raises(FolderInUse) as refused,
            folder_lock(tmp_path, what="the run folder", advice="wait"),
        ):
            pass
        message = str(refused.value)
        assert f"pid {holder.pid} on host {socket.gethostname()}" in message
        assert "\n" not in message and message.endswith(": wait")
    finally:
        holder.kill()
        holder.wait()
    # The kernel released the dead process's lock; its file (pid and all) was left behind and is taken over.
    assert (tmp_path / LOCK_NAME).exists()
    with folder_lock(tmp_path, what="the run folder", advice="wait"):
        assert lock_owner(tmp_path).startswith(f"pid {os.getpid()} ")
    assert not (tmp_path / LOCK_NAME).exists()  # released: nothing left in the folder


def test_a_lock_file_left_with_garbage_in_it_is_taken_over(tmp_path):
    (tmp_path / LOCK_NAME).write_text("not json")
    with folder_lock(tmp_path, what="the run folder", advice="wait"):
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()


def _ops_lines(run_dir: Path) -> dict[str, int]:
    return {p.name: len(p.read_text().splitlines()) for p in sorted((run_dir / "state").rglob("*.ops.jsonl"))}


@pytest.mark.slow
def test_a_second_run_on_a_live_run_folder_is_refused_and_the_first_completes(tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini)
    run_dir, reference = tmp_path / "run", tmp_path / "reference"
    extra = ("eval.max_questions=3", "judge.runs=1")
    # Slow replies: the first run is still ingesting when the second process has started.
    with StandinServer(api_key=TEST_KEY, latency_ms=400) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        first = start_cli(run_args("mem0", dataset, run_dir, *extra), env)
        try:
            wait_for(lambda: bool(lock_owner(run_dir)) and (run_dir / "state").is_dir(), first)
            second = run_cli(run_args("mem0", dataset, run_dir, *extra), env, timeout=120)
            assert first.poll() is None, "the first run ended before the second was refused: slow it down"
            done = finish_cli(first)
        finally:
            if first.poll() is None:
                os.kill(first.pid, signal.SIGKILL)
        assert done.returncode == 0, done.stderr[-3000:]
        ref = run_cli(run_args("mem0", dataset, reference, *extra), env)
        assert ref.returncode == 0, ref.stderr[-3000:]

    assert second.returncode == 2, second.stderr[-3000:]
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in second.stderr, second.stderr
    assert lines[0].startswith(f"error: the run folder {run_dir} is in use by pid {first.pid} on host ")
    assert "rerun the same command" in lines[0]
    # The first run's op logs are whole: as many operations as a run that had the folder to itself.
    assert _ops_lines(run_dir) == _ops_lines(reference) != {}
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    assert not (run_dir / LOCK_NAME).exists()

    # `judge` on a run folder another process holds (a run still writing it) is refused the same way.
    holder = _holder(run_dir)
    try:
        with StandinServer(api_key=TEST_KEY) as server:
            judged = run_cli(
                ["judge", str(run_dir)], cli_env(server.base_url, tmp_path / "cache"), timeout=120
            )
    finally:
        holder.kill()
        holder.wait()
    assert judged.returncode == 2, judged.stderr[-3000:]
    assert judged.stderr.strip() == (
        f"error: the run folder {run_dir} is in use by {lock_owner(run_dir)}: a run folder has one process "
        "at a time; wait for that one to end (`python -m mem0bench status FOLDER` shows it), then judge it"
    )
