"""LangMem (mem0bench/systems/external/langmem): end to end through the CLI against the stand-in, failures counted,
and the adapter's own pieces (notes, snapshot, deterministic ids, log attribution)."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from devtools.e2e import FAST, assert_ingest_failures_stay_open, cli_env, read_jsonl, run_cli
from devtools.standin.langmem_replies import reply
from devtools.standin.server import HTTPError, StandinServer, ToolCall


def _run(server: StandinServer, tmp_path: Path, locomo: Path, name: str, *extra: str):
    run_dir = tmp_path / name
    args = [
        "run", "+exp=langmem", f"dataset.path={locomo}", "dataset.conversations=[mini-1]",
        "eval.max_questions=4", "judge.runs=2", f"hydra.run.dir={run_dir}", *FAST, *extra,
        # These runs check replay from the cache; the isolated latency pass is live by design (its own
        # tests: test_latency_isolated.py).
        "eval.latency=inline",
    ]  # fmt: skip
    return run_cli(args, cli_env(server.base_url, tmp_path / "cache")), run_dir


def _lines(locomo: Path, sample_id: str) -> list[str]:
    """The speakers of a conversation's turns, in order."""
    sample = next(s for s in json.loads(locomo.read_text()) if s["sample_id"] == sample_id)
    conv = sample["conversation"]
    return [
        t["speaker"] for k, v in conv.items() if k.startswith("session_") and isinstance(v, list) for t in v
    ]


def _turns(locomo: Path, sample_id: str) -> int:
    return len(_lines(locomo, sample_id))


