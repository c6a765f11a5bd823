"""Mem0 against a scripted in-test client: Algorithm 1, guards, failures, schedule, logs, resume, retrieval."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mem0bench.cli.memories import memories_main
from mem0bench.data.loader import parse_session_date
from mem0bench.data.model import Conversation, Question, Session, Turn
from mem0bench.llm.types import CallFailure, ChatReply, LLMCallError, StructuredReply, StructuredSpec
from mem0bench.memory.base import MemorySystem, SystemContext
from mem0bench.memory.graph import InProcessGraphStore
from mem0bench.memory.records import MemoryOp, OpKind
from mem0bench.prompts.extraction import EXTRACTION_SPEC, role_of
from mem0bench.prompts.update import BATCH_UPDATE_NAME, UPDATE_SPEC
from mem0bench.suites.locomo import SINGLE_HOP
from mem0bench.systems.methods.mem0 import Mem0, adds_information
from mem0bench.systems.methods.mem0g import Mem0G
from mem0bench.tokens import count_tokens
from tests.fakes import CHAT, FakeCall, PromptInputs, ScriptedLLM, bow_embed

DATES = ["1:00 pm on 1 May, 2023", "9:30 am on 20 May, 2023", "4:15 pm on 2 June, 2023"]

Decision = Callable[[list[dict[str, str]], str], Any]

# ---- the fake client ---------------------------------------------------------------------------------


PROMPT_BUILDERS = (
    ("mem0bench.systems.methods.mem0.extraction", "build_extraction_messages"),
    ("mem0bench.systems.methods.mem0.update", "build_update_messages"),
    ("mem0bench.systems.methods.mem0.update", "build_batch_update_messages"),
    ("mem0bench.systems.methods.mem0.summary", "build_summary_messages"),
)
_inputs = PromptInputs()


@pytest.fixture(autouse=True)
def typed_prompt_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every FakeClient of a test reads the inputs Mem0's prompts were built from, not their wording."""
    global _inputs
    _inputs = PromptInputs()
    for module, builder in PROMPT_BUILDERS:
        _inputs.capture(monkeypatch, module, builder)


def extraction_info(inputs: dict[str, Any]) -> dict[str, Any]:
    """What an extraction prompt was built from: its owner, summary, earlier and new turns (each turn as
    date, role, speaker name and text)."""
    user, shared = inputs["user"], inputs.get("shared", False)

    def line(turn: Turn, date: str) -> dict[str, str]:
        return {"date": date, "role": role_of(turn, user, shared), "name": turn.speaker, "text": turn.text}

    return {
        "owner": user,
        "summary": inputs["summary"].strip(),
        "earlier": [line(t, d) for t, d in zip(inputs["previous"], inputs["previous_dates"])],
        "new": [line(t, inputs["session_date"]) for t in inputs["pair"]],
    }


def shown_memories(inputs: dict[str, Any]) -> list[dict[str, str]]:
    """The existing memories an update prompt showed, with their short ids."""
    return [{"id": sid, "text": text, "date": date} for sid, text, date in inputs["memories"]]


def ref(memories: list[dict[str, str]], text: str) -> str:
    return next(m["id"] for m in memories if m["text"] == text)


def default_facts(info: dict[str, Any]) -> list[str]:
    """Facts are what the store's user says after 'FACT:' ('|' separates several)."""
    facts = []
    for line in info["new"]:
        if line["role"] == "user" and "FACT:" in line["text"]:
            facts += [f.strip() for f in line["text"].split("FACT:", 1)[1].split("|")]
    return facts


def default_decision(memories: list[dict[str, str]], fact: str) -> dict[str, Any]:
    if any(m["text"] == fact for m in memories):
        return {"event": "NOOP", "id": None, "text": None}
    return {"event": "ADD", "id": None, "text": None}


def failure(kind: str = "malformed") -> LLMCallError:
    return LLMCallError(CallFailure(stage="ingest", kind=kind, message=f"scripted {kind}", attempts=1))


