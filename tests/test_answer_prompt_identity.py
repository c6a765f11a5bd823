"""Every system answers with the same prompt and model and is graded by the same judge: only the retrieved
context differs.

Three levels: the prompt builders (two contexts of one kind differ only inside <context>...</context>; the
kind changes only its one intro sentence), the judge stage (a judgement never reads what the system
retrieved), and whole runs through the CLI against the stand-in, where the answer and judge requests the
server received are compared question by question between a reference system and each other system.
Add a system to `OTHER_SYSTEMS` to cover it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
from devtools.standin.amem_replies import amem_replies
from devtools.standin.langmem_replies import reply as langmem_reply
from devtools.standin.mem0_oss_replies import mem0_handler
from devtools.standin.server import StandinServer, Text
from mem0bench.data.context import ContextKind, RetrievedContext
from mem0bench.llm.types import StructuredReply, StructuredSpec, Usage
from mem0bench.pipeline.judge import JudgeSettings, judge_once
from mem0bench.prompts.answer import _CONTEXT_INTRO, ANSWER_PROMPTS, build_answer_messages
from mem0bench.prompts.judge import JUDGE_PROMPTS, JUDGE_SPEC
from mem0bench.rundir.records import AnswerRecord

KINDS: tuple[ContextKind, ...] = get_args(ContextKind)
_CONTEXT_BLOCK = re.compile(r"<context>\n.*\n</context>", re.DOTALL)
_QUESTION = re.compile(r"\nQuestion: (.*)\nAnswer:$", re.DOTALL)


def without_context(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with the <context> block's inside replaced by a placeholder (exactly one block)."""
    out = []
    for message in messages:
        content = message["content"]
        replaced, n = _CONTEXT_BLOCK.subn("<context>\n[CONTEXT]\n</context>", content)
        assert n <= 1, content
        out.append({**message, "content": replaced})
    assert sum("[CONTEXT]" in m["content"] for m in out) == 1, messages
    return out


