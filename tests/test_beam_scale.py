"""BEAM at 1M tokens, made by the test from the released 100K chats (benchmarks/beam.py's `write_made_scale`:
the chats one after another, message ids made unique, each copy's dates moved on) in BEAM's repository
layout: the loader reads `chats/1M/1/`, the dry run says the questions are past gpt-4o-mini's window before
anything is paid, full_context over the stand-in fails each question with the one-line context_window
failure without sending it, `method.truncate=oldest` sends prompts within the window, and rag ingests the
whole conversation and answers every question."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.beam import write_made_scale
from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.beam_replies import beam_replies
from devtools.standin.server import StandinServer
from mem0bench.llm.windows import context_window
from mem0bench.prompts.beam import ANSWER_SYSTEM
from mem0bench.suites import get_suite
from mem0bench.suites.base import DatasetRequest
from mem0bench.suites.beam import ABILITIES
from mem0bench.tokens import count_tokens
from tests.test_beam import beam_folder

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

CID = "1M-1"
WINDOW = context_window("gpt-4o-mini") or 0
SLOW_OK = [a for a in FAST if not a.startswith("llm.timeout_s=")] + ["llm.timeout_s=120"]
"""A truncated prompt is ~127K tokens: the stand-in reads it slowly on a loaded machine (FAST's 5 s)."""


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("beam1m")
    written = write_made_scale(beam_folder(), root, scale="1M", tokens=1_000_000)
    assert written["conversations"] == 1 and written["copies"] >= 8  # ~100-130K tokens a 100K chat
    return root


def _answer_prompts(server: StandinServer) -> list[str]:
    """The answer requests the stand-in received (the suite's own answer prompt)."""
    return [
        " ".join(str(m.get("content", "")) for m in body["messages"])
        for endpoint, body in server.requests
        if endpoint == "chat" and str(body["messages"][0].get("content", "")).startswith(ANSWER_SYSTEM)
    ]


def _run(made: Path, tmp_path: Path, exp: str, *extra: str) -> tuple[Any, Path, StandinServer]:
    run_dir = tmp_path / f"run-{exp}"
    args = [
        "run", f"+exp={exp}", "dataset=beam", f"dataset.path={made}", "dataset.scale=1M", "judge.runs=1",
        "eval.latency=inline", "run.max_failure_rate=1.0", f"hydra.run.dir={run_dir}", *SLOW_OK, *extra,
    ]  # fmt: skip
    server = StandinServer(api_key=TEST_KEY)
    with server:
        server.set_handler(beam_replies)
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"), timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    return result, run_dir, server


def _conversation(made: Path) -> Any:
    dataset = get_suite("beam").load(DatasetRequest(path=str(made), data_dir=made, scale="1M", options={}))
    (conversation,) = dataset.conversations
    return conversation


def test_the_loader_reads_a_1m_conversation_in_the_repository_layout(made: Path) -> None:
    assert WINDOW == 128_000
    conversation = _conversation(made)
    assert conversation.sample_id == CID and len(conversation.questions) == 20
    assert {q.category for q in conversation.questions} == set(ABILITIES.values())
    # every batch a dated session, in order (each copy's dates moved on), message ids unique over the whole
    dates = [s.date_time for s in conversation.sessions]
    assert len(dates) >= 24 and dates == sorted(dates) and dates[0] < dates[-1]
    assert dates[0].year == 2024 and dates[-1].year >= 2024 + 2 * 8
    ids = [t.dia_id.split(":")[1] for t in conversation.turns]
    assert len(ids) == len(set(ids)) > 1_500
    tokens = sum(count_tokens(line) + 1 for line in conversation.render_lines())
    assert 1_000_000 <= tokens < 1_400_000 and tokens > WINDOW  # past gpt-4o-mini's 128K window
    # 100K-1's questions, their evidence the first copy's messages (ids kept), as dia_ids of this chat
    first = {t.dia_id for s in conversation.sessions[:3] for t in s.turns}
    evidence = [e for q in conversation.questions for e in q.evidence]
    assert len(evidence) > 30 and set(evidence) <= first


def test_the_dry_run_says_the_questions_are_past_the_window(made: Path, tmp_path: Path) -> None:
    result, _, server = _run(made, tmp_path, "full_context", "run.dry_run=true")
    assert len(server.requests) == 0  # nothing paid
    line = next(x for x in result.stdout.splitlines() if x.startswith("context window:"))
    assert (
        line.startswith("context window: 20 of 20 questions (1 conversation, up to 1,")
        and f"past gpt-4o-mini's {WINDOW:,}-token window: they will fail unsent" in line
    ), line


def test_full_context_fails_each_question_unsent_and_truncate_oldest_fits(made: Path, tmp_path: Path) -> None:
    _, run_dir, server = _run(made, tmp_path, "full_context")
    assert _answer_prompts(server) == []  # no request past the window
    rows = read_jsonl(run_dir / "answers.jsonl")
    assert len(rows) == 20 and {r["conversation"] for r in rows} == {CID}
    for row in rows:
        failure = row["failure"]
        tokens = int(failure.split("a prompt of ", 1)[1].split(" tokens", 1)[0].replace(",", ""))
        assert tokens > 1_000_000 and "\n" not in failure
        assert failure == (
            f"answer:context_window: a prompt of {tokens:,} tokens + 1,024 reply tokens (max_tokens) is past "
            f"gpt-4o-mini's context window of {WINDOW:,} tokens: not sent"
        )

    _, run_dir, server = _run(made, tmp_path / "oldest", "full_context", "method.truncate=oldest")
    sent = _answer_prompts(server)
    rows = read_jsonl(run_dir / "answers.jsonl")
    assert len(sent) == len(rows) == 20 and not [r for r in rows if r.get("failure")]
    assert all(WINDOW // 2 < count_tokens(p) < WINDOW - 1_024 for p in sent)
    assert all(100_000 < r["context_tokens"] < WINDOW for r in rows)
    lines = _conversation(made).render_lines()  # the newest turns kept, the oldest cut
    assert all(lines[-1] in p and lines[0] not in p for p in sent)


def test_rag_ingests_the_1m_conversation_and_answers_every_question(made: Path, tmp_path: Path) -> None:
    _, run_dir, server = _run(made, tmp_path, "rag")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == 20 and all(not r.get("failure") for r in rows)
    assert len(_answer_prompts(server)) == 20
    embedded = sum(len(body["input"]) for endpoint, body in server.requests if endpoint == "embeddings")
    assert embedded > 1_000_000 // 256  # every chunk of the conversation (<= 256 tokens each) and the queries
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["evidence_recall"] is not None