class FakeClient(ScriptedLLM):
    """The shared scripted fake, scripted by functions of the prompts' typed inputs (so replies do not
    depend on call order), with optional random delays to shuffle completion order."""

    def __init__(
        self,
        *,
        facts: Callable[[dict[str, Any]], Any] = default_facts,
        decide: Decision | None = None,
        rules: dict[str, Decision] | None = None,
        summarize: Callable[[str, list[str]], Any] | None = None,
        seed: int | None = None,
    ) -> None:
        super().__init__(embed=bow_embed, inputs=_inputs)
        self.facts = facts
        self.decide = decide or default_decision
        self.rules = rules or {}
        self.summarize = summarize or (
            lambda prev, lines: (prev + " | " if prev else "") + f"upto {lines[-1]}"
        )
        self.rng = random.Random(seed) if seed is not None else None
        self.extractions: list[dict[str, Any]] = []
        self.updates: list[tuple[list[dict[str, str]], str]] = []
        self.summaries: list[tuple[str, list[str]]] = []
        self.batches: list[tuple[list[dict[str, str]], list[str]]] = []
        self.on(EXTRACTION_SPEC.name, self._extract).on(UPDATE_SPEC.name, self._update)
        self.on(BATCH_UPDATE_NAME, self._batch).on(CHAT, self._summary)

    @property
    def embeds(self) -> list[tuple[list[str], str]]:
        return self.embedded

    async def _pause(self, scale: float = 0.004) -> None:
        if self.rng is not None:
            await asyncio.sleep(self.rng.uniform(0, scale))

    async def structured(
        self, messages: list[dict[str, Any]], spec: StructuredSpec, *, stage: str, **_: Any
    ) -> StructuredReply:
        assert stage == "ingest"
        await self._pause()
        return await super().structured(messages, spec, stage=stage)

    async def chat(self, messages: list[dict[str, Any]], *, stage: str, **_: Any) -> ChatReply:
        await self._pause(0.03)  # summaries are slow: pairs often have to wait for them
        return await super().chat(messages, stage=stage)

    async def embed(self, texts: Sequence[str], *, stage: str) -> np.ndarray:
        await self._pause()
        return await super().embed(texts, stage=stage)

    def _extract(self, call: FakeCall) -> Any:
        # The system prompt is kept only for tests asserting what it tells the model (the session date).
        info = {**extraction_info(call.inputs), "system": call.messages[0]["content"]}
        self.extractions.append(info)
        result = self.facts(info)
        return result if isinstance(result, Exception) else {"facts": result}

    def _update(self, call: FakeCall) -> Any:
        memories, fact = shown_memories(call.inputs), call.inputs["fact"]
        self.updates.append((memories, fact))
        return self.rules.get(fact, self.decide)(memories, fact)

    def _batch(self, call: FakeCall) -> Any:
        """Batched update: the same per-fact rules, each fact decided against the whole shown union."""
        memories, facts = shown_memories(call.inputs), list(call.inputs["facts"])
        self.batches.append((memories, facts))
        operations = []
        for i, fact in enumerate(facts):
            result = self.rules.get(fact, self.decide)(memories, fact)
            if isinstance(result, Exception):
                return result
            operations.append({"fact": i, **result})
        return {"operations": operations}

    def _summary(self, call: FakeCall) -> Any:
        prev = call.inputs["previous_summary"].strip()
        # The period's lines as the system rendered them ("[date] speaker: text"): the fake keeps the text.
        lines = [line.split(": ", 1)[1] for line in call.inputs["lines"]]
        self.summaries.append((prev, lines))
        return self.summarize(prev, lines)


# ---- conversations -----------------------------------------------------------------------------------


def make_conversation(sessions: list[list[tuple[str, str]]], sample_id: str = "conv-t") -> Conversation:
    built = []
    for si, turns in enumerate(sessions, start=1):
        date = DATES[(si - 1) % len(DATES)]
        built.append(
            Session(
                index=si,
                date_time=parse_session_date(date),
                date_text=date,
                turns=tuple(
                    Turn(speaker, f"D{si}:{ti}", text) for ti, (speaker, text) in enumerate(turns, 1)
                ),
            )
        )
    return Conversation(sample_id, "Ann", "Bob", tuple(built), ())


def question(text: str) -> Question:
    return Question("conv-t:q0", "conv-t", 0, text, "x", SINGLE_HOP)


def make_system(client: FakeClient, state_dir: Path, **kwargs: Any) -> Mem0:
    return Mem0(context=SystemContext(client=client, state_dir=state_dir), **kwargs)  # type: ignore[arg-type]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def write_config(run_dir: Path, system: type) -> None:
    """The part of a run's config.yaml that `memories` reads: the system class."""
    target = f"{system.__module__}.{system.__qualname__}"
    (run_dir / "config.yaml").write_text(
        f"method:\n  _target_: {target}\n  name: {system.__name__.lower()}\n"
    )


def ops_of(state_dir: Path, slug: str = "ann", sample: str = "conv-t") -> list[MemoryOp]:
    path = state_dir / sample / f"{slug}.ops.jsonl"
    return [MemoryOp.from_dict(json.loads(x)) for x in path.read_text().splitlines()]


def texts(system: Mem0, speaker: str = "Ann") -> list[str]:
    return [r.text for r in system.snapshot("conv-t")[speaker]]


# ---- Algorithm 1 -------------------------------------------------------------------------------------


def test_is_a_memory_system(tmp_path: Path) -> None:
    assert isinstance(make_system(FakeClient(), tmp_path), MemorySystem)


def test_add_and_noop(tmp_path: Path) -> None:
    conv = make_conversation(
        [
            [
                ("Ann", "FACT: Ann likes tea | Ann lives in Oslo"),
                ("Bob", "nice"),
                ("Ann", "FACT: Ann likes tea"),
            ]
        ]
    )
    system = make_system(FakeClient(), tmp_path)
    report = run(system.ingest(conv))
    records = system.snapshot("conv-t")["Ann"]
    assert [r.text for r in records] == ["Ann likes tea", "Ann lives in Oslo"]
    assert records[0].created_at == DATES[0] and records[0].source_dia_ids == ("D1:1", "D1:2")
    assert records[0].id == "ann-0001"
    assert [op.kind for op in ops_of(tmp_path)] == [OpKind.ADD, OpKind.ADD, OpKind.NOOP]
    assert system.snapshot("conv-t")["Bob"] == []  # Bob said no FACT: his store stays empty
    assert report.details["ops.ADD"] == 2 and report.details["ops.NOOP"] == 1
    assert report.details["memories"] == 2 and report.failures == 0
    expected = (
        "Memories of Ann:\n"
        + "\n".join(f"- [{DATES[0]}] {t}" for t in texts(system))
        + "\n\nMemories of Bob:\n(no memories)"
    )
    assert report.memory_tokens == count_tokens(expected)


