"""chatgpt_memory_emulation: dated notes per speaker, the token cap, persistence, failures, and a CLI run."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, assert_ingest_failures_stay_open, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from mem0bench.common.errors import ConfigurationError
from mem0bench.data.loader import load_dataset
from mem0bench.data.model import Conversation, Question, Session, Turn
from mem0bench.llm.types import CallFailure, LLMCallError
from mem0bench.memory.base import MemorySystem, SystemContext
from mem0bench.memory.ingest_progress import listening
from mem0bench.prompts.saved_notes import NOTES_SPEC, parse_notes
from mem0bench.suites.locomo import SINGLE_HOP
from mem0bench.systems.baselines.chatgpt_memory_emulation.notes import (
    Note,
    cap_notes,
    newest_within,
    render_notes,
)
from mem0bench.systems.baselines.chatgpt_memory_emulation.system import ChatGPTMemoryEmulation
from mem0bench.tokens import count_tokens
from tests.fakes import FakeCall, ScriptedLLM
from tests.strict_schema import strict_violations

SYSTEM_MODULE = "mem0bench.systems.baselines.chatgpt_memory_emulation.system"
ROUTE = "save_notes"


def make_conversation(sessions: int = 3, turns: int = 4, sample_id: str = "conv-c") -> Conversation:
    built = []
    for s in range(1, sessions + 1):
        session_turns = tuple(
            Turn("Alice" if j % 2 else "Bob", f"D{s}:{j}", f"session {s} turn {j} about hobby {s}")
            for j in range(1, turns + 1)
        )
        built.append(Session(s, datetime(2023, 5, s, 13, 56), f"1:56 pm on {s} May, 2023", session_turns))
    question = Question(f"{sample_id}:q0", sample_id, 0, "What does Alice like?", "hobbies", SINGLE_HOP)
    return Conversation(sample_id, "Alice", "Bob", tuple(built), (question,))


def one_note_each(call: FakeCall) -> dict[str, Any]:
    """A note naming the person and the session's date, read from the prompt's typed inputs."""
    inputs = call.inputs
    return {"notes": [f"{inputs['person']} talked on {inputs['session_date']}."]}


def make_system(tmp_path: Path, llm: ScriptedLLM, **kw: Any) -> ChatGPTMemoryEmulation:
    """The dated variant (style=dated) unless `style` is given: most tests below pin that option."""
    context = SystemContext(client=llm, state_dir=tmp_path / "state")  # type: ignore[arg-type]
    return ChatGPTMemoryEmulation(context=context, **{"style": "dated", **kw})


def scripted(monkeypatch: pytest.MonkeyPatch, handler: Any = one_note_each) -> ScriptedLLM:
    llm = ScriptedLLM().on(ROUTE, handler)
    llm.capture(monkeypatch, SYSTEM_MODULE, "build_notes_messages")
    return llm


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


# ------------------------------------------------------------------ rendering and the cap


def _notes(n: int) -> list[Note]:
    """n notes, oldest first, alternating speakers, one session per pair of notes."""
    speakers = ("Alice", "Bob")
    return [
        Note(speakers[i % 2], i // 2 + 1, f"{i // 2 + 1} May, 2023", f"note number {i}") for i in range(n)
    ]


def test_notes_are_rendered_per_speaker_with_their_dates() -> None:
    text = render_notes(_notes(4), ["Alice", "Bob"])
    assert text == (
        "Notes about Alice:\n- [1 May, 2023] note number 0\n- [2 May, 2023] note number 2\n\n"
        "Notes about Bob:\n- [1 May, 2023] note number 1\n- [2 May, 2023] note number 3"
    )
    assert (
        render_notes([], ["Alice", "Bob"]) == "Notes about Alice:\n(no notes)\n\nNotes about Bob:\n(no notes)"
    )
    # A note's own newlines never break the one-note-a-line layout.
    note = Note("Alice", 1, "1 May, 2023", "two\nlines")
    assert "- [1 May, 2023] two lines" in render_notes([note], ["Alice", "Bob"])


def test_the_cap_drops_the_oldest_notes_first_and_counts_them() -> None:
    notes = _notes(40)
    whole = cap_notes(notes, ["Alice", "Bob"], None)
    assert whole.dropped == 0 and len(whole.kept) == 40 and whole.tokens == count_tokens(whole.text)
    assert cap_notes(notes, ["Alice", "Bob"], 0).dropped == 0  # 0: no cap
    cap = whole.tokens // 2
    capped = cap_notes(notes, ["Alice", "Bob"], cap)
    assert capped.tokens <= cap and capped.tokens == count_tokens(capped.text)
    assert 0 < capped.dropped < 40 and capped.kept == tuple(notes[capped.dropped :])  # the newest stay
    # The fewest are dropped: one more note would not fit.
    assert count_tokens(render_notes(notes[capped.dropped - 1 :], ["Alice", "Bob"])) > cap
    # The quick path for the note writer keeps the same notes as the exact one.
    for limit in (None, 30, 100, cap, whole.tokens, whole.tokens + 100):
        assert newest_within(notes, ["Alice", "Bob"], limit) == cap_notes(notes, ["Alice", "Bob"], limit).kept
    # A cap below even one note keeps none and says so.
    empty = cap_notes(notes, ["Alice", "Bob"], 5)
    assert empty.kept == () and empty.dropped == 40


def test_the_notes_come_back_as_a_strict_json_list() -> None:
    assert NOTES_SPEC.name == ROUTE and NOTES_SPEC.mode is None  # the form follows llm.structured
    assert strict_violations(NOTES_SPEC.parameters) == []
    assert NOTES_SPEC.parameters["properties"]["notes"]["type"] == "array"
    assert parse_notes({"notes": [" Maya  likes tea. ", "maya likes tea.", "", 3]}) == [
        "Maya likes tea.",
        "3",
    ]
    assert parse_notes({}) == [] and parse_notes({"notes": None}) == []


# ------------------------------------------------------------------ ingestion with a scripted model


def test_ingest_writes_dated_notes_per_speaker_kept_across_sessions(tmp_path, monkeypatch) -> None:
    llm = scripted(monkeypatch)
    system = make_system(tmp_path, llm)
    assert isinstance(system, MemorySystem) and system.name == "chatgpt_memory_emulation"
    conv = make_conversation(sessions=3)
    units: list[int] = []
    with listening(units.append):
        report = run(system.ingest(conv))

    calls = llm.routed(ROUTE)
    assert len(calls) == 6 and {c.stage for c in calls} == {"ingest"}  # one per session per speaker
    assert sum(units) == system.ingest_units(conv) == 2 * 2 * 3  # pairs x speakers
    alice = [c.inputs for c in calls if c.inputs["person"] == "Alice"]
    assert [c["session_date"] for c in alice] == [s.date_text for s in conv.sessions]
    assert all(c["other"] == "Bob" and c["max_notes"] == 8 for c in alice)
    # Each call sees the notes the person already has: carried across sessions, with their dates.
    assert alice[0]["saved"] == []
    assert alice[2]["saved"] == [
        ("1:56 pm on 1 May, 2023", "Alice talked on 1:56 pm on 1 May, 2023."),
        ("1:56 pm on 2 May, 2023", "Alice talked on 1:56 pm on 2 May, 2023."),
    ]
    assert [t.dia_id for t in alice[1]["turns"]] == [t.dia_id for t in conv.sessions[1].turns]

    assert report.failures == 0
    assert report.details["notes"] == 6 and report.details["notes.Alice"] == report.details["notes.Bob"] == 3
    assert report.details["dropped_notes"] == 0 and report.details["notes_in_context"] == 6
    context = run(system.retrieve(conv, conv.questions[0]))
    assert context.kind == "notes" and context.items == 6
    assert context.tokens == count_tokens(context.text) == report.memory_tokens
    assert context.search_latency_s is None  # no search: every note goes in
    assert context.text.startswith("Notes about Alice:\n- [1:56 pm on 1 May, 2023] Alice talked on")
    assert "Notes about Bob:\n- [1:56 pm on 1 May, 2023] Bob talked on" in context.text
    assert set(context.source_dia_ids) == {t.dia_id for t in conv.turns}


def test_finished_notes_are_restored_and_a_cleared_folder_is_rebuilt(tmp_path, monkeypatch) -> None:
    conv = make_conversation(sessions=2)
    first = scripted(monkeypatch)
    report = run(make_system(tmp_path, first).ingest(conv))
    again = scripted(monkeypatch)
    restored = make_system(tmp_path, again)
    reopened = run(restored.ingest(conv))
    assert reopened == replace(report, restored=True) and again.calls == []  # nothing asked again
    assert run(restored.retrieve(conv, conv.questions[0])).items == 4
    # retrieve alone (a process that only answers) reads the finished notes too.
    assert run(make_system(tmp_path, again).retrieve(conv, conv.questions[0])).items == 4
    # Other settings wrote other notes: not trusted, written again.
    run(make_system(tmp_path, again, max_notes_per_session=2).ingest(conv))
    assert len(again.routed(ROUTE)) == 4
    # A folder without its done marker (a killed ingest) is rebuilt from the start.
    done = next((tmp_path / "state" / conv.sample_id).rglob("done.json"))
    done.unlink()
    fresh = scripted(monkeypatch)
    assert run(make_system(tmp_path, fresh).ingest(conv)) == report and len(fresh.routed(ROUTE)) == 4


def test_the_cap_applies_at_question_time_and_dropped_notes_are_counted(tmp_path, monkeypatch) -> None:
    def many(call: FakeCall) -> dict[str, Any]:
        i = call.inputs
        return {"notes": [f"{i['person']} fact {k} from {i['session_date']}" for k in range(5)]}

    conv = make_conversation(sessions=4)
    llm = scripted(monkeypatch, many)
    system = make_system(tmp_path, llm, max_context_tokens=150)
    report = run(system.ingest(conv))
    context = run(system.retrieve(conv, conv.questions[0]))
    assert report.details["notes"] == 40 and report.details["dropped_notes"] > 0
    assert context.items == 40 - report.details["dropped_notes"] == report.details["notes_in_context"]
    assert context.tokens <= 150 < report.memory_tokens  # the store is bigger than what goes in
    assert "4 May, 2023" in context.text and "1 May, 2023" not in context.text  # the oldest went first
    # The writer sees the person's notes under the same cap.
    last = [c.inputs for c in llm.routed(ROUTE) if c.inputs["person"] == "Alice"][-1]
    assert 0 < len(last["saved"]) < 15


def test_notes_over_the_per_session_limit_are_cut_and_counted(tmp_path, monkeypatch) -> None:
    def five(call: FakeCall) -> dict[str, Any]:
        return {"notes": [f"{call.inputs['person']} fact {k}" for k in range(5)] + ["  ", "dup", "DUP"]}

    system = make_system(tmp_path, scripted(monkeypatch, five), max_notes_per_session=3)
    report = run(system.ingest(make_conversation(sessions=1)))
    # Blank and repeated notes are dropped before the limit; 6 left a speaker, 3 kept.
    assert report.details["notes"] == 6 and report.details["notes_truncated"] == 6


@pytest.mark.parametrize(
    "failure",
    [
        LLMCallError(
            CallFailure(stage="ingest", kind="malformed", message="no JSON after 3 repairs", attempts=3)
        ),
        {"notes": "not a list"},  # a reply the client let through unshaped
    ],
    ids=["call_failed", "unshaped_reply"],
)
def test_failed_note_writing_is_counted_not_a_silent_empty_memory(tmp_path, monkeypatch, failure) -> None:
    def fail_bob_session_2(call: FakeCall) -> Any:
        if call.inputs["person"] == "Bob" and call.inputs["session_date"].startswith("1:56 pm on 2 "):
            return failure
        return one_note_each(call)

    conv = make_conversation(sessions=3)
    system = make_system(tmp_path, scripted(monkeypatch, fail_bob_session_2))
    report = run(system.ingest(conv))
    assert report.failures == 1 and report.details["failures.saved_notes"] == 1
    [row] = system.failures
    assert (row.system, row.sample_id, row.stage, row.kind, row.speaker) == (
        "chatgpt_memory_emulation",
        conv.sample_id,
        "saved_notes",
        "malformed",
        "Bob",
    )
    assert row.dia_ids == tuple(t.dia_id for t in conv.sessions[1].turns)
    assert row.message.startswith("session 2: ")
    # The stream went on: Bob's other sessions have their notes.
    assert report.details["notes.Bob"] == 2 and report.details["notes.Alice"] == 3
    # A deterministic failure does not withhold the done marker: a restore reports the same count.
    restored = make_system(tmp_path, scripted(monkeypatch))
    assert run(restored.ingest(conv)).failures == 1 and restored.failures == []


def test_a_transient_failure_leaves_the_notes_unfinished(tmp_path, monkeypatch) -> None:
    def rate_limited(call: FakeCall) -> Any:
        if call.inputs["person"] == "Alice":
            return LLMCallError(CallFailure(stage="ingest", kind="rate_limit", message="429", attempts=5))
        return one_note_each(call)

    conv = make_conversation(sessions=2)
    system = make_system(tmp_path, scripted(monkeypatch, rate_limited))
    report = run(system.ingest(conv))
    assert report.failures == 2 and {f.kind for f in system.failures} == {"rate_limit"}
    assert run(system.retrieve(conv, conv.questions[0])).items == 2  # the run answers from what it has
    assert not list((tmp_path / "state").rglob("done.json"))  # the next run writes them again


def test_a_memory_with_no_notes_gives_an_empty_context(tmp_path, monkeypatch) -> None:
    system = make_system(tmp_path, scripted(monkeypatch, lambda call: {"notes": []}))
    conv = make_conversation(sessions=2)
    report = run(system.ingest(conv))
    context = run(system.retrieve(conv, conv.questions[0]))
    assert report.failures == 0 and report.details["notes"] == 0  # nothing worth saving is not a failure
    assert (context.text, context.tokens, context.items, context.source_dia_ids) == ("", 0, 0, ())


def test_bad_settings_are_refused(tmp_path) -> None:
    for bad in ({"max_context_tokens": -1}, {"max_context_tokens": "4k"}, {"max_notes_per_session": 0}):
        with pytest.raises(ValueError, match="chatgpt_memory_emulation"):
            make_system(tmp_path, ScriptedLLM(), **bad)


def test_cost_plan_is_one_call_per_session_per_speaker(locomo_mini) -> None:
    dataset = load_dataset(str(locomo_mini))
    plan = ChatGPTMemoryEmulation.cost_plan({"style": "dated", "max_context_tokens": 4437}, dataset, 10)
    sessions = sum(len([s for s in c.sessions if s.turns]) for c in dataset.conversations)
    [line] = plan.lines
    assert line.stage == "ingest" and line.calls == 2 * sessions and "assumes" in line.what
    assert 0 < plan.context_tokens <= 4437 and not plan.embeds_queries


# ------------------------------------------------------------------ the reference (default) and exported memories

MEMORY_ROUTE = "save_memories"


def reference_system(tmp_path: Path, llm: ScriptedLLM, **kw: Any) -> ChatGPTMemoryEmulation:
    context = SystemContext(client=llm, state_dir=tmp_path / "state")  # type: ignore[arg-type]
    return ChatGPTMemoryEmulation(context=context, **kw)


def test_the_default_is_the_reference_procedure_one_call_per_whole_session(tmp_path) -> None:
    def entries(call: FakeCall) -> dict[str, Any]:
        first = call.messages[-1]["content"].split("CONVERSATION:\n", 1)[1].splitlines()[0]
        return {"memories": [f"Memory from {first[:30]}", "Alice likes hobbies"]}

    llm = ScriptedLLM().on(MEMORY_ROUTE, entries)
    system = reference_system(tmp_path, llm)
    assert system.style == "reference" and system.max_context_tokens is None
    conv = make_conversation(sessions=3)
    report = run(system.ingest(conv))
    calls = llm.routed(MEMORY_ROUTE)
    assert len(calls) == 3 and llm.routed(ROUTE) == []  # one call per session, not per speaker
    for call, session in zip(calls, conv.sessions, strict=True):
        request = "\n".join(m["content"] for m in call.messages)
        # The whole session, both speakers, each line '(date) Speaker: text'.
        for turn in session.turns:
            assert f"({session.date_text}) {turn.speaker}: {turn.text}" in request
        assert {t.speaker for t in session.turns} == {"Alice", "Bob"}
        # The one fixed request: memory entries for each user with the timestamp; no date rule, no limit.
        assert "memory entries for each user" in request and "timestamp" in request
        assert "absolute" not in request.lower() and "at most" not in request.lower()
    assert "- Alice likes hobbies" in calls[1].messages[-1]["content"]  # the entries so far are shown
    # One list: the repeated entry kept once; no harness date, no per-speaker header, no cap.
    context = run(system.retrieve(conv, conv.questions[0]))
    assert context.items == report.details["notes"] == 4
    assert context.text.splitlines()[0] == "- Memory from (1:56 pm on 1 May, 2023) Alice"
    assert "Notes about" not in context.text and "[1:56 pm" not in context.text
    assert context.tokens == count_tokens(context.text) == report.memory_tokens > 0


def test_the_reference_refuses_the_dated_variants_settings(tmp_path) -> None:
    for bad in ({"max_context_tokens": 4437}, {"max_notes_per_session": 8}, {"style": "weekly"}):
        with pytest.raises(ValueError, match="chatgpt_memory_emulation"):
            reference_system(tmp_path, ScriptedLLM(), **bad)
    dated = reference_system(tmp_path, ScriptedLLM(), style="dated")
    assert (dated.max_context_tokens, dated.max_notes_per_session) == (4437, 8)


def test_memories_exported_from_chatgpt_are_read_whole_per_conversation(tmp_path) -> None:
    folder = tmp_path / "memories"
    folder.mkdir()
    exported = "Alice likes pottery.\n\nBob moved to Lisbon in 2022.\n"
    (folder / "0.txt").write_text(exported)  # the paper's name: the conversation's position in the file
    (folder / "conv-x.txt").write_text("Alice has a dog.\n")  # or named by sample
    llm = ScriptedLLM()
    system = reference_system(tmp_path, llm, memories_file=str(folder))
    conv = make_conversation(sessions=2)
    report = run(system.ingest(conv))
    context = run(system.retrieve(conv, conv.questions[0]))
    assert llm.calls == [] and report.failures == 0  # no model call: the memories are ChatGPT's own
    assert context.text == exported and context.items == 2 and context.tokens == report.memory_tokens
    other = make_conversation(sessions=1, sample_id="conv-x")
    other = replace(other, position=5)
    assert run(
        reference_system(tmp_path, llm, memories_file=str(folder)).retrieve(other, other.questions[0])
    ).text == ("Alice has a dog.\n")
    missing = replace(make_conversation(sessions=1, sample_id="conv-y"), position=7)
    with pytest.raises(
        ConfigurationError, match=r"no memories for sample conv-y in .*7\.txt and conv-y\.txt"
    ):
        run(system.ingest(missing))
    with pytest.raises(ConfigurationError, match="not a folder"):
        reference_system(tmp_path, llm, memories_file=str(tmp_path / "nowhere"))


# ------------------------------------------------------------------ end to end through the CLI


def _cli(tmp_path: Path, server: StandinServer, locomo: Path, *extra: str) -> tuple[Any, Path]:
    run_dir = tmp_path / "run"
    args = [
        "run", "+exp=chatgpt_memory_emulation", f"dataset.path={locomo}", "dataset.conversations=[mini-1]",
        "eval.max_questions=4", "judge.runs=2", f"hydra.run.dir={run_dir}", *FAST, *extra,
    ]  # fmt: skip
    return run_cli(args, cli_env(server.base_url, tmp_path / "cache")), run_dir


@pytest.mark.slow
def test_cli_run_end_to_end_and_a_rerun_pays_nothing(tmp_path, locomo_mini) -> None:
    with StandinServer(api_key=TEST_KEY) as server:
        result, run_dir = _cli(tmp_path, server, locomo_mini, "method.style=dated")
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr

        metrics = json.loads((run_dir / "metrics.json").read_text())
        assert metrics["method"] == "chatgpt_memory_emulation" and metrics["n_questions"] == 4
        assert metrics["tokens"]["llm"]["ingest"]["calls"] == 3 * 2  # mini-1: 3 sessions x 2 speakers
        assert metrics["tokens"]["llm"]["answer"]["calls"] == 4
        assert metrics["tokens"]["memory_store_per_conversation"]["mini-1"] > 0
        rows = read_jsonl(run_dir / "predictions.jsonl")
        assert len(rows) == 4 and all(len(r["judge"]) == 2 for r in rows)
        assert all(r["context_tokens"] > 0 for r in rows)
        [ingest] = read_jsonl(run_dir / "ingest.jsonl")
        details = ingest["details"]
        assert details["notes"] == details["notes.Maya"] + details["notes.Tomas"] > 0
        assert details["notes_in_context"] + details["dropped_notes"] == details["notes"]
        # Every question's context holds every kept note: items and tokens recorded per question.
        assert metrics["tokens"]["context_items_mean"] == details["notes_in_context"]
        assert metrics["empty_contexts"]["n"] == 0
        assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
        notes = json.loads(next((run_dir / "state" / "mini-1").rglob("notes.json")).read_text())
        assert len(notes) == details["notes"] and all(n["date"] for n in notes)
        answers = read_jsonl(run_dir / "answers.jsonl")
        assert all(a.get("context", "").startswith("Notes about Maya:") for a in answers)

        before = server.count("chat") + server.count("embeddings")
        again, _ = _cli(tmp_path, server, locomo_mini, "method.style=dated")
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.count("chat") + server.count("embeddings") == before  # all from files and cache


@pytest.mark.slow
def test_cli_counts_failed_note_writing_as_ingest_failures(tmp_path, locomo_mini) -> None:
    def malformed_notes(endpoint: str, body: dict[str, Any]) -> Any:
        tools = body.get("tools") or []
        if endpoint == "chat" and any(t.get("function", {}).get("name") == ROUTE for t in tools):
            return "malformed"  # arguments that break the schema or are not JSON, every time
        return None

    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(malformed_notes)
        result, run_dir = _cli(tmp_path, server, locomo_mini, "run.max_failure_rate=1", "method.style=dated")
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        first_ingest = read_jsonl(run_dir / "ingest.jsonl")
        # The same command again restores the saved state: the failed steps stay open (issue 25).
        again, _ = _cli(tmp_path, server, locomo_mini, "run.max_failure_rate=1", "method.style=dated")
    assert "Traceback" not in again.stderr, again.stderr[-3000:]
    assert read_jsonl(run_dir / "ingest.jsonl") == first_ingest
    assert_ingest_failures_stay_open(run_dir, again)
    failures = [f for f in read_jsonl(run_dir / "failures.jsonl") if f["stage"] == "ingest"]
    assert len(failures) == 6 and {f["step"] for f in failures} == {"saved_notes"}
    assert {f["kind"] for f in failures} == {"malformed"}
    [ingest] = read_jsonl(run_dir / "ingest.jsonl")
    assert ingest["failures"] == 6 and ingest["details"]["notes"] == 0
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["failures"]["ingest"] == 6
    # No notes: every context is empty, counted, and the run says so instead of passing for a score.
    assert metrics["empty_contexts"] == {"n": 4, "of": 4, "share": 1.0}
    assert "had an empty retrieved context" in result.stdout + result.stderr
