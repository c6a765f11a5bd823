"""Faults at run level, through the real CLI against the stand-in.

* Every kind of transient fault (429 with and without Retry-After, 5xx, connection reset, client timeout,
  malformed function arguments, empty choices) on the first attempt of every distinct request: the run
  absorbs them all (retries, repairs, re-asks), fails nothing, and gives the answers of a run without
  faults.
* A request that keeps failing is retried a bounded number of times, then recorded in failures.jsonl,
  counted per stage in metrics.json and printed at the end; the run goes on. Past run.max_failure_rate the
  exit code is 1 and run.json says "failed"; the same command again retries the failed items (only them)
  and, once they succeed, nothing is counted as failed any more.
* run.strict=true: the first failure ends the run with one line and exit code 1.
* A conversation that cannot be ingested (RAG's embedding call fails for good) fails its questions, not
  the process; a Mem0 ingestion with failed extraction calls is replayed by the next run.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from devtools.e2e import TEST_KEY, read_jsonl
from devtools.reliability import (
    PAID,
    env_for,
    finish_cli,
    paid,
    request_stage,
    run_args,
    small_sample,
    start_cli,
)
from devtools.standin.server import Empty, Hold, HTTPError, Reset, StandinServer

pytestmark = pytest.mark.slow

KINDS = ("429", "429-no-retry-after", "5xx", "reset", "timeout", "malformed", "empty")
# The client gives up on a held request after TIMEOUT_S; on a loaded two-core machine an ordinary reply
# can take a second or more, so the timeout leaves room for that and the hold is well beyond it.
HOLD_S = 8.0
TIMEOUT_S = 3.0


def _body_key(endpoint: str, body: dict) -> str:
    return hashlib.sha256((endpoint + json.dumps(body, sort_keys=True)).encode()).hexdigest()


def _is_repair(body: dict) -> bool:
    return any("Your previous output was invalid" in str(m.get("content")) for m in body.get("messages", []))


class FirstAttemptFaults:
    """The first attempt of every distinct request gets a fault, the least used kind it can get
    (malformed only where a function call is asked for, empty only on chat, neither on a repair)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.applied: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, endpoint: str, body: dict):
        if endpoint not in PAID:
            return None
        chat = endpoint == "chat"
        tools = chat and bool(body.get("tools"))
        allowed = [
            k
            for k in KINDS
            if (k != "malformed" or (tools and not _is_repair(body)))
            and (k != "empty" or (chat and not _is_repair(body)))
        ]
        with self._lock:
            key = _body_key(endpoint, body)
            if key in self.seen:
                return None
            self.seen.add(key)
            kind = min(allowed, key=lambda k: (self.applied[k], KINDS.index(k)))
            self.applied[kind] += 1
        return {
            "429": HTTPError(429, retry_after=0.01),
            "429-no-retry-after": HTTPError(429),
            "5xx": HTTPError(503),
            "reset": Reset(),
            "timeout": Hold(HOLD_S),
            "malformed": '{"label": "CORR',  # function arguments cut short: not JSON
            "empty": Empty(),
        }[kind]


def _args(run_dir: Path, locomo: Path, *extra: str, exp: str = "rag") -> list[str]:
    return run_args(exp, locomo, run_dir, "eval.max_questions=4", "judge.runs=2", *extra)


def _comparable(run_dir: Path) -> dict:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics.pop("latency_s")
    metrics.pop("latency_isolated_s", None)  # timings, like latency_s
    metrics.pop("cost_usd")
    # Like cost_usd, the sampling record comes from usage.json, whose last entry a killed process may not
    # have saved: usage, not results.
    metrics.pop("sampling", None)
    return metrics


def _clean_run(tmp_path: Path, args_for, name: str = "clean") -> Path:
    with StandinServer(api_key=TEST_KEY) as server:
        run_dir = tmp_path / name
        result = finish_cli(start_cli(args_for(run_dir), env_for(server, tmp_path / f"cache-{name}")))
        assert result.returncode == 0, result.stderr[-3000:]
        return run_dir