def test_add_with_text_embeds_the_text(tmp_path: Path) -> None:
    conv = make_conversation([[("Ann", "FACT: ann likes tea")]])
    client = FakeClient(decide=lambda mems, fact: {"event": "ADD", "id": None, "text": "Ann likes green tea"})
    system = make_system(client, tmp_path)
    run(system.ingest(conv))
    assert texts(system) == ["Ann likes green tea"]
    assert ["Ann likes green tea"] in [t for t, _ in client.embeds]


UPDATE_SESSIONS = [
    [("Ann", "FACT: Ann has a dog"), ("Bob", "ok")],
    [("Ann", "FACT: Ann has a dog named Rex"), ("Bob", "cute")],
]


def test_update_replaces_when_more_informative(tmp_path: Path) -> None:
    rules: dict[str, Decision] = {
        "Ann has a dog named Rex": lambda m, f: {"event": "UPDATE", "id": ref(m, "Ann has a dog"), "text": f}
    }
    system = make_system(FakeClient(rules=rules), tmp_path)
    run(system.ingest(make_conversation(UPDATE_SESSIONS)))
    (record,) = system.snapshot("conv-t")["Ann"]
    assert record.text == "Ann has a dog named Rex" and record.id == "ann-0001"
    assert record.created_at == DATES[0] and record.updated_at == DATES[1]
    assert record.source_dia_ids == ("D1:1", "D1:2", "D2:1", "D2:2")
    op = ops_of(tmp_path)[-1]
    assert op.kind is OpKind.UPDATE and op.before == "Ann has a dog" and op.after == "Ann has a dog named Rex"
    # The vector moved with the text.
    store = system._stores["conv-t"]["Ann"]
    assert store.search(bow_embed("Rex"), 1)[0][0].id == "ann-0001"


def test_update_rejected_by_the_information_guard(tmp_path: Path) -> None:
    sessions = [[("Ann", "FACT: Ann has a dog named Rex")], [("Ann", "FACT: Ann has a dog")]]
    rules: dict[str, Decision] = {
        "Ann has a dog": lambda m, f: {
            "event": "UPDATE",
            "id": ref(m, "Ann has a dog named Rex"),
            "text": "Ann has a dog.",
        }
    }
    system = make_system(FakeClient(rules=rules), tmp_path)
    report = run(system.ingest(make_conversation(sessions)))
    (record,) = system.snapshot("conv-t")["Ann"]
    assert record.text == "Ann has a dog named Rex" and record.updated_at == DATES[0]
    op = ops_of(tmp_path)[-1]
    assert op.kind is OpKind.UPDATE_REJECTED and op.requested == "UPDATE" and op.after == "Ann has a dog."
    assert report.details["ops.UPDATE_REJECTED"] == 1


def test_guard_function() -> None:
    assert adds_information("Ann has a dog named Rex", "Ann has a dog")
    assert not adds_information("ann has A DOG!", "Ann has a dog named Rex")
    assert not adds_information("The dog is Ann’s", "Ann's dog")
    assert not adds_information("Ann's dog", "Ann has a dog")
    assert adds_information("Ann is not vegan", "Ann is vegan")
    assert adds_information("Ann moved to Oslo in 2022", "Ann moved to Oslo")


def test_contradiction_replaces_and_keeps_the_newest_state(tmp_path: Path) -> None:
    sessions = [[("Ann", "FACT: Ann lives in Oslo")], [("Ann", "FACT: Ann moved away from Oslo")]]
    rules: dict[str, Decision] = {
        "Ann moved away from Oslo": lambda m, f: {
            "event": "REPLACE",
            "id": ref(m, "Ann lives in Oslo"),
            "text": None,
        }
    }
    system = make_system(FakeClient(rules=rules), tmp_path)
    report = run(system.ingest(make_conversation(sessions)))
    (record,) = system.snapshot("conv-t")["Ann"]
    assert record.text == "Ann moved away from Oslo" and record.id == "ann-0002"
    assert record.created_at == record.updated_at == DATES[1] and record.source_dia_ids == ("D2:1",)
    op = ops_of(tmp_path)[-1]
    assert op.kind is OpKind.REPLACE and (op.memory_id, op.replaced_id) == ("ann-0002", "ann-0001")
    assert (op.before, op.after) == ("Ann lives in Oslo", "Ann moved away from Oslo")
    assert op.session_date == DATES[1] and op.source_dia_ids == ("D2:1",) and op.requested_id == "0"
    assert report.details["ops.REPLACE"] == 1 and "ops.DELETE" not in report.details
    # The old memory is gone from the index too: searching for it finds the new state.
    store = system._stores["conv-t"]["Ann"]
    assert [r.id for r, _ in store.search(bow_embed("Ann lives in Oslo"), 5)] == ["ann-0002"]


