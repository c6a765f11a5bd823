"""Mem0's ingestion through the shared scripted fake: replies come from the prompts' typed inputs (the
pair's turns, the memories shown to a decision), never from the prompts' wording."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mem0bench.data.loader import parse_session_date
from mem0bench.data.model import Conversation, Session, Turn
from mem0bench.memory.base import SystemContext
from mem0bench.prompts.extraction import EXTRACTION_SPEC
from mem0bench.prompts.update import UPDATE_SPEC
from mem0bench.systems.methods.mem0 import Mem0
from tests.fakes import CHAT, FakeCall, ScriptedLLM

DATE = "1:56 pm on 8 May, 2023"


def conversation() -> Conversation:
    lines = [("Ann", "FACT: Ann owns a red bike"), ("Bob", "nice"), ("Ann", "FACT: Ann owns a red bike")]
    turns = tuple(Turn(speaker, f"D1:{i}", text) for i, (speaker, text) in enumerate(lines, 1))
    session = Session(1, parse_session_date(DATE), DATE, turns)
    return Conversation("conv-t", "Ann", "Bob", (session,), ())


def facts_said(call: FakeCall) -> dict[str, Any]:
    """The store owner's 'FACT:' lines of the new pair, read from the turns the prompt was built from."""
    user = call.inputs["user"]
    pair = call.inputs["pair"]
    return {
        "facts": [
            t.text.split("FACT:", 1)[1].strip() for t in pair if t.speaker == user and "FACT:" in t.text
        ]
    }


def add_unless_known(call: FakeCall) -> dict[str, Any]:
    known = {text: sid for sid, text, _ in call.inputs["memories"]}
    if call.inputs["fact"] in known:
        return {"event": "NOOP", "id": known[call.inputs["fact"]], "text": None}
    return {"event": "ADD", "id": None, "text": None}


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> ScriptedLLM:
    fake = ScriptedLLM()
    fake.capture(monkeypatch, "mem0bench.systems.methods.mem0.extraction", "build_extraction_messages")
    fake.capture(monkeypatch, "mem0bench.systems.methods.mem0.update", "build_update_messages")
    fake.on(EXTRACTION_SPEC.name, facts_said).on(UPDATE_SPEC.name, add_unless_known)
    return fake.on(CHAT, lambda call: "summary")


def test_mem0_ingests_from_typed_prompt_inputs(tmp_path: Path, llm: ScriptedLLM) -> None:
    system = Mem0(context=SystemContext(client=llm, state_dir=tmp_path), m=2, summary_every=10)  # type: ignore[arg-type]
    report = asyncio.run(system.ingest(conversation()))
    assert report.failures == 0
    # Every extraction saw its pair's session date and turns as typed values.
    extractions = llm.routed(EXTRACTION_SPEC.name)
    assert extractions and all(call.inputs["session_date"] == DATE for call in extractions)
    # The repeated fact was shown to its decision as an existing memory and kept once.
    decisions = [call.inputs["fact"] for call in llm.routed(UPDATE_SPEC.name)]
    assert decisions.count("Ann owns a red bike") == 2
    assert [r.text for r in system.snapshot("conv-t")["Ann"]] == ["Ann owns a red bike"]


def test_an_unscripted_route_fails_loudly(tmp_path: Path) -> None:
    fake = ScriptedLLM()
    with pytest.raises(AssertionError, match="no scripted reply"):
        asyncio.run(fake.chat([{"role": "user", "content": "hi"}], stage="answer"))
