"""Crash safety, tested by killing real runs (SIGKILL) and running the same command again.

For each method (mem0, rag) one run is killed four times, at four points, and resumed after each kill:

1. during ingestion of the conversation (for mem0 twice: mid-stream, and when one speaker's stream has
   finished and the other has not);
2. during answering (some answers written, not all);
3. during judging (some judgements written, not all);
4. right after the last judge reply reached the process, i.e. while it appends the last judgement and
   writes predictions.jsonl, metrics.json, usage.json and run.json (where exactly the kill lands varies);
   a half-written temporary file of the final writes is planted before the resume as well.

The fifth process finishes the run. It must then hold every question exactly once in predictions.jsonl and
the same metrics as an uninterrupted run of the same command against a stand-in that gives the same
replies, and the stand-in must not have been paid twice for any call that had completed.

How the kill points are reached, from outside the process:

* Points 2 and 3 (and 1 for rag) use a `Gate`: a stand-in handler that, at the n-th request of a stage,
  holds that request and every later one; the test then kills the frozen process and the held requests are
  answered with a connection reset. A held request is never answered with a 200, so it is never paid.
* Point 1 for mem0 and point 4 are free-running kills: the process is busy (mem0 ingestion: when the
  stand-in has served a number of requests; point 4: a few ms after the last judge reply was sent), so the
  kill can land anywhere, mid-write included.

Paid requests (HTTP 200 chat + embeddings) over the five processes versus the uninterrupted run:

* never fewer: the replies are deterministic (a hash of the request), so every request the uninterrupted
  run needed is needed again, and is either in the cache or sent;
* at most `llm.max_concurrency` more per free-running kill, none per gated kill. Proof: a reply is written
  to the cache (SQLite, committed per put) before any `await` after the HTTP response is read, so a request
  that was answered but whose reply is not in the cache holds a concurrency slot at the moment of the kill,
  or has just released it in the same event-loop step (then no other request has taken that slot yet).
  At most `max_concurrency` requests are in that state; only those can be paid for again after a kill.

What metrics.json is compared on: everything except `latency_s` (wall-clock times, which differ between
any two runs) and `cost_usd` (what was actually paid: a killed process that never saved its usage leaves
its cost unrecorded, and requests in flight at a kill are paid without being used). Token counts in
`tokens.llm` are what the results needed, cached replies included, so they must match exactly.
predictions.jsonl rows are compared without their latency fields and `cached` (whether a reply came from
the cache depends on where the kill fell, like the latencies it qualifies).
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from devtools.e2e import TEST_KEY, read_jsonl
from devtools.reliability import (
    Gate,
    env_for,
    finish_cli,
    kill,
    lines,
    paid,
    run_args,
    small_sample,
    start_cli,
    wait_for,
)
from devtools.standin.server import StandinServer
from mem0bench.common.jsonl import read_jsonl as read_jsonl_rows
from mem0bench.rundir.directory import JsonlAppender, RunDirectory

QUESTIONS = 6
RUNS = 3
CONCURRENCY = 4
LATENCY_MS = 20
TIME_FIELDS = ("search_latency_s", "total_latency_s", "local_search_s", "answer_server_s", "cached")


def _comparable_metrics(run_dir: Path) -> dict:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics.pop("latency_s")
    metrics.pop("latency_isolated_s", None)
    metrics.pop("cost_usd")
    # Like cost_usd, the sampling record comes from usage.json, whose last entry a killed process may not
    # have saved: usage, not results.
    metrics.pop("sampling", None)
    return metrics


def _comparable_predictions(run_dir: Path) -> list[dict]:
    return [
        {k: v for k, v in row.items() if k not in TIME_FIELDS}
        for row in read_jsonl(run_dir / "predictions.jsonl")
    ]


def _uninterrupted(exp: str, dataset: Path, tmp: Path) -> tuple[Path, int]:
    with StandinServer(api_key=TEST_KEY, latency_ms=LATENCY_MS) as server:
        run_dir = tmp / "reference"
        result = finish_cli(start_cli(_args(exp, dataset, run_dir), env_for(server, tmp / "cache-reference")))
        assert result.returncode == 0, result.stderr[-3000:]
        return run_dir, paid(server)


def _args(exp: str, dataset: Path, run_dir: Path) -> list[str]:
    return run_args(
        exp, dataset, run_dir, f"eval.max_questions={QUESTIONS}", f"judge.runs={RUNS}",
        f"llm.max_concurrency={CONCURRENCY}",
    )  # fmt: skip


def _gated_kill(server, args, env, trigger, settle_s: float = 0.3) -> None:
    gate = Gate(trigger)
    server.set_handler(gate)
    proc = start_cli(args, env)
    try:
        wait_for(gate.tripped.is_set, proc)
        time.sleep(settle_s)  # replies already on their way arrive and their rows are written
        kill(proc)
    finally:
        gate.released.set()
        server.set_handler(None)


def _killed_and_resumed(exp: str, dataset: Path, tmp: Path) -> tuple[Path, int, int, list[str]]:
    """The run killed at the four points and resumed; -> (run dir, paid requests, free kills, notes)."""
    run_dir = tmp / "killed"
    total = QUESTIONS * RUNS
    notes: list[str] = []
    free_kills = 0
    with StandinServer(api_key=TEST_KEY, latency_ms=LATENCY_MS) as server:
        env = env_for(server, tmp / "cache-killed")
        args = _args(exp, dataset, run_dir)

        # 1. During ingestion.
        if exp == "rag":  # one embedding request for all chunks: kill while it is in flight
            _gated_kill(server, args, env, lambda stage, n: stage == "ingest")
        else:  # mem0: ~160 ingestion calls; kill at the 60th, wherever the process is
            proc = start_cli(args, env)
            wait_for(lambda: paid(server) >= 60, proc)
            kill(proc)
            free_kills += 1
            assert lines(run_dir / "ingest.jsonl") == 0
            # 1b. Once one speaker's stream has finished (its done marker is on disk), the other not yet.
            state = run_dir / "state" / "mini-1"
            proc = start_cli(args, env)
            wait_for(lambda: any(state.glob("*/done.json")), proc)
            kill(proc)
            free_kills += 1
            notes.append(f"ingestion: killed with {len(list(state.glob('*/done.json')))}/2 streams finished")
        assert lines(run_dir / "ingest.jsonl") == 0 and lines(run_dir / "answers.jsonl") == 0
        assert not (run_dir / "metrics.json").exists()

        # 2. During answering: frozen at the third answer request of the resumed process.
        _gated_kill(server, args, env, lambda stage, n: stage == "answer" and n == 3)
        answered = lines(run_dir / "answers.jsonl")
        assert lines(run_dir / "ingest.jsonl") == 1 and 0 < answered < QUESTIONS, answered
        notes.append(f"answering: killed with {answered}/{QUESTIONS} answers written")

        # 3. During judging: frozen at the fourth judge request of the resumed process.
        _gated_kill(server, args, env, lambda stage, n: stage == "judge" and n == 4)
        judged = lines(run_dir / "judgements.jsonl")
        assert 0 < judged < total, judged
        notes.append(f"judging: killed with {judged}/{total} judgements written")

        # 4. Around the final writes: a few ms after the last judge reply was sent.
        remaining = total - judged
        seen = {"judge": 0}
        fired = threading.Event()

        def last_judge_reply(endpoint, body):
            from devtools.reliability import request_stage

            if request_stage(endpoint, body) == "judge":
                seen["judge"] += 1
                if seen["judge"] == remaining:
                    fired.set()
            return None

        server.set_handler(last_judge_reply)
        proc = start_cli(args, env)
        wait_for(fired.is_set, proc)
        time.sleep(0.005 if exp == "rag" else 0.02)
        kill(proc)
        server.set_handler(None)
        free_kills += 1
        landed = "after metrics.json" if (run_dir / "metrics.json").exists() else "before metrics.json"
        notes.append(
            f"final writes: killed {landed}, {lines(run_dir / 'judgements.jsonl')}/{total} judgements"
        )
        # A final file cut short by a kill in the middle of its atomic write leaves a temporary behind.
        (run_dir / ".metrics.json.x1y2z3.tmp").write_text('{"method": "half a fi')

        # 5. The same command again finishes the run.
        result = finish_cli(start_cli(args, env))
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr
        return run_dir, paid(server), free_kills, notes


@pytest.mark.slow
@pytest.mark.parametrize("exp", ["mem0", "rag"])
def test_killed_run_resumes_to_the_same_result_without_paying_twice(exp, tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini) if exp == "mem0" else locomo_mini
    with ThreadPoolExecutor(max_workers=1) as pool:  # the uninterrupted run, on its own server, meanwhile
        reference = pool.submit(_uninterrupted, exp, dataset, tmp_path)
        run_dir, paid_killed, free_kills, notes = _killed_and_resumed(exp, dataset, tmp_path)
        ref_dir, paid_reference = reference.result()
    print(f"{exp}: " + "; ".join(notes))

    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == QUESTIONS and len({r["qid"] for r in rows}) == QUESTIONS
    assert _comparable_predictions(run_dir) == _comparable_predictions(ref_dir)
    assert _comparable_metrics(run_dir) == _comparable_metrics(ref_dir)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    assert not list(run_dir.glob(".*.tmp"))

    # Nothing paid twice, except requests in flight at a free-running kill (see the module docstring).
    assert paid_reference <= paid_killed <= paid_reference + CONCURRENCY * free_kills, (
        paid_reference,
        paid_killed,
    )
    # Every question answered (with a prediction) once; every judge run labelled once.
    answers = [r for r in read_jsonl(run_dir / "answers.jsonl") if not r.get("failure")]
    assert sorted(r["qid"] for r in answers) == sorted(r["qid"] for r in rows)
    labelled = [(j["qid"], j["run"]) for j in read_jsonl(run_dir / "judgements.jsonl") if j.get("label")]
    assert len(labelled) == len(set(labelled)) == QUESTIONS * RUNS
    # The ingest row that stands accounts for the whole conversation, as in the uninterrupted run.
    ingest = read_jsonl(run_dir / "ingest.jsonl")
    assert ingest[-1]["usage"] == read_jsonl(ref_dir / "ingest.jsonl")[-1]["usage"]
    # What each process paid is on record: at least the last one's, in usage.json.
    sessions = json.loads((run_dir / "usage.json").read_text())["sessions"]
    assert sessions and all("session" in s for s in sessions)


# ---- what a kill can leave behind, in process ---------------------------------------------------------
def test_an_unterminated_last_row_is_not_read_and_is_cut_before_appending(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text('{"qid": "a"}\n{"qid": "b"}')  # "b" parses, but its newline never made it
    assert [r["qid"] for r in read_jsonl_rows(path)] == ["a"]
    appender = JsonlAppender(path)
    appender.append({"qid": "c"})
    appender.close()
    assert path.read_text() == '{"qid": "a"}\n{"qid":"c"}\n'


def test_temporaries_of_interrupted_atomic_writes_are_removed(tmp_path):
    (tmp_path / ".metrics.json.abc123.tmp").write_text('{"half": ')
    (tmp_path / "state").mkdir()
    RunDirectory(tmp_path)
    assert not list(tmp_path.glob(".*.tmp")) and (tmp_path / "state").is_dir()