def test_replaced_memory_history_shows_its_replacement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = [[("Ann", "FACT: Ann lives in Oslo")], [("Ann", "FACT: Ann moved to Bergen")]]
    rules: dict[str, Decision] = {
        "Ann moved to Bergen": lambda m, f: {"event": "REPLACE", "id": ref(m, "Ann lives in Oslo"), "text": f}
    }
    run(make_system(FakeClient(rules=rules), tmp_path / "run" / "state").ingest(make_conversation(sessions)))
    write_config(tmp_path / "run", Mem0)
    argv = [str(tmp_path / "run"), "--conversation", "conv-t", "--speaker", "ann", "--history"]
    assert memories_main([*argv, "ann-0001"]) == 0
    out = capsys.readouterr().out
    assert out.index("ADD") < out.index("REPLACE") and "Ann lives in Oslo -> Ann moved to Bergen" in out


def test_delete_without_replacement_is_counted(tmp_path: Path) -> None:
    sessions = [[("Ann", "FACT: Ann lives in Oslo")], [("Ann", "FACT: Ann never lived in Oslo")]]
    rules: dict[str, Decision] = {
        "Ann never lived in Oslo": lambda m, f: {
            "event": "DELETE",
            "id": ref(m, "Ann lives in Oslo"),
            "text": None,
        }
    }
    system = make_system(FakeClient(rules=rules), tmp_path)
    report = run(system.ingest(make_conversation(sessions)))
    assert texts(system) == []
    op = ops_of(tmp_path)[-1]
    assert op.kind is OpKind.DELETE and op.memory_id == "ann-0001" and op.before == "Ann lives in Oslo"
    assert op.session_date == DATES[1] and op.source_dia_ids == ("D2:1",)
    assert report.details["ops.DELETE"] == 1
    from mem0bench.pipeline.aggregate import deletes_without_replacement

    assert deletes_without_replacement([report.details, {"pairs": 3}]) == 1
    assert deletes_without_replacement([{"chunks": 4}]) is None  # not a memory system


def test_invented_ids(tmp_path: Path) -> None:
    sessions = [[("Ann", "FACT: Ann likes tea")], [("Ann", "FACT: Ann likes green tea | Ann hates coffee")]]
    rules: dict[str, Decision] = {
        "Ann likes green tea": lambda m, f: {
            "event": "UPDATE",
            "id": "7",
            "text": "Ann likes green tea a lot",
        },
        "Ann hates coffee": lambda m, f: {"event": "DELETE", "id": "42", "text": None},
    }
    system = make_system(FakeClient(rules=rules), tmp_path)
    report = run(system.ingest(make_conversation(sessions)))
    assert texts(system) == ["Ann likes tea", "Ann likes green tea a lot"]
    invented = [op for op in ops_of(tmp_path) if op.kind is OpKind.INVENTED_ID]
    assert [(op.requested, op.requested_id, op.memory_id) for op in invented] == [
        ("UPDATE", "7", "ann-0002"),
        ("DELETE", "42", None),
    ]
    assert report.details["ops.INVENTED_ID"] == 2 and report.failures == 0


def test_update_without_id_or_text_is_safe(tmp_path: Path) -> None:
    sessions = [[("Ann", "FACT: Ann likes tea")], [("Ann", "FACT: Ann likes black tea")]]
    rules: dict[str, Decision] = {
        "Ann likes black tea": lambda m, f: {"event": "UPDATE", "id": m[0]["id"], "text": None}
    }
    system = make_system(FakeClient(rules=rules), tmp_path)
    run(system.ingest(make_conversation(sessions)))
    assert texts(system) == ["Ann likes black tea"]  # no text: the fact itself is the new text


# ---- batched update (method.update=batched) ----------------------------------------------------------

BATCH_SESSIONS = [
    [("Ann", "FACT: Ann lives in Oslo | Ann has a dog"), ("Bob", "ok")],
    [("Ann", "FACT: Ann moved to Bergen | Ann has a dog named Rex | Ann likes tea"), ("Bob", "nice")],
]
BATCH_RULES: dict[str, Decision] = {
    "Ann moved to Bergen": lambda m, f: {"event": "REPLACE", "id": ref(m, "Ann lives in Oslo"), "text": f},
    "Ann has a dog named Rex": lambda m, f: {"event": "UPDATE", "id": ref(m, "Ann has a dog"), "text": f},
}


def test_batched_update_makes_one_call_per_pair_with_the_same_outcome(tmp_path: Path) -> None:
    per_fact_client = FakeClient(rules=BATCH_RULES)
    per_fact = make_system(per_fact_client, tmp_path / "a")
    run(per_fact.ingest(make_conversation(BATCH_SESSIONS)))
    client = FakeClient(rules=BATCH_RULES)
    batched = make_system(client, tmp_path / "b", update="batched")
    report = run(batched.ingest(make_conversation(BATCH_SESSIONS)))
    expected = ["Ann has a dog named Rex", "Ann moved to Bergen", "Ann likes tea"]
    assert sorted(texts(batched)) == sorted(texts(per_fact)) == sorted(expected)
    # Ann's two pairs with facts: two batched calls against five per-fact calls; Bob said no fact: none.
    assert len(client.batches) == 2 and client.updates == [] and len(per_fact_client.updates) == 5
    memories, facts = client.batches[1]
    assert facts == ["Ann moved to Bergen", "Ann has a dog named Rex", "Ann likes tea"]
    # The union of the facts' similar memories, each once, with short ids.
    assert sorted(m["text"] for m in memories) == ["Ann has a dog", "Ann lives in Oslo"]
    assert [m["id"] for m in memories] == ["0", "1"]
    kinds = [op.kind for op in ops_of(tmp_path / "b")]
    assert kinds == [OpKind.ADD, OpKind.ADD, OpKind.REPLACE, OpKind.UPDATE, OpKind.ADD]
    assert report.details["ops.REPLACE"] == 1 and report.failures == 0