def test_every_transient_fault_is_absorbed(tmp_path, locomo_mini):
    extra = (f"llm.timeout_s={TIMEOUT_S}", "llm.max_retries=3")

    def args_for(run_dir: Path) -> list[str]:
        return _args(run_dir, locomo_mini, *extra)

    with ThreadPoolExecutor(max_workers=1) as pool:
        clean = pool.submit(_clean_run, tmp_path, args_for)
        faults = FirstAttemptFaults()
        with StandinServer(api_key=TEST_KEY, hold_s=HOLD_S) as server:
            server.set_handler(faults)
            run_dir = tmp_path / "faulty"
            result = finish_cli(start_cli(args_for(run_dir), env_for(server, tmp_path / "cache-faulty")))
            assert result.returncode == 0, result.stderr[-3000:]
            statuses = {s: server.count(status=s) for s in (429, 503, 0)}
        clean_dir = clean.result()

    assert all(faults.applied[k] >= 1 for k in KINDS), faults.applied
    assert statuses[429] == faults.applied["429"] + faults.applied["429-no-retry-after"]
    assert statuses[503] == faults.applied["5xx"] and statuses[0] == faults.applied["reset"]
    assert "Traceback" not in result.stderr and "failures:" not in result.stderr
    # The answers are those of a run without faults; every judge run has its label. (A repaired judge
    # call may label differently from the unrepaired reply: the repair is another reply. A re-asked empty
    # reply adds the tokens of the empty one. So labels and token counts are not compared.)
    faulty, reference = _comparable(run_dir), _comparable(clean_dir)
    for metrics in (faulty, reference):
        metrics["tokens"].pop("llm")
        metrics.pop("judge_by_length", None)
        for scores in (metrics["overall"], *metrics["categories"].values()):
            scores.pop("judge")
            for spread in ("ci95", "stderr"):  # the judge's interval rests on the labels too
                (scores.get(spread) or {}).pop("judge", None)
    assert faulty == reference
    rows, clean_rows = read_jsonl(run_dir / "predictions.jsonl"), read_jsonl(clean_dir / "predictions.jsonl")
    assert [r["prediction"] for r in rows] == [r["prediction"] for r in clean_rows]
    assert all(None not in r["judge"] for r in rows)
    assert not (run_dir / "failures.jsonl").exists()
    total = json.loads((run_dir / "usage.json").read_text())["sessions"][-1]["total"]
    transport = sum(faults.applied[k] for k in ("429", "429-no-retry-after", "5xx", "reset", "timeout"))
    # Every injected transport fault cost a retry; a reply slowed past the timeout by load may add more.
    assert total["retries"] >= transport
    assert total["repairs"] == faults.applied["malformed"] + faults.applied["empty"]
    assert total["failures"] == 0


def _question_texts(locomo: Path, n: int) -> list[str]:
    sample = next(s for s in json.loads(locomo.read_text()) if s["sample_id"] == "mini-1")
    return [q["question"] for q in sample["qa"] if q["category"] != 5][:n]


class PermanentFaults:
    """Fail for good: the answer call about one question, the judge calls about another."""

    def __init__(self, answer_question: str, judge_question: str):
        self.answer_question = answer_question
        self.judge_question = judge_question
        self.attempts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, endpoint: str, body: dict):
        if endpoint != "chat":
            return None
        stage = request_stage(endpoint, body)
        text = json.dumps(body.get("messages"))
        if stage == "answer" and f"Question: {self.answer_question}" in text:
            with self._lock:
                self.attempts["answer"] += 1
            return HTTPError(500)
        if stage == "judge" and self.judge_question in text:
            with self._lock:
                self.attempts["judge"] += 1
            return HTTPError(503)
        return None


def test_lasting_failures_are_recorded_counted_printed_and_retried(tmp_path, locomo_mini):
    q = _question_texts(locomo_mini, 4)
    run_dir = tmp_path / "run"
    args = _args(run_dir, locomo_mini, "llm.max_retries=2")
    with StandinServer(api_key=TEST_KEY) as server:
        env = env_for(server, tmp_path / "cache")
        faults = PermanentFaults(answer_question=q[1], judge_question=q[2])
        server.set_handler(faults)
        first = finish_cli(start_cli(args, env))

        # Bounded: max_retries=2 -> three attempts per call, then the item is given up.
        assert faults.attempts == {"answer": 3, "judge": 2 * 3}
        assert first.returncode == 1 and "Traceback" not in first.stderr
        manifest = json.loads((run_dir / "run.json").read_text())
        assert manifest["status"] == "failed"
        metrics = json.loads((run_dir / "metrics.json").read_text())
        assert metrics["failures"] == {
            "ingest": 0, "search": 0, "answer": 1, "judge": 2, "questions_without_prediction": 1,
        }  # fmt: skip
        rows = {r["qid"]: r for r in read_jsonl(run_dir / "predictions.jsonl")}
        assert len(rows) == 4
        assert rows["mini-1:q1"]["prediction"] == "" and rows["mini-1:q1"]["judge"] == ["WRONG", "WRONG"]
        assert rows["mini-1:q2"]["judge"] == [None, None]
        failures = read_jsonl(run_dir / "failures.jsonl")
        assert sorted((f["stage"], f["qid"], f["run"]) for f in failures) == [
            ("answer", "mini-1:q1", None), ("judge", "mini-1:q2", 0), ("judge", "mini-1:q2", 1),
        ]  # fmt: skip
        assert all(f["resolved"] is False for f in failures)
        # Printed at the end: per stage, then each item, then the verdict.
        err = first.stderr
        assert "failures: answer 1, judge 2" in err
        assert "mini-1:q1" in err and "mini-1:q2 run 0" in err and "mini-1:q2 run 1" in err
        assert "above run.max_failure_rate" in err.strip().splitlines()[-1]

        # The same command again, the server healthy: only the failed items are asked again.
        server.set_handler(None)
        before = paid(server)
        second = finish_cli(start_cli(args, env))
        assert second.returncode == 0, second.stderr[-3000:]
        # q1: its answer and its two judge runs; q2: its two judge runs; the isolated latency pass times
        # q1's retrieval, which had no answer before (one live embedding). Nothing else.
        assert paid(server) - before == 1 + 2 + 2 + 1
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert set(metrics["failures"].values()) == {0}
    assert "failures:" not in second.stderr
    assert all(f["resolved"] is True for f in read_jsonl(run_dir / "failures.jsonl"))
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == 4 and all(None not in r["judge"] for r in rows) and all(r["prediction"] for r in rows)


