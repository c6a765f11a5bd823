"""What a run says when a system fails in its own code: a graph server that is not there, a plugged-in
system's bug at ingestion (one line naming the exception and where, never a task group's traceback), and
an exception in `retrieve` for one question (that question's failure; the run goes on)."""

from __future__ import annotations

import importlib
import json
import socket
from pathlib import Path

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens there once the socket is closed


def _run(tmp_path: Path, locomo_mini: Path, *extra: str):
    run_dir = tmp_path / "run"
    args = ["run", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]", "eval.max_questions=3",
            "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST, *extra]  # fmt: skip
    with StandinServer(api_key=TEST_KEY) as server:
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"), timeout=240)
    return result, run_dir


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("exp", "needs"),
    [("mem0g_falkordb", "falkordb"), ("zep_graphiti", "graphiti_core")],
)
def test_no_graph_server_is_one_line_and_the_reason_in_run_json(tmp_path, locomo_mini, exp, needs):
    importlib.import_module(needs)  # its extra is in [all]: an ImportError fails, never skips
    port = _closed_port()
    result, run_dir = _run(tmp_path, locomo_mini, f"+exp={exp}", "graph.host=127.0.0.1", f"graph.port={port}")
    assert result.returncode == 2, result.stderr[-3000:]
    lines = _error_lines(result.stderr)
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("error: ") and f"cannot reach FalkorDB at 127.0.0.1:{port}" in lines[0]
    assert "ExceptionGroup" not in result.stderr and "Traceback" not in result.stderr
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "failed"
    assert f"cannot reach FalkorDB at 127.0.0.1:{port}" in manifest["reason"]
    assert "TaskGroup" not in manifest["reason"]


def test_a_plugged_in_systems_bug_at_ingestion_is_one_line_naming_it_and_where(tmp_path, locomo_mini):
    result, run_dir = _run(
        tmp_path, locomo_mini, "+exp=rag", "method._target_=tests.faulty_systems.IngestRaises"
    )
    assert result.returncode == 1, result.stderr[-3000:]
    lines = _error_lines(result.stderr)
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert lines[0].startswith("error: the rag system raised KeyError: 'speaker_c' (at ")
    assert "faulty_systems.py:" in lines[0] and "in ingest)" in lines[0]
    assert "conversation mini-1" in lines[0]
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "failed"
    assert "KeyError: 'speaker_c'" in manifest["reason"] and "TaskGroup" not in manifest["reason"]


def test_an_exception_in_retrieve_fails_that_question_and_the_run_goes_on(tmp_path, locomo_mini):
    result, run_dir = _run(
        tmp_path, locomo_mini, "+exp=rag", "method._target_=tests.faulty_systems.RetrieveRaises",
        "run.max_failure_rate=0.5",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    predictions = read_jsonl(run_dir / "predictions.jsonl")
    assert len(predictions) == 3
    failed = [p for p in predictions if p.get("failure")]
    assert len(failed) == 1 and failed[0]["failure"].startswith("search:system_error: ZeroDivisionError")
    assert all(p["prediction"] for p in predictions if not p.get("failure"))
    rows = [r for r in read_jsonl(run_dir / "failures.jsonl") if not r["resolved"]]
    assert [(r["stage"], r["kind"], r["qid"]) for r in rows] == [("search", "system_error", failed[0]["qid"])]
    assert "faulty_systems.py:" in rows[0]["message"] and "in retrieve)" in rows[0]["message"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["failures"]["search"] == 1
    # The end of the run says what happened and what to do.
    assert "the system's own code raised on 1 question(s) (system_error 1" in result.stderr
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"


def test_leading_error_finds_the_preferred_leaf_of_nested_groups():
    from mem0bench.common.errors import ConfigurationError, leading_error

    config = ConfigurationError("cannot reach FalkorDB at 127.0.0.1:1")
    group = ExceptionGroup("outer", [KeyError("x"), ExceptionGroup("inner", [ValueError("v"), config])])
    assert leading_error(group, prefer=(ConfigurationError,)) is config
    first = leading_error(group)
    assert isinstance(first, KeyError)
    plain = RuntimeError("not a group")
    assert leading_error(plain) is plain


def test_exception_line_names_the_innermost_frame():
    from mem0bench.common.errors import exception_line

    def deep() -> None:
        raise ZeroDivisionError("division\nby zero")

    try:
        deep()
    except ZeroDivisionError as exc:
        line = exception_line(exc)
    assert line.startswith("ZeroDivisionError: division by zero (at ")
    assert f"{__file__}:" in line and line.endswith(" in deep)")


class _RaisingRetrieve:
    """A system whose retrieve lets an exception through (only what answer_question touches)."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def retrieve(self, conversation, question):
        raise self.error


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (ZeroDivisionError("in the ranking"), "system_error"),
        # A library's SDK error over a call the harness's client failed for good (the bridge's body):
        # that call's kind, so a rerun retries a rate limit as one (systems/external/failure_kinds.py).
        ("bridged", "rate_limit"),
    ],
)
def test_an_exception_out_of_retrieve_is_a_system_error_unless_it_carries_a_bridged_kind(
    locomo_mini, error, kind
):
    import asyncio

    import httpx
    import openai

    from mem0bench.data import load_dataset
    from mem0bench.pipeline.answer import answer_question

    if error == "bridged":
        request = httpx.Request("POST", "http://127.0.0.1/r/x/v1/embeddings")
        body = {"message": "m", "type": "rate_limit", "code": "rate_limit"}
        error = openai.APIStatusError("m", response=httpx.Response(500, request=request), body=body)
    conversation = load_dataset(locomo_mini).conversations[0]
    question = conversation.questions[0]
    record = asyncio.run(
        answer_question(_RaisingRetrieve(error), None, conversation, question)  # type: ignore[arg-type]
    )
    assert record.failure is not None and record.failure.startswith(f"search:{kind}: ")
    assert record.prediction == ""