def test_batched_update_guards_ids_facts_and_repeats(tmp_path: Path) -> None:
    sessions = [[("Ann", "FACT: Ann has a dog named Rex")], [("Ann", "FACT: Ann has a dog | Ann sings")]]

    def decide_batch(memories: list[dict[str, str]], fact: str) -> dict[str, Any]:
        if fact == "Ann has a dog":  # says less than the memory: the guard rejects the UPDATE
            return {"event": "UPDATE", "id": memories[0]["id"], "text": "Ann has a dog."}
        return {"event": "DELETE", "id": "9", "text": None}  # an invented id becomes a NOOP

    client = FakeClient(rules={"Ann has a dog": decide_batch, "Ann sings": decide_batch})
    system = make_system(client, tmp_path, update="batched")
    report = run(system.ingest(make_conversation(sessions)))
    assert texts(system) == ["Ann has a dog named Rex"]
    ops = ops_of(tmp_path)
    assert [op.kind for op in ops] == [OpKind.ADD, OpKind.UPDATE_REJECTED, OpKind.INVENTED_ID]
    assert ops[2].requested == "DELETE" and ops[2].fact == "Ann sings"
    assert report.failures == 0


def test_batched_update_malformed_items_and_left_out_facts(tmp_path: Path) -> None:
    sessions = [[("Ann", "FACT: Ann likes tea | Ann likes jazz | Ann likes rain")]]
    client = FakeClient()
    client.on(
        BATCH_UPDATE_NAME,
        lambda call: {
            "operations": [
                {"fact": 0, "event": "ADD", "id": None, "text": None},
                {"fact": 7, "event": "ADD", "id": None, "text": None},
                {"fact": 1, "event": "MERGE", "id": None, "text": None},
            ]
        },
    )
    system = make_system(client, tmp_path, update="batched")
    report = run(system.ingest(make_conversation(sessions)))
    assert texts(system) == ["Ann likes tea"]
    assert report.details["failures.update"] == 2
    left_out = [op for op in ops_of(tmp_path) if op.requested == "MISSING"]
    assert [(op.kind, op.fact) for op in left_out] == [
        (OpKind.NOOP, "Ann likes jazz"),
        (OpKind.NOOP, "Ann likes rain"),
    ]


def test_update_mode_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="update must be one of"):
        make_system(FakeClient(), tmp_path, update="bulk")


# ---- failures ----------------------------------------------------------------------------------------


def test_failed_and_malformed_calls_are_recorded_and_skipped(tmp_path: Path) -> None:
    def facts(info: dict[str, Any]) -> Any:
        if info["owner"] == "Ann" and "boom" in info["new"][0]["text"]:
            return failure("malformed")
        return default_facts(info)

    rules: dict[str, Decision] = {
        "Ann fails": lambda m, f: failure("bad_request"),
        "Ann confuses": lambda m, f: {"event": "MERGE", "id": None, "text": None},
    }
    sessions = [
        [("Ann", "FACT: Ann likes tea")],
        [("Ann", "boom FACT: Ann lost"), ("Bob", "hm")],
        [("Ann", "FACT: Ann fails | Ann confuses | Ann sings")],
    ]
    system = make_system(FakeClient(facts=facts, rules=rules), tmp_path)
    report = run(system.ingest(make_conversation(sessions)))
    assert texts(system) == ["Ann likes tea", "Ann sings"]
    assert report.failures == 3
    assert report.details["failures.extraction"] == 1 and report.details["failures.update"] == 2
    rows = system.failures
    assert {(r.stage, r.kind, r.pair_index) for r in rows} == {
        ("extraction", "malformed", 1),
        ("update", "bad_request", 2),
        ("update", "malformed", 2),
    }
    assert all(r.sample_id == "conv-t" and r.speaker == "Ann" and r.message for r in rows)
    json.dumps([r.to_dict() for r in rows])  # failures.jsonl-friendly
    # Deterministic failures do not block the done marker.
    assert (tmp_path / "conv-t" / "ann" / "done.json").is_file()


def test_transient_failure_leaves_no_done_marker_and_is_retried(tmp_path: Path) -> None:
    flaky = {"fail": True}

    def facts(info: dict[str, Any]) -> Any:
        if info["owner"] == "Ann" and flaky["fail"]:
            return failure("rate_limit")
        return default_facts(info)

    conv = make_conversation([[("Ann", "FACT: Ann likes tea")]])
    system = make_system(FakeClient(facts=facts), tmp_path)
    report = run(system.ingest(conv))
    assert report.details["failures.extraction"] == 1
    assert not (tmp_path / "conv-t" / "ann" / "done.json").exists()
    assert (tmp_path / "conv-t" / "bob" / "done.json").is_file()
    flaky["fail"] = False
    client = FakeClient(facts=facts)
    again = make_system(client, tmp_path)
    report = run(again.ingest(conv))
    assert report.failures == 0 and texts(again) == ["Ann likes tea"]
    assert all(info["owner"] == "Ann" for info in client.extractions)  # Bob's stream was restored