def test_strict_stops_at_the_first_failure_in_one_line(tmp_path, locomo_mini):
    q = _question_texts(locomo_mini, 4)
    run_dir = tmp_path / "run"
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(PermanentFaults(answer_question=q[0], judge_question="(no such question)"))
        result = finish_cli(
            start_cli(
                _args(run_dir, locomo_mini, "llm.max_retries=1", "run.strict=true"),
                env_for(server, tmp_path / "c"),
            )
        )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: run.strict=true") and "HTTP 500" in lines[0], lines
    assert json.loads((run_dir / "run.json").read_text())["status"] == "aborted"
    assert not (run_dir / "metrics.json").exists()
    assert [f["kind"] for f in read_jsonl(run_dir / "failures.jsonl")] == ["server_error"]


def test_a_conversation_that_cannot_be_ingested_fails_its_questions_not_the_process(tmp_path, locomo_mini):
    run_dir = tmp_path / "run"
    args = _args(run_dir, locomo_mini, "llm.max_retries=1")
    with StandinServer(api_key=TEST_KEY) as server:
        env = env_for(server, tmp_path / "cache")
        server.set_handler(
            lambda endpoint, body: HTTPError(502) if request_stage(endpoint, body) == "ingest" else None
        )
        first = finish_cli(start_cli(args, env))
        assert first.returncode == 1 and "Traceback" not in first.stderr
        assert "failures: ingest 1 (4 questions without a prediction)" in first.stderr
        metrics = json.loads((run_dir / "metrics.json").read_text())
        assert metrics["failures"]["ingest"] == 1 and metrics["failures"]["questions_without_prediction"] == 4
        assert len(read_jsonl(run_dir / "predictions.jsonl")) == 4
        server.set_handler(None)
        second = finish_cli(start_cli(args, env))
        assert second.returncode == 0, second.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert set(metrics["failures"].values()) == {0}
    assert all(r["prediction"] for r in read_jsonl(run_dir / "predictions.jsonl"))


def test_failed_mem0_ingestion_steps_are_replayed_and_then_no_longer_counted(tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, questions=3)

    def args_for(run_dir: Path) -> list[str]:
        return run_args("mem0", dataset, run_dir, "eval.max_questions=3", "judge.runs=1", "llm.max_retries=1")

    def failing_extraction(endpoint, body):
        # Every extraction call that shows one early turn (its pair and the next pairs, as history).
        if (
            endpoint == "chat"
            and "record_facts" in json.dumps(body.get("tools"))
            and "Lemongrass Lane" in json.dumps(body)
        ):
            return HTTPError(500)
        return None

    with ThreadPoolExecutor(max_workers=1) as pool:
        clean = pool.submit(_clean_run, tmp_path, args_for)
        run_dir = tmp_path / "run"
        with StandinServer(api_key=TEST_KEY) as server:
            env = env_for(server, tmp_path / "cache")
            server.set_handler(failing_extraction)
            first = finish_cli(start_cli(args_for(run_dir), env))
            assert "Traceback" not in first.stderr
            failed_steps = json.loads((run_dir / "metrics.json").read_text())["failures"]["ingest"]
            assert failed_steps > 0 and f"failures: ingest {failed_steps}" in first.stderr
            rows = read_jsonl(run_dir / "failures.jsonl")
            assert {(r["stage"], r["step"], r["kind"]) for r in rows} == {
                ("ingest", "extraction", "server_error")
            }
            server.set_handler(None)
            second = finish_cli(start_cli(args_for(run_dir), env))
            assert second.returncode == 0, second.stderr[-3000:]
        clean_dir = clean.result()
    assert _comparable(run_dir) == _comparable(clean_dir)  # failures all 0, tokens of one whole ingestion
    assert all(r["resolved"] for r in read_jsonl(run_dir / "failures.jsonl"))
    assert len(read_jsonl(run_dir / "ingest.jsonl")) == 2  # the failed attempt, then the one that stands
