"""The paper's switches on Mem0 (method.ops, extraction_source, memory_style, memory_date): golden tests of
the requests a scripted model receives.

At the defaults the requests are pinned byte for byte (a sha256 of every request Mem0 sent for one
conversation, taken before the switches existed): a default run keeps its cache keys. Each switch then
changes exactly the requests it should, and only in the part it should.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from mem0bench.llm.types import StructuredReply, StructuredSpec
from mem0bench.memory.records import OpKind
from mem0bench.pipeline.aggregate import memory_decision_counts
from tests.test_mem0 import (  # noqa: F401  (typed_prompt_inputs: autouse, the fakes read prompt inputs)
    DATES,
    Decision,
    FakeClient,
    make_conversation,
    make_system,
    ops_of,
    question,
    ref,
    run,
    texts,
    typed_prompt_inputs,
)

SESSIONS = [
    [("Ann", "FACT: Ann lives in Oslo | Ann has a dog"), ("Bob", "FACT: Bob likes tea")],
    [("Ann", "FACT: Ann moved to Bergen | Ann has a dog named Rex"), ("Bob", "nice")],
]


def rules(event: str) -> dict[str, Decision]:
    return {
        "Ann moved to Bergen": lambda m, f: {"event": event, "id": ref(m, "Ann lives in Oslo"), "text": f},
        "Ann has a dog named Rex": lambda m, f: {"event": "UPDATE", "id": ref(m, "Ann has a dog"), "text": f},
    }


class RecordingClient(FakeClient):
    """The scripted fake, keeping every structured request as sent (messages and the spec's schema)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.requests: list[dict[str, Any]] = []

    async def structured(
        self, messages: list[dict[str, Any]], spec: StructuredSpec, *, stage: str, **kw: Any
    ) -> StructuredReply:
        self.requests.append(
            {"name": spec.name, "description": spec.description, "parameters": spec.parameters,
             "messages": [dict(m) for m in messages]}
        )  # fmt: skip
        return await super().structured(messages, spec, stage=stage, **kw)


def requests_of(tmp_path: Path, event: str = "REPLACE", **options: Any) -> tuple[RecordingClient, Any]:
    client = RecordingClient(rules=rules(event))
    system = make_system(client, tmp_path, summary_every=100, **options)
    run(system.ingest(make_conversation(SESSIONS)))
    return client, system


def digest(requests: list[dict[str, Any]]) -> str:
    blob = json.dumps(requests, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def sorted_digest(requests: list[dict[str, Any]]) -> str:
    """The digest of the requests as a multiset (their order left out)."""
    return digest(sorted(requests, key=lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False)))


# Taken at commit c266a87 (before the switches) with the same scripted conversation.
DEFAULT_REQUESTS_SHA256 = "d1fa41e3daa7699a781de4f75dbaca5b91af806fad8dad1cf161ecae819718f2"


def test_defaults_send_the_requests_they_always_sent(tmp_path: Path) -> None:
    # In the order they were always sent pair by pair (lookahead 0); running extraction ahead (the default)
    # sends the same requests, only in another order.
    sequential, _ = requests_of(tmp_path / "sequential", lookahead=0)
    assert digest(sequential.requests) == DEFAULT_REQUESTS_SHA256
    client, _ = requests_of(tmp_path)
    assert sorted_digest(client.requests) == sorted_digest(sequential.requests)
    explicit, _ = requests_of(
        tmp_path / "explicit",
        ops="replace",
        extraction_source="both",
        memory_style="short",
        memory_date="updated",
    )
    assert explicit.requests == client.requests


def _split(requests: list[dict[str, Any]], name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return [r for r in requests if r["name"] == name], [r for r in requests if r["name"] != name]


def test_ops_paper_changes_only_the_update_requests_instructions_and_enum(tmp_path: Path) -> None:
    default, _ = requests_of(tmp_path / "d", event="DELETE")
    paper, system = requests_of(tmp_path / "p", event="DELETE", ops="paper")
    d_updates, d_rest = _split(default.requests, "decide_memory_operation")
    p_updates, p_rest = _split(paper.requests, "decide_memory_operation")
    assert p_rest == d_rest and len(p_updates) == len(d_updates) > 0
    for d, p in zip(d_updates, p_updates):
        assert p["messages"][1] == d["messages"][1]  # the fact and the memories shown: the same
        assert "REPLACE" in d["messages"][0]["content"] and "REPLACE" not in p["messages"][0]["content"]
        assert d["parameters"]["properties"]["event"]["enum"] == [
            "ADD",
            "UPDATE",
            "REPLACE",
            "DELETE",
            "NOOP",
        ]
        assert p["parameters"]["properties"]["event"]["enum"] == ["ADD", "UPDATE", "DELETE", "NOOP"]
    # DELETE only removes: Oslo is gone and nothing says Bergen.
    assert texts(system) == ["Ann has a dog named Rex"]
    assert [op.kind for op in ops_of(tmp_path / "p")].count(OpKind.DELETE) == 1


def test_ops_paper_rejects_a_replace_reply(tmp_path: Path) -> None:
    client, system = requests_of(tmp_path, event="REPLACE", ops="paper")
    assert texts(system) == ["Ann lives in Oslo", "Ann has a dog named Rex"]  # nothing replaced
    assert [f.kind for f in system.failures] == ["malformed"] and "REPLACE" in system.failures[0].message


def test_ops_paper_batched_schema_leaves_replace_out(tmp_path: Path) -> None:
    client, _ = requests_of(tmp_path, event="DELETE", ops="paper", update="batched")
    batches = [r for r in client.requests if r["name"] == "decide_memory_operations"]
    assert batches and all(
        b["parameters"]["properties"]["operations"]["items"]["properties"]["event"]["enum"]
        == ["ADD", "UPDATE", "DELETE", "NOOP"]
        for b in batches
    )


def test_extraction_source_owner_changes_only_the_extraction_instructions(tmp_path: Path) -> None:
    default, _ = requests_of(tmp_path / "d")
    owner, _ = requests_of(tmp_path / "o", extraction_source="owner")
    d_ex, d_rest = _split(default.requests, "record_facts")
    o_ex, o_rest = _split(owner.requests, "record_facts")
    assert o_rest == d_rest and len(o_ex) == len(d_ex) > 0
    for d, o in zip(d_ex, o_ex):
        assert o["messages"][1] == d["messages"][1] and o["parameters"] == d["parameters"]
        assert d["messages"][0] != o["messages"][0]
        assert "context only" in o["messages"][0]["content"]
        assert "including what" in d["messages"][0]["content"]


def test_memory_style_rich_changes_the_extraction_rule_and_field_description(tmp_path: Path) -> None:
    default, _ = requests_of(tmp_path / "d")
    rich, _ = requests_of(tmp_path / "r", memory_style="rich")
    d_ex, d_rest = _split(default.requests, "record_facts")
    r_ex, r_rest = _split(rich.requests, "record_facts")
    assert r_rest == d_rest
    for d, r in zip(d_ex, r_ex):
        assert r["messages"][1] == d["messages"][1]
        assert "One short sentence" in d["messages"][0]["content"]
        assert "One short sentence" not in r["messages"][0]["content"]
        assert "complete statement" in r["messages"][0]["content"]
        description = r["parameters"]["properties"]["facts"]["description"]
        assert (
            description != d["parameters"]["properties"]["facts"]["description"] and "context" in description
        )


def test_memory_date_created_shows_the_creation_date_of_an_updated_memory(tmp_path: Path) -> None:
    _, updated = requests_of(tmp_path / "u")
    _, created = requests_of(tmp_path / "c", memory_date="created")
    ask = question("Does Ann have a dog?")
    conv = make_conversation(SESSIONS)
    u_text = run(updated.retrieve(conv, ask)).text
    c_text = run(created.retrieve(conv, ask)).text
    assert f"- [{DATES[1]}] Ann has a dog named Rex" in u_text
    assert f"- [{DATES[0]}] Ann has a dog named Rex" in c_text
    # A memory never updated carries one date: the same line either way.
    assert f"- [{DATES[0]}] Bob likes tea" in u_text and f"- [{DATES[0]}] Bob likes tea" in c_text


def test_owner_source_needs_per_speaker_stores(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="per_speaker"):
        make_system(FakeClient(), tmp_path, extraction_source="owner", per_speaker=False)
    with pytest.raises(ValueError, match="ops must be one of"):
        make_system(FakeClient(), tmp_path, ops="mem0")


def test_metrics_count_invented_ids_and_guarded_and_rejected_updates(tmp_path: Path) -> None:
    sessions = [
        [("Ann", "FACT: Ann likes tea | Ann has a dog")],
        [("Ann", "FACT: Ann likes tea a lot | Ann has a dog too | Ann hates coffee")],
    ]
    decisions: dict[str, Decision] = {
        "Ann likes tea a lot": lambda m, f: {"event": "UPDATE", "id": ref(m, "Ann likes tea"), "text": f},
        "Ann has a dog too": lambda m, f: {
            "event": "UPDATE",
            "id": ref(m, "Ann has a dog"),
            "text": "Ann has dog",
        },
        "Ann hates coffee": lambda m, f: {"event": "DELETE", "id": "42", "text": None},
    }
    system = make_system(FakeClient(rules=decisions), tmp_path)
    report = run(system.ingest(make_conversation(sessions)))
    counts = memory_decision_counts([report.details])
    assert counts == {"invented_ids": 1, "rejected_updates": 1, "guarded_updates": 2}
    graph = {"pairs": 1, "graph.invented_ids": 2}
    assert memory_decision_counts([report.details, graph])["invented_ids"] == 3
    assert memory_decision_counts([{"chunks": 3}]) == dict.fromkeys(counts)


# ---- issue 38: the other systems' switches (answer prompts, classification, profiles) ----------------------


def _notes(text: str = "- [8 May 2023] Maya adopted a puppy") -> Any:
    from mem0bench.data.context import RetrievedContext

    return RetrievedContext(kind="notes", text=text, tokens=8, items=1)


def _user_text(messages: list[dict[str, Any]]) -> str:
    return str(messages[-1]["content"])


def test_zep_answer_prompt_says_what_zeps_own_prompt_instructs() -> None:
    from mem0bench.prompts.answer import build_answer_messages

    zep = build_answer_messages("When did Maya adopt a puppy?", _notes(), prompt="zep")
    paper = build_answer_messages("When did Maya adopt a puppy?", _notes(), prompt="paper")
    assert zep[0]["role"] == "system" and zep != paper
    text = _user_text(zep).lower()
    for instruction in ("most recent", "relative time", "not when someone mentioned it", "show the working",
                        "vet yesterday", "specific"):  # fmt: skip
        assert instruction in text, instruction
    assert "5 to 6 words" not in text  # Zep's prompt asks for no length
    assert _user_text(zep).endswith("Question: When did Maya adopt a puppy?\nAnswer:")


def test_amem_answer_prompt_follows_the_category_as_a_mems_did() -> None:
    """A-Mem's prompts: temporal questions answered with an approximate date from the conversation's dates;
    adversarial ones may be "Not mentioned in the conversation"; the rest a short phrase in the context's
    words. No gold answer reaches the prompt."""
    from mem0bench.prompts.answer import build_answer_messages
    from mem0bench.suites.locomo import ADVERSARIAL, MULTI_HOP, OPEN_DOMAIN, SINGLE_HOP, TEMPORAL

    def text(category: Any) -> str:
        return _user_text(build_answer_messages("Q?", _notes(), prompt="amem", category=int(category)))

    temporal, adversarial = text(TEMPORAL), text(ADVERSARIAL)
    assert "approximate date" in temporal and "dates of the conversation" in temporal
    assert "Not mentioned in the conversation" in adversarial and "approximate" not in adversarial
    plain = {text(c) for c in (MULTI_HOP, OPEN_DOMAIN, SINGLE_HOP)}
    assert len(plain) == 1 and "exact words of the context" in plain.pop()
    assert len({temporal, adversarial, text(SINGLE_HOP)}) == 3
    # The context comes before the instructions, as in A-Mem's prompts; the question last.
    assert temporal.index("</context>") < temporal.index("approximate date") < temporal.index("Question: Q?")


def test_the_answer_stage_passes_the_questions_category_to_the_prompt() -> None:
    """pipeline.answer_question hands the question's category to the prompt builder (amem reads it)."""
    import asyncio

    from mem0bench.llm.types import ChatReply, Usage
    from mem0bench.pipeline.answer import answer_question
    from mem0bench.suites.locomo import TEMPORAL

    class Notes:
        async def retrieve(self, conversation: Any, q: Any) -> Any:
            return _notes()

    class Recording:
        def __init__(self) -> None:
            self.sent: list[list[dict[str, Any]]] = []

        async def chat(self, messages: list[dict[str, Any]], **kw: Any) -> ChatReply:
            self.sent.append(messages)
            return ChatReply(text="May 2023", usage=Usage())

    client = Recording()
    temporal = question("When did Maya adopt a puppy?")
    temporal = type(temporal)(**{**temporal.__dict__, "category": TEMPORAL})
    conversation = make_conversation(SESSIONS)
    asyncio.run(answer_question(Notes(), client, conversation, temporal, prompt="amem"))  # type: ignore[arg-type]
    assert "approximate date" in _user_text(client.sent[0])


@pytest.mark.parametrize(
    ("key", "reach"),
    [
        ("method.extraction_date", "INGEST"),
        ("method.relation_dates", "ANSWER"),
        ("method.fact_dates", "INGEST"),
        ("method.library_temperature", "INGEST"),
        ("method.store_clock", "INGEST"),
        ("method.temperature", "INGEST"),
        ("answer.prompt", "ANSWER"),
    ],
)
def test_the_switches_change_results_and_reach_their_stages(key: str, reach: str) -> None:
    from mem0bench.pipeline.config_change import Reach, is_neutral, reach_of

    assert not is_neutral(key) and reach_of(key) == Reach[reach]