def test_failed_summary_keeps_previous(tmp_path: Path) -> None:
    turns = [("Ann" if i % 2 == 0 else "Bob", f"msg {i}") for i in range(14)]
    summarize = lambda prev, lines: failure("timeout") if lines[-1] == "msg 7" else f"upto {lines[-1]}"  # noqa: E731
    client = FakeClient(summarize=summarize)
    system = make_system(client, tmp_path, summary_every=2)
    report = run(system.ingest(make_conversation([turns])))
    seen = [info["summary"] for info in client.extractions if info["owner"] == "Ann"]
    # Pair p sees S_{(p - 1) // 2}. S_2 (pairs 0..3, ending on msg 7) failed: pairs 5 and 6 get S_1 again.
    assert seen == ["", "", "", "upto msg 3", "upto msg 3", "upto msg 3", "upto msg 3"]
    assert report.details["failures.summary"] == 2  # once per speaker stream


# ---- prompts: roles, dates, window, summary schedule ------------------------------------------------


def test_per_speaker_roles_and_session_date(tmp_path: Path) -> None:
    conv = make_conversation([[("Ann", "hi"), ("Bob", "hello")], [("Bob", "FACT: Bob runs"), ("Ann", "yes")]])
    client = FakeClient()
    run(make_system(client, tmp_path).ingest(conv))
    by_owner = {(i["owner"], i["new"][0]["text"]): i for i in client.extractions}
    ann, bob = by_owner[("Ann", "hi")], by_owner[("Bob", "hi")]
    assert [(x["role"], x["name"]) for x in ann["new"]] == [("user", "Ann"), ("assistant", "Bob")]
    assert [(x["role"], x["name"]) for x in bob["new"]] == [("assistant", "Ann"), ("user", "Bob")]
    later = by_owner[("Bob", "FACT: Bob runs")]
    assert all(x["date"] == DATES[1] for x in later["new"])
    assert f"sent on {DATES[1]}" in later["system"]
    assert "2 June" not in later["system"]
    assert [op.kind for op in ops_of(tmp_path, "bob")] == [OpKind.ADD]


def test_previous_m_messages_window(tmp_path: Path) -> None:
    sessions = [
        [("Ann", f"s1 m{i}") if i % 2 == 0 else ("Bob", f"s1 m{i}") for i in range(4)],
        [("Ann", "s2 m0"), ("Bob", "s2 m1")],
    ]
    client = FakeClient()
    run(make_system(client, tmp_path, m=3).ingest(make_conversation(sessions)))
    ann = [i for i in client.extractions if i["owner"] == "Ann"]
    assert ann[0]["earlier"] == []
    assert [x["text"] for x in ann[1]["earlier"]] == ["s1 m0", "s1 m1"]
    last = ann[2]["earlier"]
    assert [x["text"] for x in last] == ["s1 m1", "s1 m2", "s1 m3"]
    assert {x["date"] for x in last} == {DATES[0]}  # earlier turns keep their own session's date
    assert [x["role"] for x in last] == ["assistant", "user", "assistant"]
    client0 = FakeClient()
    run(make_system(client0, tmp_path / "m0", m=0).ingest(make_conversation(sessions)))
    assert all(i["earlier"] == [] for i in client0.extractions)


def _summary_run(state_dir: Path, seed: int) -> tuple[Mem0, FakeClient]:
    turns = [("Ann" if i % 2 == 0 else "Bob", f"msg {i} FACT: fact {i}") for i in range(20)]

    def facts(info: dict[str, Any]) -> list[str]:
        # Memories depend on the summary a pair saw, so a timing-dependent schedule would show up here.
        extra = [f"{info['owner']} knew {info['summary']}"] if info["summary"] else []
        return default_facts(info) + extra

    client = FakeClient(facts=facts, seed=seed)
    system = make_system(client, state_dir, summary_every=2)
    run(system.ingest(make_conversation([turns])))
    return system, client


def test_summary_schedule_is_deterministic(tmp_path: Path) -> None:
    first, client = _summary_run(tmp_path / "a", seed=1)
    second, _ = _summary_run(tmp_path / "b", seed=7)
    # Which summary each pair saw: S_{max((p - 1) // 2, 0)} (every 2, lag 1), where S_k covers pairs [0, 2k).
    seen = {
        i["new"][0]["text"].split(" FACT")[0]: i["summary"] for i in client.extractions if i["owner"] == "Ann"
    }
    s1, s2 = "upto msg 3 FACT: fact 3", "upto msg 3 FACT: fact 3 | upto msg 7 FACT: fact 7"
    s3 = s2 + " | upto msg 11 FACT: fact 11"
    s4 = s3 + " | upto msg 15 FACT: fact 15"
    assert [seen[f"msg {2 * p}"] for p in range(10)] == ["", "", "", s1, s1, s2, s2, s3, s3, s4]
    # Refresh 5 (started at pair 10) would only be seen by a pair 11, which does not exist: never started.
    assert len([s for s in client.summaries]) == 4 * 2
    for speaker in ("Ann", "Bob"):
        assert [r.to_dict() for r in first.snapshot("conv-t")[speaker]] == [
            r.to_dict() for r in second.snapshot("conv-t")[speaker]
        ]
    assert (tmp_path / "a/conv-t/ann.ops.jsonl").read_text() == (
        tmp_path / "b/conv-t/ann.ops.jsonl"
    ).read_text()
    meta = json.loads((tmp_path / "a/conv-t/ann/meta.json").read_text())
    assert meta["summaries"] == ["", s1, s2, s3, s4]