@pytest.mark.slow
def test_langmem_end_to_end_and_rerun_from_cache(tmp_path, standin, locomo_mini):
    standin.set_handler(reply)  # trustcall's own formats: new memories and valid JSON patches
    result, run_dir = _run(standin, tmp_path, locomo_mini, "run")
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("ingest.jsonl", "answers.jsonl", "judgements.jsonl", "metrics.json", "predictions.jsonl"):
        assert (run_dir / name).is_file(), name

    (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
    turns = _turns(locomo_mini, "mini-1")
    details = ingest["details"]
    assert details["messages"] == turns and details["failed_steps"] == 0 and ingest["failures"] == 0
    assert details["chat_calls"] == turns  # one trustcall extraction per message, no retry needed
    per_speaker = {k: v for k, v in details.items() if k.startswith("memories:")}
    assert len(per_speaker) == 2 and all(v > 0 for v in per_speaker.values())
    assert sum(per_speaker.values()) == details["memories"] and ingest["memory_tokens"] > 0
    assert ingest["usage"]["langmem_ingest"][0] == turns

    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == 4 and all(r["prediction"] and r["failure"] is None for r in rows)
    for row in rows:
        # One section per speaker (the paper's two agents), the memories as the library stored them: no
        # session date added by the harness (method.dates=true is the labelled option).
        sections = row["context"].split("\n\n")
        assert [s.splitlines()[0] for s in sections] == ["Memories of Maya:", "Memories of Tomas:"]
        lines = [line for s in sections for line in s.splitlines()[1:]]
        assert row["context_items"] == len(lines) > 0
        assert row["context_tokens"] > 0 and row["context_dia_ids"]
        assert not any(line.startswith("[") for line in lines)
        assert row["usage"]["langmem_search_embedding"][0] == 1  # one query embedding for both speakers

    metrics = json.loads((run_dir / "metrics.json").read_text())
    llm = metrics["tokens"]["llm"]
    assert llm["langmem_ingest"]["calls"] == turns
    assert llm["langmem_ingest_embedding"]["calls"] > 0 and llm["langmem_search_embedding"]["calls"] == 4
    assert metrics["empty_contexts"]["n"] == 0
    versions = json.loads((run_dir / "run.json").read_text())["versions"]
    assert versions["langmem"] == "0.0.30" and "langgraph" in versions
    assert (run_dir / "state" / "mini-1" / "langmem" / "done.json").is_file()

    # The same command in a new folder: every request repeats exactly (seeded ids, session-dated store
    # clock), so the cache serves all of it.
    before = standin.count("chat") + standin.count("embeddings")
    again, run_dir2 = _run(standin, tmp_path, locomo_mini, "run2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert standin.count("chat") + standin.count("embeddings") == before
    contexts = [r["context"] for r in read_jsonl(run_dir2 / "predictions.jsonl")]
    assert contexts == [r["context"] for r in rows]


@pytest.mark.slow
def test_swallowed_extraction_errors_are_failures(tmp_path, standin, locomo_mini):
    # Two ways LangMem loses a message without raising, each a failed step, not a quiet empty memory:
    # the plain stand-in answers trustcall's update step (Maya's messages) with a PatchDoc naming a random
    # json_doc_id, which trustcall logs and drops; Tomas's replies carry arguments that are not JSON, which
    # LangChain sets aside as invalid_tool_calls and trustcall ignores.
    def replies(endpoint, body):
        names = {t["function"]["name"] for t in body.get("tools") or []}
        text = json.dumps(body.get("messages"))
        if endpoint == "chat" and "Memory" in names and "| Tomas:" in text:
            return ToolCall('{"content": "cut off', name="Memory")
        return None

    standin.set_handler(replies)
    result, run_dir = _run(standin, tmp_path, locomo_mini, "run", "run.max_failure_rate=1.0")
    assert result.returncode == 0, result.stderr[-3000:]
    (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
    assert ingest["failures"] > 0 and ingest["failure_kinds"] == {"malformed": ingest["failures"]}
    failures = [r for r in read_jsonl(run_dir / "failures.jsonl") if r.get("step") == "langmem_extract"]
    assert len(failures) == ingest["failures"] == ingest["details"]["failed_steps"]
    by_speaker = {r["detail"]["speaker"] for r in failures}
    assert by_speaker == {"Maya", "Tomas"}
    tomas = [r for r in failures if r["detail"]["speaker"] == "Tomas"]
    assert all(r["message"].startswith("invalid tool call: Memory") for r in tomas)
    assert len(tomas) == sum(1 for line in _lines(locomo_mini, "mini-1") if line == "Tomas")
    assert all(
        "Could not find existing schema" in r["message"] for r in failures if r["detail"]["speaker"] == "Maya"
    )
    assert ingest["details"]["memories:Tomas"] == 0

    # The same command again restores the saved store: the failed steps are not retried, so they stay open
    # (issue 25: a rerun once marked all of them resolved).
    again, _ = _run(standin, tmp_path, locomo_mini, "run", "run.max_failure_rate=1.0")
    assert again.returncode == 0, again.stderr[-3000:]
    assert read_jsonl(run_dir / "ingest.jsonl") == [ingest]  # the attempt that built the store stands
    assert_ingest_failures_stay_open(run_dir, again)


@pytest.mark.slow
def test_transient_failures_leave_no_snapshot(tmp_path, standin, locomo_mini):
    # Every chat call fails for good (5xx past the client's retries): each message is a server_error
    # step, the conversation keeps no snapshot (the next run ingests it again), and questions still run.
    def down(endpoint, body):  # LangMem's extraction calls only (not the harness's preflight probe)
        names = {t["function"]["name"] for t in body.get("tools") or []}
        return HTTPError(503) if endpoint == "chat" and "Memory" in names else None

    standin.set_handler(down)
    result, run_dir = _run(
        standin, tmp_path, locomo_mini, "run", "run.max_failure_rate=1.0", "llm.max_retries=1"
    )
    (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
    assert (
        ingest["failure_kinds"] == {"server_error": _turns(locomo_mini, "mini-1")} and ingest["retry"] is True
    )
    assert not (run_dir / "state" / "mini-1" / "langmem" / "done.json").exists()
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_agent_mode_runs_the_papers_memory_tool_agent(tmp_path, standin, locomo_mini):
    standin.set_handler(reply)  # a manage_memory create, then a plain reply once the tool answered
    result, run_dir = _run(standin, tmp_path, locomo_mini, "run", "method.mode=agent")
    assert result.returncode == 0, result.stderr[-3000:]
    (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
    turns = _turns(locomo_mini, "mini-1")
    assert ingest["details"]["chat_calls"] == 2 * turns and ingest["failures"] == 0
    assert ingest["details"]["memories"] == turns  # one created memory per message
    names = [{t["function"]["name"] for t in body.get("tools") or []} for _, body in standin.requests]
    agent = [body for body, n in zip([b for _, b in standin.requests], names) if "manage_memory" in n]
    assert len(agent) == 2 * turns and all(
        n == {"manage_memory", "search_memory"} for n in names if "manage_memory" in n
    )
    assert "<memories>" in agent[0]["messages"][0]["content"]
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert all(r["context_items"] > 0 for r in rows)


_AGENT = ("method.mode=agent", "method.retrieval=agent")


def _tiny(server: StandinServer, tmp_path: Path, locomo: Path, name: str, *extra: str):
    """The paper's agent ingest and agent retrieval on the 4-message conversation (2 questions)."""
    return _run(server, tmp_path, locomo, name, "dataset.conversations=[mini-3]", *_AGENT, *extra)


def _last_user(body: dict) -> str:
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return users[-1]["content"] if users else ""


@pytest.mark.slow
def test_agent_retrieval_asks_each_speakers_agent_and_its_reply_is_the_context(
    tmp_path, standin, locomo_mini
):
    standin.set_handler(reply)  # ingest: a create then "Noted."; a question: search_memory, then a reply
    # One question, then the run resumed for the other: that one is asked on the threads saved with the
    # conversation's snapshot (a new process), not on the ones ingest held in memory.
    first, run_dir = _tiny(standin, tmp_path, locomo_mini, "run", "eval.max_questions=1")
    assert first.returncode == 0, first.stderr[-3000:]
    result, run_dir = _tiny(standin, tmp_path, locomo_mini, "run")
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(read_jsonl(run_dir / "ingest.jsonl")) == 1  # the resumed run restored the saved store
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == 2 and all(r["failure"] is None and not r["degraded"] for r in rows)
    chats = [body for endpoint, body in standin.requests if endpoint == "chat"]
    for row in rows:
        # One chat call per speaker carrying the question as the user's last word, the memory tools offered,
        # on that speaker's thread (its own messages only, as the paper's two agents).
        asked = [b for b in chats if _last_user(b) == row["question"]]
        opening = [b for b in asked if b["messages"][-1]["role"] == "user"]
        assert len(opening) == 2
        for body in opening:
            assert {t["function"]["name"] for t in body["tools"]} == {"manage_memory", "search_memory"}
        threads = [{m["content"].split(" | ")[1].split(":")[0] for m in b["messages"][1:-1]
                    if m.get("role") == "user"} for b in opening]  # fmt: skip
        assert sorted(map(sorted, threads)) == [["Ade"], ["June"]]
        # The context is the two agents' replies (the stand-in's answers to the calls after the search),
        # each under its speaker's header, and nothing else.
        after_search = [b for b in asked if b["messages"][-1]["role"] == "tool"]
        replies = {}
        for body in after_search:
            speaker = body["messages"][1]["content"].split(" | ")[1].split(":")[0]
            replies[speaker] = reply("chat", body).content
        assert row["context"] == f"Memories of Ade:\n{replies['Ade']}\n\nMemories of June:\n{replies['June']}"
        assert row["context_items"] == 2
        assert row["usage"]["langmem_search"][0] == 4  # per speaker: the search call, then the reply
        answer = [b for b in chats if not b.get("tools") and any(
            row["context"] in (m.get("content") or "") for m in b["messages"])]  # fmt: skip
        assert answer, "the answer model never saw the agents' replies"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["tokens"]["llm"]["langmem_search"]["calls"] == 8
    assert [s["temperature"] for s in metrics["sampling"]["langmem_search"]] == [0.0]  # as the agent sent it
    assert (run_dir / "state" / "mini-3" / "langmem" / "threads.json").is_file()

    # The same command in a new folder: the agents' threads and the questions repeat exactly, so the cache
    # serves every request, the questions' included (the second one's, first asked on the restored threads).
    before = standin.count("chat") + standin.count("embeddings")
    again, run_dir2 = _tiny(standin, tmp_path, locomo_mini, "run2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert standin.count("chat") + standin.count("embeddings") == before
    assert [r["context"] for r in read_jsonl(run_dir2 / "predictions.jsonl")] == [r["context"] for r in rows]


@pytest.mark.slow
def test_a_malformed_agent_loop_at_question_time_is_a_counted_failure(tmp_path, standin, locomo_mini):
    # Asked a question, Ade's agent only ever sends a search whose arguments are not JSON (LangChain sets it
    # aside, the agent stops with no text), June's searches forever (LangGraph's step limit ends it with a
    # reply of its own that reads like an answer).
    def replies(endpoint, body):
        names = {t["function"]["name"] for t in body.get("tools") or []}
        if endpoint == "chat" and "manage_memory" in names and " | " not in _last_user(body):
            thread = json.dumps(body["messages"][1:-1])
            if "| Ade:" in thread:
                return ToolCall('{"query": "cut off', name="search_memory")
            return ToolCall({"query": "again"}, name="search_memory")
        return reply(endpoint, body)

    standin.set_handler(replies)
    result, run_dir = _tiny(
        standin, tmp_path, locomo_mini, "run", "run.max_failure_rate=1.0", "method.agent_recursion_limit=6"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == 2 and all(r["context"] == "" and r["context_items"] == 0 for r in rows)
    failures = [r for r in read_jsonl(run_dir / "failures.jsonl") if r.get("step") == "langmem_ask"]
    assert len(failures) == 4 and {r["qid"] for r in failures} == {r["qid"] for r in rows}
    ade = [r for r in failures if r["message"].startswith("Ade:")]
    june = [r for r in failures if r["message"].startswith("June:")]
    assert len(ade) == len(june) == 2
    assert all(r["kind"] == "malformed" and "invalid tool call: search_memory" in r["message"] for r in ade)
    # LangGraph's own "Sorry, need more steps" reply is not taken for the agent's answer.
    assert all(r["kind"] == "library_error" and "StepLimitReached" in r["message"] for r in june)
    assert all(len(r["degraded"]) == 2 for r in rows)


# ---- the adapter's pieces ------------------------------------------------------------------------
def test_memory_text_reads_both_tools_formats():
    from mem0bench.systems.external.langmem.render import Note, memory_text, render_notes, render_sections

    assert (
        memory_text({"kind": "Memory", "content": {"content": "Maya  adopted\nBiscuit"}})
        == "Maya adopted Biscuit"
    )
    assert memory_text({"content": "likes tea"}) == "likes tea"
    assert memory_text({"kind": "Other", "content": {"a": 1}}) == '{"a": 1}'
    notes = [Note("a", "8 May, 2023", "D1:1", 0.9), Note("b", None, None, 0.1)]
    assert render_notes(notes) == "[8 May, 2023] a\nb"
    assert render_sections([("Maya", notes), ("Tomas", []), (None, notes[1:])], dates=False) == (
        "Memories of Maya:\na\nb\n\nb"
    )
    assert render_sections([("Maya", notes)], dates=True) == "Memories of Maya:\n[8 May, 2023] a\nb"


def _fake_store(tmp_path: Path):
    from mem0bench.systems.external.langmem.library import load_library

    def embed(texts: list[str]) -> list[list[float]]:
        return [[float(len(t)), float(t.count("a")), 1.0] for t in texts]

    return load_library().InMemoryStore(index={"dims": 3, "embed": embed})


def test_snapshot_round_trip_restores_items_and_vectors(tmp_path):
    from mem0bench.systems.external.langmem import persistence
    from mem0bench.systems.external.langmem.persistence import Annotation, Snapshot

    store = _fake_store(tmp_path)
    store.put(("memories", "speaker_a"), "k1", {"kind": "Memory", "content": {"content": "alpha a"}})
    store.put(("memories", "speaker_b"), "k2", {"kind": "Memory", "content": {"content": "beta"}})
    ann = {(("memories", "speaker_a"), "k1"): Annotation("8 May, 2023", "D1:1", "Maya")}
    persistence.save(tmp_path, store, Snapshot(ann, {"details": {"memories": 2}}), "f")

    restored = _fake_store(tmp_path)
    snap = persistence.load(tmp_path, restored, "f")
    assert snap is not None and snap.annotations == ann and snap.meta["details"] == {"memories": 2}
    assert restored._vectors == store._vectors
    hits = restored.search(("memories", "speaker_a"), query="alpha a")
    assert [h.key for h in hits] == ["k1"] and hits[0].value == store.get(
        ("memories", "speaker_a"), "k1"
    ).value
    assert persistence.load(tmp_path, _fake_store(tmp_path), "other") is None  # stale: rebuilt
    persistence.clear(tmp_path)
    assert persistence.load(tmp_path, _fake_store(tmp_path), "f") is None  # no done marker


def test_snapshot_keeps_the_agents_threads_and_drops_stale_ones(tmp_path):
    from mem0bench.systems.external.langmem import persistence
    from mem0bench.systems.external.langmem.library import load_library
    from mem0bench.systems.external.langmem.persistence import Snapshot

    lib = load_library()
    thread = lib.messages_to_dict([lib.messages_from_dict([{"type": "human", "data": {"content": "hi"}}])[0]])
    store = _fake_store(tmp_path)
    persistence.save(tmp_path, store, Snapshot({}, {}, {"speaker_a": thread}), "f")
    snap = persistence.load(tmp_path, _fake_store(tmp_path), "f")
    assert snap is not None and snap.threads == {"speaker_a": thread}
    assert lib.messages_from_dict(snap.threads["speaker_a"])[0].content == "hi"
    persistence.save(tmp_path, store, Snapshot({}, {}), "g")  # a manager ingest: no thread to ask on
    snap = persistence.load(tmp_path, _fake_store(tmp_path), "g")
    assert snap is not None and snap.threads == {}


def test_a_question_asked_on_a_store_copy_leaves_the_store_as_ingest_left_it(tmp_path):
    from mem0bench.systems.external.langmem.ask import store_copy
    from mem0bench.systems.external.langmem.library import load_library

    store = _fake_store(tmp_path)
    store.put(("memories", "speaker_a"), "k1", {"content": "alpha"})
    copy = store_copy(load_library(), store)
    assert copy.search(("memories", "speaker_a"), query="alpha")[0].key == "k1"
    copy.put(("memories", "speaker_a"), "k2", {"content": "written while answering"})
    copy.delete(("memories", "speaker_a"), "k1")
    assert [i.key for i in store.search(("memories", "speaker_a"), query="alpha")] == ["k1"]
    assert set(store._vectors[("memories", "speaker_a")]) == {"k1"}


def test_langgraphs_step_limit_reply_is_not_an_answer():
    from mem0bench.systems.external.langmem.agents import STEP_LIMIT_REPLY, StepLimitReached, final_reply

    class Message:
        def __init__(self, content):
            self.content = content

    assert final_reply({"messages": [Message([{"type": "text", "text": " Biscuit "}])]}, 5) == "Biscuit"
    with pytest.raises(StepLimitReached, match="agent_recursion_limit=5"):
        final_reply({"messages": [Message(STEP_LIMIT_REPLY)]}, 5)


def test_seeded_ids_and_session_clock_repeat_exactly():
    from mem0bench.systems.external.langmem import determinism
    from mem0bench.systems.external.langmem.library import load_library

    load_library()  # installs the stand-ins
    import langgraph.store.memory as store_module
    import langmem.knowledge.extraction as extraction

    when = datetime(2023, 5, 8, 13, 56)
    with determinism.seeded("conv:1:D1:1", when):
        first = [extraction.uuid.uuid4() for _ in range(3)]
        stamp = store_module.datetime.now(store_module.timezone.utc)
    with determinism.seeded("conv:1:D1:1", when):
        again = [extraction.uuid.uuid4() for _ in range(3)]
    assert first == again and len(set(first)) == 3 and all(u.version == 4 for u in first)
    assert stamp.isoformat() == "2023-05-08T13:56:00+00:00"
    assert extraction.uuid.uuid4() != extraction.uuid.uuid4()  # outside a message: random as before
    assert extraction.uuid.uuid5(uuid.NAMESPACE_DNS, "x") == uuid.uuid5(uuid.NAMESPACE_DNS, "x")


def test_library_log_records_go_to_the_step_that_logged_them():
    from mem0bench.systems.external.langmem.steplog import step

    async def one(name: str, delay: float):
        with step() as current:
            await asyncio.sleep(delay)
            logging.getLogger("extraction").error("failed in %s", name)
            await asyncio.sleep(delay)
        return current

    async def both():
        return await asyncio.gather(one("a", 0.02), one("b", 0.01))

    a, b = asyncio.run(both())
    assert [m for _, _, m in a.records] == ["failed in a"]
    assert [m for _, _, m in b.records] == ["failed in b"]


def test_cost_plan_counts_one_extraction_per_message(locomo_mini):
    from mem0bench.data.loader import load_dataset
    from mem0bench.systems.external.langmem.system import LangMem

    dataset = load_dataset(locomo_mini)
    turns = sum(len(c.turns) for c in dataset.conversations)
    plan = LangMem.cost_plan({"mode": "manager", "top_k": 10, "query_limit": 5}, dataset, 10)
    assert plan.lines[0].calls == turns and plan.lines[1].calls == 2 * turns
    agent = LangMem.cost_plan({"mode": "agent", "top_k": 10}, dataset, 10)
    assert agent.lines[0].calls == 2 * turns and agent.lines[0].prompt > plan.lines[0].prompt
    assert not [line for line in agent.lines if line.stage == "search"] and agent.embeds_queries
    # Agent retrieval: per question and speaker a search call and a reply, each carrying the thread.
    asked = LangMem.cost_plan({"mode": "agent", "retrieval": "agent", "top_k": 10}, dataset, 10)
    (chat,) = [line for line in asked.lines if line.stage == "search" and line.completion > 0]
    assert chat.calls == 2 * 2 * 10 and not asked.embeds_queries
    on_manager = LangMem.cost_plan({"mode": "manager", "retrieval": "agent"}, dataset, 10)
    assert chat.prompt > [line for line in on_manager.lines if line.stage == "search"][0].prompt  # no thread
    assert asked.context_tokens < plan.context_tokens  # two short replies, not 2 x top_k memories


def test_bad_settings_are_one_clear_error(tmp_path):
    from mem0bench.memory.base import SystemContext
    from mem0bench.systems.external.langmem.system import LangMem

    context = SystemContext(client=None, state_dir=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode"):
        LangMem(mode="chat", context=context)
    with pytest.raises(ValueError, match="top_k"):
        LangMem(top_k=0, context=context)
    with pytest.raises(ValueError, match="retrieval"):
        LangMem(retrieval="ask", context=context)


# ---- issue 38: method.store_clock ------------------------------------------------------------------------


def test_store_clock_wall_leaves_the_store_on_the_machines_clock():
    """`seeded(seed, None)` (store_clock=wall): ids still repeat, the store's clock is the wall clock."""
    from datetime import UTC

    from mem0bench.systems.external.langmem import determinism
    from mem0bench.systems.external.langmem.library import load_library

    load_library()
    import langgraph.store.memory as store_module
    import langmem.knowledge.extraction as extraction

    with determinism.seeded("conv:1:D1:1", None):
        first = extraction.uuid.uuid4()
        stamp = store_module.datetime.now(UTC)
    with determinism.seeded("conv:1:D1:1", None):
        assert extraction.uuid.uuid4() == first
    assert abs((stamp - datetime.now(UTC)).total_seconds()) < 60


@pytest.mark.slow
def test_store_clock_decides_the_dates_the_agent_sees(tmp_path, standin, locomo_mini):
    """The paper's agent sees its stored items (with their timestamps) in its prompt: with the default
    `session` clock they carry the conversation's date (5 August 2023), with `wall` (the reference's) today's."""
    standin.set_handler(reply)
    today = f"{datetime.now():%Y-%m-%d}"

    def agent_prompts(name: str, *extra: str) -> list[str]:
        start = len(standin.requests)
        result, _ = _tiny(standin, tmp_path, locomo_mini, name, "eval.max_questions=1", *extra)
        assert result.returncode == 0, result.stderr[-3000:]
        bodies = [b for ep, b in list(standin.requests)[start:] if ep == "chat" and b.get("tools")]
        return [str(b["messages"][0]["content"]) for b in bodies if "created_at" in str(b["messages"][0])]

    session = agent_prompts("session")
    wall = agent_prompts("wall", "method.store_clock=wall")
    assert session and wall
    assert any("2023-08-05" in p for p in session) and not any(today in p for p in session)
    assert any(today in p for p in wall) and not any("2023-08-05" in p for p in wall)
