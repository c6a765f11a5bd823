"""Usage is never lost (issue 32, item 7): every paid reply is in usage.jsonl as it comes, so a process
killed in the middle of an ingestion (which saves usage.json only once its conversation is done) has its
spend in the next command's totals and in `status`."""

from __future__ import annotations

import json
import time

import pytest

from devtools.e2e import TEST_KEY
from devtools.reliability import (
    Gate,
    env_for,
    finish_cli,
    kill,
    paid,
    run_args,
    small_sample,
    start_cli,
    wait_for,
)
from devtools.standin.server import StandinServer
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.usage import read_usage_sessions
from mem0bench.status.reader import read_status


def _paid_calls(session: dict) -> int:
    total = session.get("total") or {}
    return int(total.get("calls", 0)) - int(total.get("cached_calls", 0))


@pytest.mark.slow
def test_a_process_killed_mid_ingest_keeps_its_spend(tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, questions=2)
    run_dir = tmp_path / "run"
    args = run_args(
        "mem0", dataset, run_dir, "judge.runs=1", "llm.price_any_server=true", "llm.max_concurrency=4"
    )
    with StandinServer(api_key=TEST_KEY, latency_ms=10) as server:
        env = env_for(server, tmp_path / "cache")
        # Frozen at the 40th ingestion request (held, never answered), then killed: every 200 the
        # stand-in sent before has reached the process.
        gate = Gate(lambda stage, n: stage == "ingest" and n == 40)
        server.set_handler(gate)
        proc = start_cli(args, env)
        try:
            wait_for(gate.tripped.is_set, proc)
            time.sleep(0.5)
            kill(proc)
        finally:
            gate.released.set()
            server.set_handler(None)
        bought = paid(server)
        assert bought >= 39 and not (run_dir / "ingest.jsonl").exists()

        # The next command sees the killed process's spend: `status`, and the rerun's usage.json.
        sessions = read_usage_sessions(RunDirectory(run_dir))
        assert [_paid_calls(s) for s in sessions] == [bought], sessions
        assert sessions[0]["cost_usd"] > 0
        assert read_status(run_dir).spent_usd == pytest.approx(sessions[0]["cost_usd"], abs=1e-6)

        resumed = finish_cli(start_cli(args, env))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        total = paid(server)
    saved = json.loads((run_dir / "usage.json").read_text())["sessions"]
    assert len(saved) == 2 and _paid_calls(saved[0]) == bought
    assert sum(_paid_calls(s) for s in saved) == total  # every request the stand-in answered, once
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["cost_usd"] == pytest.approx(sum(s["cost_usd"] for s in saved), abs=1e-6)


def test_usage_json_is_completed_from_the_journal_and_nothing_is_counted_twice(tmp_path):
    from mem0bench.llm.ledger import UsageLedger
    from mem0bench.llm.types import Usage
    from mem0bench.rundir.usage import UsageFile

    rundir = RunDirectory(tmp_path / "run")
    ledger = UsageLedger({"m": {"prompt": 1.0, "completion": 2.0}})
    ledger.record("preflight", "m", Usage(prompt_tokens=10, completion_tokens=1), cached=False)  # before
    usage = UsageFile(rundir, "a1", ledger, earlier=[])
    ledger.record("ingest", "m", Usage(prompt_tokens=100, completion_tokens=10), cached=False)
    ledger.record("ingest", "m", Usage(prompt_tokens=100, completion_tokens=10), cached=True)  # free
    usage.save()
    ledger.record("ingest", "m", Usage(prompt_tokens=200, completion_tokens=20), cached=False)  # then killed
    with open(rundir.file("usage.jsonl"), "a") as f:
        f.write('{"session": "a1", "stage": "ingest", "pro')  # a row torn by the kill
    rundir.close()

    (entry,) = read_usage_sessions(RunDirectory(tmp_path / "run"))
    assert entry["journal_rows"] == 3 and entry["rebuilt_from"] == "usage.jsonl"
    assert _paid_calls(entry) == 3 and entry["stages"]["ingest"]["calls"] == 3  # 2 paid + 1 cached
    assert entry["stages"]["ingest"]["paid_prompt_tokens"] == 300
    assert entry["cost_usd"] == pytest.approx((10 + 2 * 1 + 300 + 2 * 30) / 1e6)
    # A later process's usage.json holds the rebuilt entry: read again, nothing is added twice.
    later = RunDirectory(tmp_path / "run")
    UsageFile(later, "a2", UsageLedger(), earlier=read_usage_sessions(later)).save()
    again = read_usage_sessions(RunDirectory(tmp_path / "run"))
    assert [_paid_calls(s) for s in again] == [3, 0] and again[0]["cost_usd"] == entry["cost_usd"]
