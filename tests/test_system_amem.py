"""The amem adapter (A-Mem, the `a-mem` library) end to end through the CLI against the stand-in, and its
counting of the steps the library swallows.

The stand-in answers A-Mem's JSON-schema prompts with schema-valid data; the evolution prompt is answered
in the library's expected format with ids taken from the prompt (so links are made and followed). That
tests the adapter, not the prompts: nothing here knows the questions.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.amem_replies import amem_replies, prompt_text
from devtools.standin.server import StandinServer, Text
from mem0bench.data.loader import load_dataset
from mem0bench.llm.cache import ResponseCache
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.settings import LLMSettings
from mem0bench.memory.base import SystemContext
from mem0bench.systems.external.amem.notes import Note, render_notes
from mem0bench.systems.external.amem.query import keywords_prompt, parse_keywords
from mem0bench.systems.external.amem.system import AMem, note_content


def _run(tmp_path: Path, server: StandinServer, locomo: Path, *extra: str):
    run_dir = tmp_path / "run"
    args = [
        "run", "+exp=amem", f"dataset.path={locomo}", "dataset.conversations=[mini-1]",
        "eval.max_questions=4", "judge.runs=2", f"hydra.run.dir={run_dir}", *FAST, *extra,
        # These runs check replay from the cache; the isolated latency pass is live by design (its own
        # tests: test_latency_isolated.py).
        "eval.latency=inline",
    ]  # fmt: skip
    return run_cli(args, cli_env(server.base_url, tmp_path / "cache")), run_dir


@pytest.mark.slow
def test_amem_end_to_end_and_rerun_from_the_cache(tmp_path, locomo_mini):
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(amem_replies)
        result, run_dir = _run(tmp_path, server, locomo_mini)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr
        for name in ("ingest.jsonl", "answers.jsonl", "judgements.jsonl", "metrics.json", "run.json"):
            assert (run_dir / name).is_file(), name

        ingest = read_jsonl(run_dir / "ingest.jsonl")
        assert len(ingest) == 1 and ingest[0]["failures"] == 0, ingest
        details = ingest[0]["details"]
        assert details["notes"] == details["turns"] == 21 and details["notes_lost"] == 0
        assert details["notes_with_keywords"] == 21 and details["links"] > 0 and details["evolutions"] > 0
        assert details["calls.analysis"] == 21 and details["calls.evolution"] == 20
        assert ingest[0]["memory_tokens"] > 0
        state = run_dir / "state" / "mini-1" / "amem"
        assert (state / "done.json").is_file() and len((state / "notes.jsonl").read_text().splitlines()) == 21

        rows = read_jsonl(run_dir / "predictions.jsonl")
        assert len(rows) == 4 and all(r.get("prediction") is not None and not r.get("failure") for r in rows)
        answers = read_jsonl(run_dir / "answers.jsonl")
        assert all(a["context_tokens"] > 0 for a in answers)
        # The context items of every question are recorded (k=10 notes and the notes they link to).
        assert all(isinstance(a["context_items"], int) and a["context_items"] >= 10 for a in answers), (
            answers[0]
        )
        metrics = json.loads((run_dir / "metrics.json").read_text())
        assert metrics["method"] == "amem" and metrics["n_questions"] == 4
        llm = metrics["tokens"]["llm"]
        assert llm["amem_ingest"]["calls"] >= 41  # 21 analyses + 20 evolutions (+ embeddings)
        assert llm["amem_search"]["calls"] >= 4  # one keywords call per question (+ query embeddings)
        # The sampling parameters the library's requests set, as the bridge received them: temperature 0.
        for stage in ("amem_ingest", "amem_search"):
            assert {row["temperature"] for row in metrics["sampling"][stage]} == {0.0}, metrics["sampling"]
        manifest = json.loads((run_dir / "run.json").read_text())
        assert "a-mem" in json.dumps(manifest)
        assert metrics["empty_contexts"]["n"] == 0

        # The same command again: everything is served from the cache and the run's own records.
        before = server.count("chat") + server.count("embeddings")  # (the preflight's /models is not cached)
        rerun_dir = tmp_path / "rerun"
        args = [
            "run", "+exp=amem", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
            "eval.max_questions=4", "judge.runs=2", f"hydra.run.dir={rerun_dir}", *FAST, "eval.latency=inline",
        ]  # fmt: skip
        again = run_cli(args, cli_env(server.base_url, tmp_path / "cache"))
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.count("chat") + server.count("embeddings") == before, "a rerun asked the server again"
        first = {r["qid"]: r["prediction"] for r in rows}
        second = {r["qid"]: r["prediction"] for r in read_jsonl(rerun_dir / "predictions.jsonl")}
        assert first == second


def _client(server: StandinServer, tmp_path: Path) -> LLMClient:
    settings = LLMSettings(
        base_url=server.base_url, api_key=TEST_KEY, model="gpt-4o-mini", timeout_s=5.0, max_retries=1,
        backoff_base_s=0.01, backoff_max_s=0.02,
    )  # fmt: skip
    return LLMClient(
        settings, OpenAIEmbeddingBackend("text-embedding-3-small"), ResponseCache(tmp_path / "c.sqlite")
    )


def test_swallowed_library_failures_are_counted(tmp_path, locomo_mini):
    """Malformed analysis and evolution replies: the library stores notes without keywords or links and
    says nothing; each is a StepFailure row, not a silent empty memory."""
    conversation = next(c for c in load_dataset(locomo_mini).conversations if c.sample_id == "mini-3")

    def broken(endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint != "chat":
            return None
        prompt = prompt_text(body)
        if "memory evolution agent" in prompt:
            return Text('{"should_evolve": true, "actions": ["strengthen"]')  # cut off: not JSON
        if "structured analysis" in prompt:
            return Text("Sure! Here are the keywords: trip, family")  # not JSON at all
        return None

    async def main() -> tuple[AMem, Any]:
        client = _client(server, tmp_path)
        system = AMem(context=SystemContext(client=client, state_dir=tmp_path / "state"))
        try:
            report = await system.ingest(conversation)
            context = await system.retrieve(conversation, conversation.questions[0])
        finally:
            await system.aclose()
            await client.aclose()
        return system, (report, context)

    async def restore() -> Any:
        client = _client(server, tmp_path)
        system = AMem(context=SystemContext(client=client, state_dir=tmp_path / "state"))
        try:
            return await system.ingest(conversation)
        finally:
            await system.aclose()
            await client.aclose()

    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(broken)
        system, (report, context) = asyncio.run(main())
        # Another process reopens the saved notes: it says so, with the failures they were built with, so
        # the pipeline keeps the first attempt's record and its failures open (issue 25).
        restored = asyncio.run(restore())
    assert restored.restored and not report.restored
    assert restored.failures == report.failures > 0 and restored.details == report.details

    turns = len(conversation.turns)
    ingest_rows = [f for f in system.failures if f.qid is None]
    by_stage = {stage: [f for f in ingest_rows if f.stage == stage] for stage in ("analysis", "evolution")}
    assert len(by_stage["analysis"]) == turns  # every note's analysis failed
    assert len(by_stage["evolution"]) == turns - 1  # every note but the first had neighbours to evolve with
    assert all(f.kind == "malformed" and f.dia_ids and f.speaker for f in ingest_rows)
    assert report.failures == len(ingest_rows) and report.details["notes"] == turns
    assert report.details["notes_with_keywords"] == 0 and report.details["links"] == 0
    # The notes are still there and retrievable (their content), and the search step went on.
    assert context.kind == "notes" and context.items and context.items >= 1 and context.tokens > 0


def test_note_content_rendering_and_query_parsing(locomo_mini):
    conversation = load_dataset(locomo_mini).conversations[0]
    turn = conversation.turns[0]
    assert note_content(turn) == f"Speaker {turn.speaker} says : {turn.text}"
    note = Note("D1:1", "1:56 pm on 8 May, 2023", "Speaker A says : hi", "greeting", ("hi",), ("chat",))
    assert (
        render_notes([note])
        == "[1:56 pm on 8 May, 2023] Speaker A says : hi (context: greeting; keywords: hi; tags: chat)"
    )
    assert parse_keywords('{"keywords": "Oslo, move"}') == ("Oslo, move", True)
    assert parse_keywords("  Oslo cosmos move ") == ("Oslo cosmos move", False)
    assert "Question: When did Ann move?" in keywords_prompt("When did Ann move?")


def test_steps_of_library_calls():
    from mem0bench.systems.external.amem.failures import step_of
    from mem0bench.systems.external.amem.query import KEYWORDS_FORMAT

    def schema(*props: str) -> dict[str, Any]:
        return {"json_schema": {"schema": {"properties": {p: {} for p in props}}}}

    assert step_of(schema("should_evolve", "actions")) == "evolution"
    assert step_of(schema("keywords", "context", "tags")) == "analysis"
    assert step_of(KEYWORDS_FORMAT) == "query_keywords"
    assert step_of(None) == "llm"


@pytest.mark.parametrize(
    ("setting", "sent"),
    [(0.0, {0.0}), (None, {1.0}), (0.7, {0.7})],
    ids=["default_0", "library_1", "authors_0_7"],
)
def test_library_calls_go_out_at_the_configured_temperature(tmp_path, locomo_mini, setting, sent):
    """The fork asks for 1.0 in its analysis, evolution and keyword calls; the default sends 0 (the paper's
    A-Mem* rerun), temperature=null leaves the library's own value, and 0.7 is the authors' (their
    LLMController's default)."""
    conversation = next(c for c in load_dataset(locomo_mini).conversations if c.sample_id == "mini-3")
    temperatures: dict[str, set[float]] = {}

    def recording(endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint == "chat":
            prompt = prompt_text(body)
            step = (
                "evolution" if "memory evolution agent" in prompt
                else "analysis" if "structured analysis" in prompt
                else "keywords" if "generate several keywords" in prompt
                else "other"
            )  # fmt: skip
            temperatures.setdefault(step, set()).add(body.get("temperature"))
        return amem_replies(endpoint, body)

    async def main() -> None:
        client = _client(server, tmp_path)
        kwargs = {} if setting == 0.0 else {"temperature": setting}
        system = AMem(context=SystemContext(client=client, state_dir=tmp_path / "state"), **kwargs)
        try:
            await system.ingest(conversation)
            await system.retrieve(conversation, conversation.questions[0])
        finally:
            await system.aclose()
            await client.aclose()

    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(recording)
        asyncio.run(main())
    assert set(temperatures) >= {"analysis", "evolution", "keywords"}, temperatures
    assert all(temperatures[step] == sent for step in ("analysis", "evolution", "keywords")), temperatures


@pytest.mark.slow
def test_the_paper_profile_runs_as_the_authors_harness(tmp_path, locomo_mini):
    """`+exp=paper/amem`: the notes embedded by the packaged MiniLM (no embedding request reaches the
    server, nothing is downloaded), the image caption folded into the turn's note, and every question
    answered with our wording of A-Mem's prompt for its category."""
    from mem0bench.suites.locomo import TEMPORAL

    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(amem_replies)
        run_dir = tmp_path / "paper"
        args = [
            "run", "+exp=paper/amem", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-3]",
            "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST, "eval.latency=inline",
        ]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"))
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not [body for endpoint, body in requests if endpoint == "embeddings"]
    conversation = next(c for c in load_dataset(locomo_mini).conversations if c.sample_id == "mini-3")
    captioned = next(t for t in conversation.turns if t.caption)
    assert any(captioned.caption in prompt_text(body) for endpoint, body in requests if endpoint == "chat")
    answered = {row["qid"] for row in read_jsonl(run_dir / "answers.jsonl")}
    asked = [
        prompt_text(body) for endpoint, body in requests
        if endpoint == "chat" and not body.get("tools") and not body.get("response_format")
    ]  # fmt: skip
    checked = 0
    for q in conversation.questions:
        if q.qid not in answered:
            continue  # category 5 is left out by default
        (prompt,) = {p for p in asked if p.endswith(f"Question: {q.question}\nAnswer:")}
        assert ("approximate date" in prompt) == (q.category == TEMPORAL), q.qid
        assert ("exact words of the context" in prompt) == (q.category != TEMPORAL), q.qid
        checked += 1
    assert checked == 2