def test_default_schedule_leaves_no_pair_between_summary_and_window(tmp_path: Path) -> None:
    """With the default m, summary period and lag, every earlier pair of a stream is either in the summary
    a pair sees or in its window of the previous m messages (the old lagged schedule left 5-14 out)."""
    turns = [("Ann" if i % 2 == 0 else "Bob", f"msg {i}") for i in range(2 * 40)]
    client = FakeClient(seed=3)
    run(make_system(client, tmp_path).ingest(make_conversation([turns])))
    ann = sorted(
        (i for i in client.extractions if i["owner"] == "Ann"), key=lambda i: int(i["new"][0]["text"][4:])
    )
    assert len(ann) == 40
    for p, info in enumerate(ann):
        covered = [int(x) for x in re.findall(r"upto msg (\d+)", info["summary"])]
        last_summarized = covered[-1] if covered else -1
        first_in_window = int(info["earlier"][0]["text"][4:]) if info["earlier"] else 2 * p
        assert first_in_window <= last_summarized + 1, (
            f"pair {p}: msgs {last_summarized + 1}..{first_in_window - 1} lost"
        )
    assert client.summaries, "summaries are refreshed at all"


# ---- logs, snapshots, resume -------------------------------------------------------------------------


def test_ops_log_written_and_renamed(tmp_path: Path) -> None:
    conv = make_conversation([[("Ann", "FACT: Ann likes tea"), ("Bob", "FACT: Bob likes coffee")]])
    (tmp_path / "conv-t").mkdir()
    stale = tmp_path / "conv-t" / "ann.ops.jsonl.partial"
    stale.write_text("garbage from a crashed run\n")
    run(make_system(FakeClient(), tmp_path).ingest(conv))
    assert not stale.exists() and not list(tmp_path.glob("conv-t/*.partial"))
    for slug, text in (("ann", "Ann likes tea"), ("bob", "Bob likes coffee")):
        (op,) = ops_of(tmp_path, slug)
        assert op.kind is OpKind.ADD and op.after == text and op.pair_index == 0
        assert op.source_dia_ids == ("D1:1", "D1:2") and op.session_date == DATES[0]
        assert (tmp_path / "conv-t" / slug / "done.json").is_file()


def test_snapshot_reload_makes_no_calls(tmp_path: Path) -> None:
    conv = make_conversation([[("Ann", "FACT: Ann likes tea"), ("Bob", "FACT: Bob likes coffee")]])
    first = make_system(FakeClient(), tmp_path)
    report = run(first.ingest(conv))
    client = FakeClient()
    second = make_system(client, tmp_path)
    again = run(second.ingest(conv))
    assert client.calls == [] and client.embeds == []
    assert again == report
    assert {k: [r.to_dict() for r in v] for k, v in second.snapshot("conv-t").items()} == {
        k: [r.to_dict() for r in v] for k, v in first.snapshot("conv-t").items()
    }
    # A fresh instance can also retrieve straight from the snapshots.
    third_client = FakeClient()
    third = make_system(third_client, tmp_path)
    context = run(third.retrieve(conv, question("tea")))
    assert "Ann likes tea" in context.text and third_client.embeds == [(["tea"], "search")]


def test_retrieve_top_k_per_speaker(tmp_path: Path) -> None:
    sessions = [
        [
            ("Ann", "FACT: Ann likes tea | Ann plays chess | Ann owns a red bike"),
            ("Bob", "FACT: Bob likes tea | Bob swims"),
        ],
        [("Bob", "FACT: Bob drinks green tea daily"), ("Ann", "ok")],
    ]
    conv = make_conversation(sessions)
    client = FakeClient()
    system = make_system(client, tmp_path, top_k=2)
    run(system.ingest(conv))
    client.embeds.clear()
    context = run(system.retrieve(conv, question("Who likes tea?")))
    assert client.embeds == [(["Who likes tea?"], "search")]
    assert context.kind == "memories"
    ann_part, bob_part = context.text.split("\n\n")
    ann_lines, bob_lines = ann_part.splitlines(), bob_part.splitlines()
    assert ann_lines[0] == "Memories of Ann:" and bob_lines[0] == "Memories of Bob:"
    assert ann_lines[1] == f"- [{DATES[0]}] Ann likes tea" and len(ann_lines) == 3
    assert bob_lines[1] == f"- [{DATES[0]}] Bob likes tea" and len(bob_lines) == 3
    assert (
        set(context.source_dia_ids) <= {"D1:1", "D1:2", "D2:1", "D2:2"} and "D1:1" in context.source_dia_ids
    )
    assert context.tokens == count_tokens(context.text)
    assert context.search_latency_s is not None and context.local_search_s is not None


