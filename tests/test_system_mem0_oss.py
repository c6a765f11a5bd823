"""mem0_oss / mem0_oss_graph: mem0's own library (mem0ai) behind the MemorySystem protocol.

Unit tests of the adapter's parts, then end-to-end runs through the real CLI against the stand-in, which
answers mem0's two free-text JSON prompts in mem0's format (devtools/standin/mem0_oss_replies.py) and everything else
(graph tool calls, answers, judgements) with its schema-driven default."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from pathlib import Path

import pytest

from devtools.e2e import (
    FAST,
    TEST_KEY,
    assert_ingest_failures_stay_open,
    cli_env,
    files_containing,
    read_jsonl,
    run_cli,
)
from devtools.standin.mem0_oss_replies import mem0_handler
from devtools.standin.server import StandinServer
from mem0bench.data.loader import load_dataset
from mem0bench.systems.external.mem0_oss import failures as libfail
from mem0bench.systems.external.mem0_oss.costs import mem0_oss_cost_plan
from mem0bench.systems.external.mem0_oss.library import HARNESS_INSTRUCTIONS, extraction_prompt
from mem0bench.systems.external.mem0_oss.locomo import speaker_batches
from mem0bench.systems.external.mem0_oss.render import render_sections

# ---- the adapter's parts ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mini(locomo_mini: Path):
    return next(c for c in load_dataset(locomo_mini).conversations if c.sample_id == "mini-1")


def test_batches_follow_the_harness(mini):
    # Per session, 2 messages per add; the speaker's own turns are 'user', the other's 'assistant', each
    # as '<speaker>: <text>'; every batch carries its session's LOCOMO date string.
    batches = speaker_batches(mini, mini.speaker_a, 2)
    per_session = {s.index: -(-len(s.turns) // 2) for s in mini.sessions}
    assert len(batches) == sum(per_session.values())
    assert [b.index for b in batches] == list(range(len(batches)))
    turns = {t.dia_id: t for s in mini.sessions for t in s.turns}
    dates = {s.index: s.date_text for s in mini.sessions}
    for batch in batches:
        assert 1 <= len(batch.messages) <= 2 and len(batch.dia_ids) == len(batch.messages)
        assert batch.session_date_text == dates[batch.session_index]
        for message, dia_id in zip(batch.messages, batch.dia_ids, strict=True):
            turn = turns[dia_id]
            assert message["content"] == f"{turn.speaker}: {turn.text}"
            assert message["role"] == ("user" if turn.speaker == mini.speaker_a else "assistant")
    other = speaker_batches(mini, mini.speaker_b, 2)
    assert [b.dia_ids for b in other] == [b.dia_ids for b in batches]
    assert all(
        m1["role"] != m2["role"] for b1, b2 in zip(batches, other) for m1, m2 in zip(b1.messages, b2.messages)
    )


def test_extraction_prompt_dates_the_session_not_the_clock():
    first = extraction_prompt(datetime(2023, 5, 8, 13, 56), instructions=False)
    assert "Today's date is 2023-05-08." in first
    assert f"Today's date is {datetime.now():%Y-%m-%d}." not in first
    assert "Personal Information Organizer" in first and '"facts"' in first
    assert HARNESS_INSTRUCTIONS not in first
    assert extraction_prompt(datetime(2023, 5, 8), instructions=True).endswith(HARNESS_INSTRUCTIONS)


def test_render_lists_dated_memories_and_relations_per_speaker():
    memories = [[{"memory": "Likes\npottery", "metadata": {"timestamp": "8 May, 2023"}}], []]
    relations = [[{"source": "maya", "relationship": "owns", "destination": "biscuit"}], []]
    dates = [{("maya", "owns", "biscuit"): "20 May, 2023"}, {}]
    text = render_sections(["Maya", "Tomas"], memories, relations, dates)
    assert text == (
        "Memories of Maya:\n- [8 May, 2023] Likes pottery\n\nMemories of Tomas:\n(no memories)\n\n"
        "Relations of Maya:\n- [20 May, 2023] maya -> owns -> biscuit\n\nRelations of Tomas:\n(no relations)"
    )


def test_log_capture_keeps_concurrent_calls_apart():
    # Two library calls at once (two speakers), each logging from asyncio.to_thread workers as
    # AsyncMemory does: each capture holds its own records only, once.
    logger = logging.getLogger("mem0.memory.main")

    async def call(tag: str) -> list[str]:
        with libfail.capture() as rows:
            for i in range(20):
                await asyncio.to_thread(logger.error, "Error in new_retrieved_facts: %s %d", tag, i)
                await asyncio.sleep(0)
            logger.info("below the level: not captured")
        return [r.message for r in rows]

    async def both() -> list[list[str]]:
        return list(await asyncio.gather(call("a"), call("b")))

    a, b = asyncio.run(both())
    assert a == [f"Error in new_retrieved_facts: a {i}" for i in range(20)]
    assert b == [f"Error in new_retrieved_facts: b {i}" for i in range(20)]
    assert libfail.classify(libfail.LogRecord("mem0.memory.main", 40, a[0])) == ("extraction", "malformed")
    assert libfail.classify(libfail.LogRecord("mem0", 40, "Invalid JSON response: x")) == (
        "update",
        "malformed",
    )
    assert libfail.classify(libfail.LogRecord("mem0", 30, "something new")) == ("library", "library_error")


def test_cost_plan_counts_adds_per_speaker(locomo_mini):
    dataset = load_dataset(locomo_mini)
    plain = mem0_oss_cost_plan({"batch_size": 2, "top_k": 30}, dataset, 10)
    adds = sum(2 * -(-len(s.turns) // 2) for c in dataset.conversations for s in c.sessions)
    assert plain.lines[0].calls == adds
    graph = mem0_oss_cost_plan({"batch_size": 2, "top_k": 30, "graph": True}, dataset, 10)
    assert len(graph.lines) > len(plain.lines) and graph.context_tokens > plain.context_tokens


# ---- end to end through the CLI --------------------------------------------------------------------


def _run(exp: str, run_dir: Path, cache: Path, server: StandinServer, locomo: Path, *extra: str):
    args = [
        "run", f"+exp={exp}", f"dataset.path={locomo}", "dataset.conversations=[mini-1]",
        "eval.max_questions=4", "judge.runs=2", f"hydra.run.dir={run_dir}", *FAST, *extra,
    ]  # fmt: skip
    return run_cli(args, cli_env(server.base_url, cache))


@pytest.mark.slow
@pytest.mark.parametrize("exp", ["mem0_oss", "mem0_oss_graph"])
def test_end_to_end(exp, tmp_path, locomo_mini):
    graph = exp == "mem0_oss_graph"
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(mem0_handler())
        run_dir = tmp_path / "run"
        result = _run(exp, run_dir, tmp_path / "cache", server, locomo_mini)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr

        rows = read_jsonl(run_dir / "predictions.jsonl")
        assert len(rows) == 4 and all(r["prediction"] and len(r["judge"]) == 2 for r in rows)
        for row in rows:
            assert row["context_items"] > 0 and row["context_tokens"] > 0
            assert row["context"].startswith("Memories of Maya:\n- [")
            assert ("Relations of Maya:" in row["context"]) == graph
            assert row["context_dia_ids"]  # the batches behind the memories, from their metadata

        (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
        details = ingest["details"]
        assert ingest["failures"] == 0 and details["adds"] == 2 * 11
        assert details["memories.speaker_a"] > 0 and details["memories.speaker_b"] > 0
        assert details["memories"] == details["memories.speaker_a"] + details["memories.speaker_b"]
        assert details["ops.ADD"] >= details["memories"]
        assert (details.get("relations.added", 0) > 0) == graph

        metrics = json.loads((run_dir / "metrics.json").read_text())
        llm = metrics["tokens"]["llm"]
        # mem0's fact extraction and update calls (and graph calls) went through the bridge, counted.
        assert llm["mem0_oss_ingest"]["calls"] >= 2 * 11 and llm["mem0_oss_ingest"]["prompt"] > 0
        assert llm["mem0_oss_ingest_embedding"]["calls"] > 0
        # One query embedding per speaker and question (the graph also embeds the entities it finds).
        searches = llm["mem0_oss_search_embedding"]["calls"]
        assert searches > 2 * 4 if graph else searches == 2 * 4
        assert ("mem0_oss_search" in llm) == graph  # the graph's query-entity call
        assert metrics["tokens"]["context_items_mean"] > 0
        assert json.loads((run_dir / "run.json").read_text())["versions"]["mem0ai"] == "1.0.11"
        for speaker in ("maya", "tomas"):
            folder = run_dir / "state" / "mini-1" / speaker
            assert (folder / "done.json").is_file() and (folder / "qdrant").is_dir()
            assert (folder / "graph.kuzu").exists() == graph
        assert files_containing(run_dir, TEST_KEY) == []
        shown = run_cli(
            ["memories", str(run_dir), "--conversation", "mini-1", "--speaker", "Maya"], cli_env("", tmp_path)
        )
        assert shown.returncode == 0, shown.stderr[-2000:]
        assert f"== Maya: {details['memories.speaker_a']} memories" in shown.stdout

        paid = server.count("chat") + server.count("embeddings")
        again = _run(exp, run_dir, tmp_path / "cache", server, locomo_mini)
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.count("chat") + server.count("embeddings") == paid  # resumed from the run's files

        if not graph:
            # A fresh run directory re-ingests from an empty store: mem0's requests are the same, so the
            # LLM cache answers all of them (the one chat request is the harness's preflight probe).
            embeddings = server.count("embeddings")
            chats = server.count("chat")
            fresh = _run(exp, tmp_path / "fresh", tmp_path / "cache", server, locomo_mini)
            assert fresh.returncode == 0, fresh.stderr[-3000:]
            # Only the new run's isolated latency pass is live: one query embedding per speaker and question.
            live = 2 * 4 if not graph else server.count("embeddings") - embeddings
            assert server.count("embeddings") == embeddings + live and server.count("chat") <= chats + 1 + (
                2 * 4 if graph else 0
            )
            assert live >= 2 * 4
            assert read_jsonl(tmp_path / "fresh" / "ingest.jsonl")[0]["details"] == details


@pytest.mark.slow
def test_swallowed_parse_errors_are_counted(tmp_path, locomo_mini):
    # Every fact-extraction reply is not JSON: mem0 logs "Error in new_retrieved_facts" and stores
    # nothing. Each becomes a StepFailure row (failures.jsonl, ingest.jsonl), the run fails on its failure
    # rate and warns that the contexts were empty, instead of scoring a system that remembered nothing.
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(mem0_handler(malformed=True))
        run_dir = tmp_path / "run"
        result = _run("mem0_oss", run_dir, tmp_path / "cache", server, locomo_mini)
        first_ingest = read_jsonl(run_dir / "ingest.jsonl")
        # The same command again restores the saved state: the failed steps stay open (issue 25).
        again = _run("mem0_oss", run_dir, tmp_path / "cache", server, locomo_mini)
    assert again.returncode == 1, again.stderr[-3000:]  # the failures still count against the run
    assert read_jsonl(run_dir / "ingest.jsonl") == first_ingest
    assert_ingest_failures_stay_open(run_dir, again)
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "empty retrieved context" in result.stderr and "ingest" in result.stderr
    (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
    assert ingest["failures"] == 22 and ingest["failure_kinds"] == {"malformed": 22}
    assert ingest["details"]["failures.extraction"] == 22 and ingest["details"]["memories"] == 0
    rows = [r for r in read_jsonl(run_dir / "failures.jsonl") if r["stage"] == "ingest"]
    assert len(rows) == 22
    assert all(r["step"] == "extraction" and r["kind"] == "malformed" for r in rows)
    assert all(r["message"].startswith("Error in new_retrieved_facts") for r in rows)
    assert {r["detail"]["speaker"] for r in rows} == {"Maya", "Tomas"}
    assert json.loads((run_dir / "metrics.json").read_text())["failures"]["ingest"] == 22


# ---- issue 38's switches: the library's own behaviour where our defaults help it --------------------------


def _system(tmp_path: Path, **options):
    from mem0bench.memory.base import SystemContext
    from mem0bench.systems.external.mem0_oss.system import Mem0OSS
    from tests.fakes import ScriptedLLM

    return Mem0OSS(context=SystemContext(client=ScriptedLLM(), state_dir=tmp_path), **options)  # type: ignore[arg-type]


def test_extraction_date_today_sends_the_librarys_own_date(tmp_path, mini):
    """method.extraction_date: `session` (default) dates mem0's extraction prompt with the add's session;
    `today` leaves the library's prompt as mem0 made it (the machine's date at import), as the harness's
    inputs met it."""
    import mem0.configs.prompts as prompts

    conversation = mini
    batch = speaker_batches(conversation, conversation.speaker_a, 2)[0]
    session = _system(tmp_path).extraction_prompt(batch)
    today = _system(tmp_path, extraction_date="today").extraction_prompt(batch)
    assert f"Today's date is {batch.session_date:%Y-%m-%d}." in session
    library_date = prompts.USER_MEMORY_EXTRACTION_PROMPT.split("Today's date is ", 1)[1][:10]
    assert library_date != f"{batch.session_date:%Y-%m-%d}"  # else the test could not tell them apart
    assert f"Today's date is {library_date}." in today and f"{batch.session_date:%Y-%m-%d}" not in today
    assert today == f"{prompts.USER_MEMORY_EXTRACTION_PROMPT}\n{HARNESS_INSTRUCTIONS}"
    with pytest.raises(ValueError, match="extraction_date must be one of session, today"):
        _system(tmp_path, extraction_date="yesterday")


def test_relation_dates_none_shows_relations_as_the_library_gives_them(tmp_path):
    """method.relation_dates: `first_seen` (default) shows the session date the adapter kept beside each
    relation; `none` shows the relation alone."""
    from types import SimpleNamespace

    memories = [[{"memory": "Likes pottery", "metadata": {"timestamp": "8 May, 2023"}}], []]
    relations = [[{"source": "maya", "relationship": "owns", "destination": "biscuit"}], []]
    streams = [SimpleNamespace(relation_dates={("maya", "owns", "biscuit"): "20 May, 2023"}),
               SimpleNamespace(relation_dates={})]  # fmt: skip
    dated = _system(tmp_path, graph=True).render(["Maya", "Tomas"], memories, relations, streams)
    plain = _system(tmp_path, graph=True, relation_dates="none").render(
        ["Maya", "Tomas"], memories, relations, streams
    )
    assert "- [20 May, 2023] maya -> owns -> biscuit" in dated
    assert "- maya -> owns -> biscuit" in plain and "20 May, 2023" not in plain
    assert "- [8 May, 2023] Likes pottery" in plain  # memories keep their session dates either way
    with pytest.raises(ValueError, match="relation_dates must be one of first_seen, none"):
        _system(tmp_path, relation_dates="last_seen")
