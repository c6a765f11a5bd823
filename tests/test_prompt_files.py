"""Prompt files (answer.prompt_file, judge.prompt_file, method.extraction_prompt_file,
method.update_prompt_file): parsing, one-line errors, what is sent, the cache salt, run.json and judge-check."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from mem0bench.common.errors import ConfigurationError
from mem0bench.data.context import RetrievedContext
from mem0bench.llm.types import ChatReply, StructuredReply, StructuredSpec, Usage
from mem0bench.pipeline.answer import answer_question
from mem0bench.pipeline.judge import JudgeSettings, judge_once
from mem0bench.prompts.files import JUDGE_FIELDS, load_prompt_file, read_verdict
from mem0bench.rundir.records import AnswerRecord
from tests.test_mem0 import (  # noqa: F401  (typed_prompt_inputs: autouse, the fakes read prompt inputs)
    FakeClient,
    make_conversation,
    make_system,
    run,
    texts,
    typed_prompt_inputs,
)

# mem0's judge of the paper's time asked for a JSON object; a user copies such a template with its
# doubled braces, as written in Python source, and renames the fields.
JUDGE_JSON = """[verdict: json]
[system]
You grade answers.
[user]
Question: {question}
Gold answer: {gold}
Generated answer: {answer}
Reply with JSON only: {{"label": "CORRECT"}} or {{"label": "WRONG"}}.
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---- the file format ------------------------------------------------------------------------------------


def test_roles_fields_and_literal_braces(tmp_path: Path) -> None:
    path = write(tmp_path, "judge.txt", JUDGE_JSON)
    loaded = load_prompt_file("judge.prompt_file", path, JUDGE_FIELDS, JUDGE_FIELDS, judge=True)
    assert loaded.verdict == "json" and [role for role, _ in loaded.messages] == ["system", "user"]
    assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    messages = loaded.render(question="When?", gold="7 May", answer="May 7")
    assert messages[0] == {"role": "system", "content": "You grade answers."}
    assert messages[1]["content"].endswith('{"label": "CORRECT"} or {"label": "WRONG"}.')
    assert "Gold answer: 7 May" in messages[1]["content"]
    plain = load_prompt_file("answer.prompt_file", write(tmp_path, "a.txt", "Q: {question}\n{context}"),
                             frozenset({"question", "context"}), frozenset({"question", "context"}))  # fmt: skip
    assert plain.messages == (("user", "Q: {question}\n{context}"),) and plain.verdict == "tool"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Q: {question} G: {gold_answer} A: {answer}", "unknown field {gold_answer}"),
        ("Q: {question} A: {answer}", "has no {gold} field"),
        ("Q: {question} G: {gold} A: {answer} {", "literal brace"),
        ("Q: {question!r} G: {gold} A: {answer}", "no format spec"),
        ("[verdict: maybe]\n{question}{gold}{answer}", "unknown verdict 'maybe'"),
        ("[system]\n\n[user]\n", "is empty"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, "judge.txt", text)
    with pytest.raises(ConfigurationError) as caught:
        load_prompt_file("judge.prompt_file", path, JUDGE_FIELDS, JUDGE_FIELDS, judge=True)
    line = str(caught.value)
    assert "\n" not in line and f"judge.prompt_file={path}" in line and message in line