def test_retrieve_before_ingest_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="not ingested"):
        run(make_system(FakeClient(), tmp_path).retrieve(make_conversation([[("Ann", "x")]]), question("q")))


def test_shared_store(tmp_path: Path) -> None:
    facts = lambda info: [line["text"].split("FACT: ")[1] for line in info["new"] if "FACT: " in line["text"]]  # noqa: E731
    conv = make_conversation([[("Ann", "FACT: Ann likes tea"), ("Bob", "FACT: Bob swims")]])
    client = FakeClient(facts=facts)
    system = make_system(client, tmp_path, per_speaker=False)
    run(system.ingest(conv))
    (info,) = client.extractions
    assert [x["role"] for x in info["new"]] == ["user", "user"]
    assert [r.text for r in system.snapshot("conv-t")["shared"]] == ["Ann likes tea", "Bob swims"]
    assert (tmp_path / "conv-t" / "shared.ops.jsonl").is_file()
    context = run(system.retrieve(conv, question("tea")))
    assert context.text.startswith("Memories of Ann and Bob:\n")


def test_hooks_run_per_pair(tmp_path: Path) -> None:
    seen: list[tuple[str, int]] = []

    class WithHook(Mem0):
        async def ingest_pair_extra(self, ctx):  # type: ignore[no-untyped-def]
            seen.append((ctx.speaker, ctx.index))

    conv = make_conversation([[("Ann", "a"), ("Bob", "b"), ("Ann", "c")]])
    run(WithHook(context=SystemContext(client=FakeClient(), state_dir=tmp_path)).ingest(conv))  # type: ignore[arg-type]
    assert sorted(seen) == [("Ann", 0), ("Ann", 1), ("Bob", 0), ("Bob", 1)]


# ---- the memories command ----------------------------------------------------------------------------


def test_memories_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules: dict[str, Decision] = {
        "Ann has a dog named Rex": lambda m, f: {"event": "UPDATE", "id": ref(m, "Ann has a dog"), "text": f}
    }
    run_dir = tmp_path / "run"
    run(make_system(FakeClient(rules=rules), run_dir / "state").ingest(make_conversation(UPDATE_SESSIONS)))
    write_config(run_dir, Mem0)  # the run's config.yaml names its system, which `memories` asks

    assert memories_main([str(run_dir), "--conversation", "conv-t"]) == 0
    out = capsys.readouterr().out
    assert "== Ann: 1 memories" in out and "Ann has a dog named Rex" in out and DATES[1] in out
    assert "== Bob: 0 memories" in out

    assert (
        memories_main([str(run_dir), "--conversation", "conv-t", "--speaker", "ann", "--history", "ann-0001"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.index("ADD") < out.index("UPDATE") and "Ann has a dog -> Ann has a dog named Rex" in out

    assert memories_main([str(run_dir), "--conversation", "conv-t", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (
        doc[0]["speaker"] == "Ann"
        and doc[0]["memories"][0]["id"] == "ann-0001"
        and doc[0]["relations"] is None
    )

    assert memories_main([str(run_dir), "--conversation", "conv-99"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "conv-t" in err and "Traceback" not in err
    assert memories_main([str(tmp_path / "nope"), "--conversation", "conv-t"]) == 2
    assert "not found" in capsys.readouterr().err
    assert memories_main([str(run_dir), "--conversation", "conv-t", "--speaker", "Zed"]) == 2
    assert "Ann" in capsys.readouterr().err
    assert memories_main([str(run_dir), "--conversation", "conv-t", "--history", "nope-1"]) == 2

    # Relations are shown when the speaker has a graph snapshot (a Mem0^g run), invalid ones with their date.
    write_config(run_dir, Mem0G)
    graph = InProcessGraphStore()
    ann = graph.add_node("Ann", "person", bow_embed("Ann"), DATES[0])
    rex = graph.add_node("Rex", "pet", bow_embed("Rex"), DATES[0])
    owns = graph.add_edge(ann, "owns", rex, bow_embed("Ann owns Rex"), DATES[0], ["D1:1"])
    graph.invalidate(owns.id, DATES[1])
    graph.save(run_dir / "state/conv-t/ann/graph")
    assert memories_main([str(run_dir), "--conversation", "conv-t", "--speaker", "Ann"]) == 0
    out = capsys.readouterr().out
    assert "Ann -[owns]-> Rex" in out and f"invalid since {DATES[1]}" in out
    assert memories_main([str(run_dir), "--conversation", "conv-t", "--speaker", "Ann", "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["relations"] == [
        {"source": "Ann", "relation": "owns", "destination": "Rex", "valid": False,
         "created_at": DATES[0], "invalidated_at": DATES[1]}
    ]  # fmt: skip


def test_batched_spec_asks_for_one_operation_per_fact() -> None:
    from mem0bench.prompts.update import batch_update_spec

    operations = batch_update_spec(3).parameters["properties"]["operations"]
    assert (operations["minItems"], operations["maxItems"]) == (3, 3)
    assert (
        operations["items"]["properties"]["fact"]["minimum"],
        operations["items"]["properties"]["fact"]["maximum"],
    ) == (0, 2)
    assert "REPLACE" in operations["items"]["properties"]["event"]["enum"]
