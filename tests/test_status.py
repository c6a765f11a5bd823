"""`mem0bench status`: what a person reads about a run that was killed, is still going, or is a sweep."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from devtools.e2e import REPO, TEST_KEY, cli_env, run_cli
from devtools.reliability import Gate, kill, run_args, small_sample, start_cli, wait_for
from devtools.standin.server import StandinServer
from mem0bench.rundir.heartbeat import HEARTBEAT_FILE, HeartbeatInfo, _masked, liveness
from tests.pty_cli import run_in_pty, screen_lines

pytestmark = pytest.mark.slow

QUESTIONS = 4


def _status(path, env) -> tuple[int, list[str]]:
    code, text = run_in_pty(["status", str(path)], env, timeout=120)
    return code, screen_lines(text)


def _line(lines: list[str], label: str) -> str:
    return next(line for line in lines if line.strip().startswith(label))


def test_status_of_a_run_killed_mid_ingest_names_what_is_left_and_resumes_it(tmp_path, locomo_mini):
    data = small_sample(tmp_path, locomo_mini, sessions=2, questions=QUESTIONS)
    run_dir = tmp_path / "run"
    args = run_args("mem0", data, run_dir, "judge.runs=2", "llm.price_any_server=true")
    gate = Gate(lambda stage, n: stage == "ingest" and n == 20)  # frozen mid-ingest, then killed
    with StandinServer(api_key=TEST_KEY, latency_ms=5) as server:
        server.set_handler(gate)
        env = cli_env(server.base_url, tmp_path / "cache")
        proc = start_cli(args, env)
        try:
            # Some pairs done, the conversation not, and a heartbeat (every 5 s) that carries the counters.
            wait_for(lambda: gate.tripped.is_set() and _beat_with_progress(run_dir), proc)
        finally:
            gate.released.set()
            kill(proc)
        server.set_handler(None)
        assert not (run_dir / "ingest.jsonl").exists()

        code, lines = _status(run_dir, env)
        assert code == 0, lines
        text = "\n".join(lines)
        assert "Traceback" not in text
        assert lines[0].startswith(f"{run_dir}  mem0  (run.json status: running)")
        assert re.search(rf"process\s+no process: pid {proc.pid} stopped without exiting cleanly", text)
        ingest = _line(lines, "ingest")
        assert "0/1 conversations, 1 left: mini-1" in ingest
        assert re.search(r"last heartbeat: \d+/\d+ pairs", ingest), ingest
        assert f"0/{QUESTIONS} questions, {QUESTIONS} left" in _line(lines, "answer")
        assert f"0/{2 * QUESTIONS} labels (2 judge runs), {2 * QUESTIONS} left" in _line(lines, "judge")
        # usage.json is saved after finished rows only; what the killed process paid is in its heartbeat.
        paid_usd = float(re.search(r"paid\s+\$(\d+\.\d{4}) over 1 process", text)[1])
        assert paid_usd > 0
        assert re.search(r"left\s+about [\d,]+ LLM calls, \$\d+\.\d{4} \(dry-run estimate", text)
        resume = _line(lines, "resume").split("resume", 1)[1].strip()
        assert resume.startswith(f"cd {REPO} && python -m mem0bench run +exp=mem0 ")
        assert resume.endswith(f"hydra.run.dir={run_dir.resolve()}")

        # The printed command, run as printed, finishes the run in the same folder.
        done = subprocess.run(resume, shell=True, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert len((run_dir / "predictions.jsonl").read_text().splitlines()) == QUESTIONS

        code, lines = _status(run_dir, env)
        text = "\n".join(lines)
        assert "(run.json status: complete)" in lines[0]
        assert "1/1 conversations, done" in text and f"{QUESTIONS}/{QUESTIONS} questions, done" in text
        assert "failures  none open" in text and "resume    nothing left to do" in text
        assert "exited at" in _line(lines, "process")
        # What the killed process paid is still counted (its heartbeat's figure went into usage.json).
        total_usd = float(re.search(r"paid\s+\$(\d+\.\d{4}) over 2 processes", text)[1])
        assert total_usd >= paid_usd

        # A sweep folder: one block per job and the sweep's own resume command.
        sweep = tmp_path / "sweep"
        shutil.copytree(run_dir, sweep / "0")
        shutil.copytree(run_dir, sweep / "1")
        manifest = json.loads((sweep / "1" / "run.json").read_text())
        manifest.update(status="running", command=["mem0bench", "-m", "+exp=mem0", "method.top_k=10,30"])
        (sweep / "1" / "run.json").write_text(json.dumps(manifest))
        (sweep / "1" / "judgements.jsonl").write_text("")
        code, lines = _status(sweep, env)
        text = "\n".join(lines)
        assert code == 0 and lines[0].startswith("0  mem0  (run.json status: complete)")
        assert any(line.startswith("1  mem0  (run.json status: running)") for line in lines)
        assert f"0/{2 * QUESTIONS} labels" in text
        assert f"sweep {sweep}: 2 runs, 1 complete, 0 with a process working on it" in text
        assert (
            f"resume the whole sweep: cd {REPO} && python -m mem0bench run -m +exp=mem0 "
            f"method.top_k=10,30 hydra.sweep.dir={sweep.resolve()}" in text
        )


def _beat_with_progress(run_dir) -> bool:
    try:
        beat = json.loads((run_dir / HEARTBEAT_FILE).read_text())
    except (OSError, ValueError):
        return False
    return beat.get("progress", {}).get("done", {}).get("ingest", 0) > 0


def test_status_of_a_run_still_going_says_a_process_works_on_it(tmp_path, locomo_mini):
    data = small_sample(tmp_path, locomo_mini, sessions=1, questions=QUESTIONS)
    run_dir = tmp_path / "run"
    gate = Gate(lambda stage, n: stage == "judge" and n == 3)  # frozen mid-judge
    with StandinServer(api_key=TEST_KEY, latency_ms=5) as server:
        server.set_handler(gate)
        env = cli_env(server.base_url, tmp_path / "cache")
        proc = start_cli(run_args("rag", data, run_dir, "judge.runs=2", "llm.max_concurrency=1"), env)
        try:
            wait_for(gate.tripped.is_set, proc)
            code, lines = _status(run_dir, env)
        finally:
            gate.released.set()
            kill(proc)
    text = "\n".join(lines)
    assert code == 0, text
    assert re.search(rf"process\s+pid {proc.pid} on this host is working on it", text)
    assert "1/1 conversations, done" in _line(lines, "ingest")
    assert "2/8 labels (2 judge runs), 6 left" in _line(lines, "judge")
    assert "a process is working on it; if it stops: cd " in _line(lines, "resume")


def test_status_of_a_folder_that_is_not_a_run_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    for target in (tmp_path / "empty", tmp_path / "missing"):
        result = run_cli(["status", str(target)], cli_env("http://127.0.0.1:9/v1", tmp_path / "c"))
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"error: {target}")


def test_status_of_damaged_or_partial_folders_never_shows_a_traceback(tmp_path):
    env = cli_env("http://127.0.0.1:9/v1", tmp_path / "c")
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "config.yaml").write_text("method:\n  name: mem0\n")  # a config cut short
    result = run_cli(["status", str(partial)], env)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "left      no estimate:" in result.stdout and "ingest    0/? conversations" in result.stdout
    as_json = json.loads(run_cli(["status", str(partial), "--json"], env).stdout)
    assert as_json["method"] == "mem0" and as_json["stages"][0] == {
        "stage": "ingest", "done": 0, "total": None, "unit": "conversations", "left": [],
    }  # fmt: skip
    assert as_json["finished"] is False and as_json["left"] is None

    damaged = tmp_path / "damaged"
    shutil.copytree(partial, damaged)
    (damaged / "failures.jsonl").write_text('{"stage": "answer"\n{}\n')
    result = run_cli(["status", str(damaged)], env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: {damaged}: ") and "failures.jsonl: line 1" in result.stderr


def _beat(**changes) -> HeartbeatInfo:
    now = datetime.now(UTC)
    info = HeartbeatInfo(
        pid=os.getpid(), host=socket.gethostname(), session="s", cwd="/w", overrides=[],
        started=now.isoformat(), updated=now.isoformat(),
    )  # fmt: skip
    return replace(info, **changes)


def test_liveness_from_a_heartbeat():
    old = (datetime.now(UTC) - timedelta(minutes=10)).isoformat()
    # A pid reused by another program is not the run.
    other = subprocess.Popen(["sleep", "30"])
    try:
        assert liveness(_beat(pid=other.pid)).working is False
    finally:
        other.kill()
        other.wait()
    assert liveness(_beat(ended="2026-12-01T10:00:00+00:00")).working is False
    assert liveness(_beat(host="node-17")).working is True  # another host, recent beat
    far = liveness(_beat(host="node-17", updated=old))
    assert far.working is None and "probably stopped" in far.detail and "10m ago" in far.detail
    assert liveness(None).working is None


def test_heartbeat_overrides_never_hold_a_key():
    assert _masked("+judge.api_key=sk-123") == "+judge.api_key=***"
    assert _masked("llm.api_key_env=MY_KEY_VAR") == "llm.api_key_env=MY_KEY_VAR"
    assert _masked("method.top_k=30") == "method.top_k=30"


def test_the_estimate_left_counts_the_isolated_latency_pass(tmp_path, locomo_mini):
    """The dry-run plan prices the isolated pass's live search calls (its `latency` lines); status counts
    them as left until the pass's rows stand, and as done once they do."""
    from mem0bench.status.reader import read_status

    data = small_sample(tmp_path, locomo_mini, sessions=1, questions=3)
    run_dir = tmp_path / "run"
    with StandinServer(api_key=TEST_KEY) as server:
        result = run_cli(
            run_args("rag", data, run_dir, "judge.runs=1"), cli_env(server.base_url, tmp_path / "c")
        )
    assert result.returncode == 0, result.stderr[-3000:]
    done = read_status(run_dir).left
    assert done is not None and done.calls == pytest.approx(0.0)
    (run_dir / "latency.jsonl").unlink()  # as if killed after judging, before the pass
    left = read_status(run_dir).left
    # rag's search is one query embedding a question: the pass would embed each of the 3 questions again.
    assert left is not None and left.calls == pytest.approx(3.0)