def test_missing_file_and_verdict_outside_a_judge(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read the prompt file"):
        load_prompt_file("answer.prompt_file", tmp_path / "nope.txt", JUDGE_FIELDS, frozenset())
    path = write(tmp_path, "a.txt", "[verdict: json]\n{question}")
    with pytest.raises(ConfigurationError, match="for judge.prompt_file only"):
        load_prompt_file("answer.prompt_file", path, frozenset({"question"}), frozenset())


@pytest.mark.parametrize(
    ("text", "verdict", "label"),
    [
        ('{"label": "CORRECT"}', "json", "CORRECT"),
        ('Sure: {"label": "wrong"}', "json", "WRONG"),
        ("CORRECT", "json", None),
        ("The answer is CORRECT.", "word", "CORRECT"),
        ("INCORRECT", "word", None),
        ("CORRECT or WRONG?", "word", None),
    ],
)
def test_read_verdict(text: str, verdict: Any, label: str | None) -> None:
    assert read_verdict(text, verdict) == label


# ---- what is sent -----------------------------------------------------------------------------------------


class Recorder:
    """A client that records chat and structured requests (messages, salt) and answers from a script."""

    def __init__(self, chat: str = "", data: dict[str, Any] | None = None) -> None:
        self.sent: list[dict[str, Any]] = []
        self.chat_text, self.data = chat, data or {}

    async def chat(self, messages: list[Any], *, stage: str, salt: str = "", **kw: Any) -> ChatReply:
        self.sent.append({"kind": "chat", "messages": messages, "salt": salt, **kw})
        return ChatReply(text=self.chat_text, usage=Usage())

    async def structured(
        self, messages: list[Any], spec: StructuredSpec, *, stage: str, salt: str = "", **kw: Any
    ) -> StructuredReply:
        self.sent.append({"kind": spec.name, "messages": messages, "salt": salt, **kw})
        return StructuredReply(data=self.data, usage=Usage())


ANSWER = AnswerRecord(
    qid="q1", conversation="c", question="When did Ann move?", gold="7 May 2023", category="temporal",
    category_id=2, prediction="May 7", context_tokens=1, search_latency_s=0.0, total_latency_s=0.0,
)  # fmt: skip


def test_judge_with_a_json_verdict_file(tmp_path: Path) -> None:
    path = write(tmp_path, "judge.txt", JUDGE_JSON)
    plain = JudgeSettings(model="m")
    settings = JudgeSettings(model="m", prompt_file=str(path))
    # Without a file the signature is the one every earlier run has; with one it changes.
    old = hashlib.sha256(json.dumps(["m", "lenient", "tool"], separators=(",", ":")).encode()).hexdigest()[
        :12
    ]
    assert plain.signature == old and settings.signature != old
    assert settings.prompt_name.startswith("file-judge-") and settings.name == f"m ({settings.prompt_name})"
    client = Recorder(chat='{"label": "CORRECT"}')
    judgement = asyncio.run(judge_once(client, settings, ANSWER, 3))  # type: ignore[arg-type]
    assert judgement.label == "CORRECT" and judgement.signature == settings.signature
    (sent,) = client.sent
    assert sent["kind"] == "chat" and sent["model"] == "m"
    assert sent["salt"] == f"judge-run-3|prompt-file:{settings.template.sha256}"  # type: ignore[union-attr]
    assert sent["messages"][1]["content"].startswith("Question: When did Ann move?\nGold answer: 7 May 2023")
    unreadable = asyncio.run(judge_once(Recorder(chat="yes"), settings, ANSWER, 0))  # type: ignore[arg-type]
    assert unreadable.label is None and unreadable.failure == "malformed: no json verdict in the reply"


def test_judge_file_with_the_tool_verdict_uses_the_function_call(tmp_path: Path) -> None:
    path = write(tmp_path, "j.txt", "Is {answer} right for {question} (gold {gold})?")
    settings = JudgeSettings(model="m", prompt_file=str(path))
    client = Recorder(data={"reasoning": "same day", "label": "WRONG"})
    judgement = asyncio.run(judge_once(client, settings, ANSWER, 0))  # type: ignore[arg-type]
    assert judgement.label == "WRONG" and client.sent[0]["kind"] == "record_verdict"
    assert client.sent[0]["messages"] == [
        {"role": "user", "content": "Is May 7 right for When did Ann move? (gold 7 May 2023)?"}
    ]
    # The plain judge's request and salt are untouched.
    plain = Recorder(data={"reasoning": "", "label": "CORRECT"})
    asyncio.run(judge_once(plain, JudgeSettings(model="m"), ANSWER, 0))  # type: ignore[arg-type]
    assert plain.sent[0]["salt"] == "judge-run-0"


class OneContext:
    async def retrieve(self, conversation: Any, question: Any) -> RetrievedContext:
        return RetrievedContext(kind="memories", text="- [8 May 2023] Ann moved to Bergen", tokens=5)


def test_answer_file_renders_question_and_context_and_salts_the_call(tmp_path: Path) -> None:
    from mem0bench.prompts.files import ANSWER_FIELDS

    path = write(tmp_path, "answer.txt", "[system]\nBe brief.\n[user]\n{context}\n\nQ: {question}")
    template = load_prompt_file("answer.prompt_file", path, ANSWER_FIELDS, ANSWER_FIELDS)
    conv = make_conversation([[("Ann", "hi")]])
    from tests.test_mem0 import question

    client = Recorder(chat="Bergen")
    record = asyncio.run(
        answer_question(OneContext(), client, conv, question("Where?"), template=template)  # type: ignore[arg-type]
    )
    assert record.prediction == "Bergen"
    assert client.sent[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "- [8 May 2023] Ann moved to Bergen\n\nQ: Where?"},
    ]
    assert client.sent[0]["salt"] == template.salt