def without_intro(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with the kind's intro sentence (a function of the context kind alone) replaced."""
    out = []
    for message in messages:
        content = message["content"]
        for intro in _CONTEXT_INTRO.values():
            content = content.replace(intro, "[INTRO]")
        out.append({**message, "content": content})
    return out


def _context(kind: ContextKind, text: str, **kw: Any) -> RetrievedContext:
    return RetrievedContext(kind=kind, text=text, tokens=len(text.split()), **kw)


# ------------------------------------------------------------------ the prompt builders


@pytest.mark.parametrize("prompt", ANSWER_PROMPTS)
@pytest.mark.parametrize("kind", KINDS)
def test_two_contexts_of_one_kind_differ_only_inside_the_context_block(kind, prompt) -> None:
    question = "When did Maya adopt her dog?"
    one = _context(kind, "Notes about Maya:\n- [8 May, 2023] Maya adopted a dog.", items=1)
    two = _context(
        kind,
        "(1:56 pm on 8 May, 2023) Tomas: a whole other text\n\nwith </contex> lookalikes and Question: lines",
        source_dia_ids=("D1:1", "D1:2"),
        search_latency_s=0.4,
        local_search_s=0.1,
        items=7,
    )
    a = build_answer_messages(question, one, prompt=prompt)
    b = build_answer_messages(question, two, prompt=prompt)
    assert a != b
    assert without_context(a) == without_context(b)
    # The context goes in verbatim, once.
    assert sum(m["content"].count(one.text) for m in a) == 1


def test_the_kind_changes_only_its_intro_sentence_in_the_default_prompt() -> None:
    question = "Where does Tomas work?"
    built = {kind: build_answer_messages(question, _context(kind, f"some {kind} text")) for kind in KINDS}
    assert set(_CONTEXT_INTRO) == set(KINDS)  # every kind has its sentence
    normalised = {kind: without_intro(without_context(m)) for kind, m in built.items()}
    first = normalised[KINDS[0]]
    assert all(n == first for n in normalised.values())
    for kind, messages in built.items():
        assert sum(m["content"].count(_CONTEXT_INTRO[kind]) for m in messages) == 1


class _RecordingJudge:
    """The client surface judge_once uses: records every request, answers CORRECT."""

    def __init__(self) -> None:
        self.requests: list[tuple[list[dict[str, Any]], StructuredSpec, dict[str, Any]]] = []

    async def structured(self, messages: Any, spec: StructuredSpec, **kw: Any) -> StructuredReply:
        self.requests.append((messages, spec, kw))
        return StructuredReply(data={"reasoning": "same", "label": "CORRECT"}, usage=Usage())


@pytest.mark.parametrize("prompt", JUDGE_PROMPTS)
def test_a_judgement_never_reads_what_the_system_retrieved(prompt) -> None:
    common = dict(
        qid="mini-1:q0", conversation="mini-1", question="What did Maya adopt?", gold="a dog",
        category="single_hop", category_id=4, prediction="A dog named Biscuit",
    )  # fmt: skip
    rag = AnswerRecord(
        **common, context_tokens=512, search_latency_s=0.2, total_latency_s=0.9, local_search_s=0.01,
        context_dia_ids=("D1:1",), usage={"search": [1, 5, 0]}, context="(date) Maya: ...", cached=False,
    )  # fmt: skip
    notes = AnswerRecord(
        **common, context_tokens=4000, search_latency_s=None, total_latency_s=2.5, context_dia_ids=(),
        usage={"answer": [1, 4000, 5]}, context="Notes about Maya:\n- ...", cached=True,
    )  # fmt: skip
    settings = JudgeSettings(model="gpt-4o-mini", runs=2, prompt=prompt)
    client = _RecordingJudge()
    for record in (rag, notes):
        for run in range(2):
            asyncio.run(judge_once(client, settings, record, run))  # type: ignore[arg-type]
    rag_requests, notes_requests = client.requests[:2], client.requests[2:]
    assert rag_requests == notes_requests  # messages, spec, stage, salt and model alike
    assert all(spec.name == JUDGE_SPEC.name for _, spec, _ in client.requests)


# ------------------------------------------------------------------ whole runs against the stand-in

REFERENCE = "rag"
CONSTANT_ANSWER = "I do not know"
Replies = Callable[[str, dict[str, Any]], Any]


@dataclass(frozen=True)
class System:
    """An experiment compared with the reference, and what its run needs from the test."""

    exp: str
    replies: Replies | None = None
    """The library's own reply formats (tests/standin/<system>_replies.py), for its ingestion calls."""
    falkordb: bool = False
    """The experiment keeps its graph in a FalkorDB server (the session's test server)."""


OTHER_SYSTEMS = [
    System("full_context"),
    System("mem0"),
    System("mem0g"),
    System("chatgpt_memory_emulation"),
    System("mem0_oss", replies=mem0_handler()),
    System("mem0_oss_graph", replies=mem0_handler()),
    System("langmem", replies=langmem_reply),
    System("amem", replies=amem_replies),
    System("zep_graphiti", falkordb=True),
]
"""Every system is compared with the reference: add a new one here."""


def _is_answer(endpoint: str, body: dict[str, Any]) -> bool:
    if endpoint != "chat" or body.get("tools") or body.get("response_format"):
        return False
    return any("<context>\n" in str(m.get("content")) for m in body.get("messages", []))


def _is_judge(endpoint: str, body: dict[str, Any]) -> bool:
    tools = body.get("tools") or []
    return endpoint == "chat" and any(t.get("function", {}).get("name") == JUDGE_SPEC.name for t in tools)


def _run(
    exp: str, root: Path, locomo: Path, replies: Replies | None = None, extra: Sequence[str] = ()
) -> dict[str, Any]:
    """One run; the answer requests by question (context and intro replaced) and the judge requests."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(endpoint: str, body: dict[str, Any]) -> Any:
        seen.append((endpoint, json.loads(json.dumps(body))))
        # Every system gets the same answer, so the judge requests can be compared whole. The answer
        # does not depend on the question: the stand-in stays as ignorant as it always is.
        if _is_answer(endpoint, body):
            return Text(CONSTANT_ANSWER)
        return replies(endpoint, body) if replies is not None else None

    run_dir = root / exp / "run"
    args = [
        "run", f"+exp={exp}", f"dataset.path={locomo}", "dataset.conversations=[mini-1]",
        "eval.max_questions=4", "judge.runs=2", f"hydra.run.dir={run_dir}", *FAST, *extra,
    ]  # fmt: skip
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(handler)
        # Each run its own cache: a shared one would answer the second run's judge requests unseen.
        result = run_cli(args, cli_env(server.base_url, root / exp / "cache"))
    assert result.returncode == 0, result.stderr[-3000:]
    answers: dict[str, dict[str, Any]] = {}
    for endpoint, body in seen:
        if _is_answer(endpoint, body):
            last = body["messages"][-1]["content"]
            question = _QUESTION.search(last)
            assert question is not None, last
            body["messages"] = without_intro(without_context(body["messages"]))
            assert answers.setdefault(question.group(1), body) == body  # a retried request is the same
    judges = sorted(json.dumps(body, sort_keys=True) for endpoint, body in seen if _is_judge(endpoint, body))
    sampling = json.loads((run_dir / "metrics.json").read_text())["sampling"]
    return {"answers": answers, "judges": judges, "sampling": sampling}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, locomo_mini) -> dict[str, Any]:
    return _run(REFERENCE, tmp_path_factory.mktemp("reference"), locomo_mini)


@pytest.mark.slow
@pytest.mark.parametrize("system", OTHER_SYSTEMS, ids=lambda s: s.exp)
def test_answer_and_judge_requests_are_the_same_as_the_reference_systems(
    system: System, reference, tmp_path, locomo_mini, request
):
    extra: list[str] = []
    if system.falkordb:
        server = request.getfixturevalue("falkordb_server")
        extra = [f"graph.host={server.host}", f"graph.port={server.port}"]
    other = _run(system.exp, tmp_path, locomo_mini, system.replies, extra)
    assert len(reference["answers"]) == 4 and set(other["answers"]) == set(reference["answers"])
    for question, body in reference["answers"].items():
        # Byte-identical outside the context block and the kind's intro sentence: model, temperature,
        # token limit, system message, rules, question.
        assert json.dumps(other["answers"][question], sort_keys=True) == json.dumps(body, sort_keys=True)
    # Equal predictions get byte-identical judge requests, whichever system made them.
    assert len(reference["judges"]) >= 4 * 2
    assert other["judges"] == reference["judges"]
    # metrics.json shows the sampling parameters each stage's requests set: the same for the answer and
    # the judge, whatever each system's own steps (a library's included) asked for.
    for stage in ("answer", "judge"):
        assert other["sampling"][stage] == reference["sampling"][stage] != []
    assert all(isinstance(rows, list) and rows for rows in other["sampling"].values())