class SaltedFake(FakeClient):
    """The Mem0 scripted fake, recording the salt of each structured call by its route."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.salts: list[tuple[str, str]] = []

    async def structured(
        self, messages: Any, spec: StructuredSpec, *, stage: str, **kw: Any
    ) -> StructuredReply:
        self.salts.append((spec.name, kw.get("salt", "")))
        return await super().structured(messages, spec, stage=stage)


def test_mem0_extraction_and_update_files_replace_our_wording(tmp_path: Path) -> None:
    extraction = write(tmp_path, "x.txt", "[system]\nFacts about {user} only.\n[user]\n{earlier}\n---\n{new}")
    update = write(tmp_path, "u.txt", "Old: {memories}\nNew ({date}): {fact}")
    sessions = [[("Ann", "FACT: Ann lives in Oslo"), ("Bob", "ok")], [("Ann", "FACT: Ann has a dog")]]
    client = SaltedFake()
    system = make_system(
        client, tmp_path / "s", extraction_prompt_file=str(extraction), update_prompt_file=str(update)
    )
    run(system.ingest(make_conversation(sessions)))
    assert texts(system) == ["Ann lives in Oslo", "Ann has a dog"]  # the replies are read as before
    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (extraction, update)}
    assert {name: salt for name, salt in client.salts} == {
        "record_facts": f"prompt-file:{sha[extraction]}",
        "decide_memory_operation": f"prompt-file:{sha[update]}",
    }
    assert [f.setting for f in system.prompt_files] == [
        "method.extraction_prompt_file",
        "method.update_prompt_file",
    ]
    ex = client.routed("record_facts")[0].messages
    assert ex[0] == {"role": "system", "content": "Facts about Ann only."}
    assert (
        ex[1]["content"].startswith("(none)\n---\n[")
        and "user (Ann): FACT: Ann lives in Oslo" in ex[1]["content"]
    )
    up = client.routed("decide_memory_operation")[0].messages
    assert up == [
        {
            "role": "user",
            "content": f"Old: [] (the store has no similar memory)\nNew ({'1:00 pm on 1 May, 2023'}): Ann lives in Oslo",
        }
    ]
    with pytest.raises(ConfigurationError, match="has no {facts} field"):
        make_system(FakeClient(), tmp_path / "b", update_prompt_file=str(update), update="batched")


# ---- through the CLI ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_run_records_prompt_files_and_judge_check_takes_one(tmp_path: Path, locomo_mini: Path) -> None:
    answer = write(tmp_path, "answer.txt", "ANSWER-FILE {context}\nQuestion: {question}")
    judge = write(tmp_path, "judge.txt", "JUDGE-FILE {question} | {gold} | {answer}")
    with StandinServer() as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        run_dir = tmp_path / "run"
        args = [
            "run", "+exp=rag", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
            "eval.max_questions=2", "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST,
            f"answer.prompt_file={answer}", f"judge.prompt_file={judge}",
        ]  # fmt: skip
        result = run_cli(args, env)
        assert result.returncode == 0, result.stderr[-2000:]
        bodies = [json.dumps(body) for _, body in server.requests]
        assert sum("ANSWER-FILE" in b for b in bodies) == 2 and sum("JUDGE-FILE" in b for b in bodies) == 2
        dry = run_cli(
            ["judge-check", "run.dry_run=true", f"judge.prompt_file={judge}", f"dataset.path={locomo_mini}"],
            env,
        )
        assert dry.returncode == 0, dry.stderr[-2000:]
        assert "(file-judge-" in dry.stdout
        bad = run_cli(["judge-check", "run.dry_run=true", f"judge.prompt_file={answer}"], env)
        assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and "unknown field {context}" in bad.stderr
    manifest = json.loads((run_dir / "run.json").read_text())
    files = manifest["prompt_files"]
    assert files["answer.prompt_file"]["sha256"] == hashlib.sha256(answer.read_bytes()).hexdigest()
    assert files["judge.prompt_file"]["sha256"] == hashlib.sha256(judge.read_bytes()).hexdigest()
    assert "prompt_file" in (run_dir / "config.yaml").read_text()
    assert all(
        row.get("label") in ("CORRECT", "WRONG", None) for row in read_jsonl(run_dir / "judgements.jsonl")
    )
