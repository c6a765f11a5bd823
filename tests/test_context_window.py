"""No answer prompt past the answer model's context window: the known windows, the answer stage's check,
full_context's labelled truncation, and the dry run's warning, on the tiny LOCOMO file over the stand-in."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from devtools.e2e import FAST, cli_env, read_jsonl, run_cli
from mem0bench.common.errors import ConfigurationError
from mem0bench.data.context import RetrievedContext
from mem0bench.data.loader import load_dataset
from mem0bench.data.model import Conversation, Question
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.types import FAILURE_KINDS, TRANSIENT_KINDS
from mem0bench.llm.windows import context_window
from mem0bench.pipeline.answer import answer_question
from mem0bench.pipeline.budget import past_window, prompt_tokens
from mem0bench.pipeline.config_change import Reach, compare_configs
from mem0bench.suites.locomo import SINGLE_HOP
from mem0bench.systems.baselines.full_context import keep_newest
from mem0bench.tokens import count_tokens

# tests/data/locomo_mini.json, adversarial questions left out: mini-1's prompts are ~860 tokens, mini-2's ~565
MINI_1_QUESTIONS = 11
MINI_2_QUESTIONS = 5
WINDOW = 850


def test_known_windows_dated_snapshots_and_the_override() -> None:
    assert context_window("gpt-4o-mini") == context_window("gpt-4o-mini-2024-07-18") == 128_000
    assert context_window("gpt-4o-2024-08-06") == 128_000
    assert context_window("gpt-4.1") == context_window("gpt-4.1-mini") == 1_047_576
    assert context_window("openai/gpt-4.1-mini") == 1_047_576  # a router's prefix
    assert context_window("gpt-4-32k") is None  # a model of its own, not a gpt-4 snapshot
    assert context_window("qwen2.5-7b-instruct") is None  # a local model: unknown, not checked
    assert context_window("qwen2.5-7b-instruct", 32_768) == 32_768
    assert context_window("gpt-4o-mini", 4_096) == 4_096  # the override wins (a local server's limit)


def test_bad_context_window_settings_are_one_line() -> None:
    assert LLMSettings(context_window=8_192).context_window == 8_192
    for bad in (0, -5, "8k", True, 1.5):
        with pytest.raises(ConfigurationError, match="llm.context_window"):
            LLMSettings(context_window=bad)  # type: ignore[arg-type]


def test_the_kind_is_classified_as_a_permanent_failure_with_a_remedy() -> None:
    traits = FAILURE_KINDS["context_window"]
    assert "context_window" not in TRANSIENT_KINDS and not traits.from_cache
    assert "method.truncate=oldest" in traits.remedy and "llm.context_window" in traits.remedy


def test_past_window_counts_the_prompt_and_the_reply_reserve() -> None:
    messages = [{"role": "user", "content": "word " * 300}]
    tokens = prompt_tokens(messages)
    assert tokens == count_tokens("word " * 300) + 8
    assert past_window(messages, "m", None, None) is None  # unknown window: not checked
    assert past_window(messages, "m", tokens, None) is None
    assert past_window(messages, "m", tokens + 10, 10) is None
    line = past_window(messages, "m", tokens + 9, 10)
    assert line == (
        f"a prompt of {tokens:,} tokens + 10 reply tokens (max_tokens) is past m's context window of "
        f"{tokens + 9:,} tokens: not sent"
    )


def test_keep_newest_keeps_the_newest_lines_that_fit() -> None:
    lines = [f"(1 May 2023) A: line number {i}" for i in range(50)]
    kept, tokens = keep_newest(lines, 100)
    assert kept == lines[-len(kept) :] and 0 < len(kept) < 50
    assert count_tokens("\n".join(kept)) <= tokens <= 100
    assert keep_newest(lines, 0) == ([], 0)


class _Client:
    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self.sent: list[Any] = []

    async def chat(self, messages: Any, **kw: Any) -> Any:
        self.sent.append(messages)
        return type("Reply", (), {"text": "Lisbon", "cached": False})()


class _System:
    def __init__(self, text: str) -> None:
        self.text = text

    async def retrieve(self, conversation: Any, question: Any) -> RetrievedContext:
        return RetrievedContext(kind="chunks", text=self.text, tokens=count_tokens(self.text))


def test_the_answer_stage_sends_no_prompt_past_the_window_for_any_system() -> None:
    question = Question("c:q0", "c", 0, "Where?", "Lisbon", SINGLE_HOP)
    conversation = Conversation("c", "A", "B", (), (question,))
    system = _System("\n".join(f"- chunk {i} about Lisbon in May" for i in range(200)))
    small = _Client(LLMSettings(model="local-model", context_window=500))
    record = asyncio.run(answer_question(system, small, conversation, question))  # type: ignore[arg-type]
    assert small.sent == [] and record.prediction == ""
    assert record.failure is not None and record.failure_kind == "context_window"
    assert record.failure.startswith("answer:context_window: a prompt of ")
    assert "local-model's context window of 500 tokens" in record.failure
    large = _Client(dataclasses.replace(small.settings, context_window=None, model="gpt-4o-mini"))
    record = asyncio.run(answer_question(system, large, conversation, question))  # type: ignore[arg-type]
    assert len(large.sent) == 1 and record.failure is None and record.prediction == "Lisbon"


def _answer_prompts(server: Any) -> list[str]:
    """The user messages of the answer calls the stand-in received."""
    out = []
    for endpoint, body in server.requests:
        messages = body.get("messages") or []
        if endpoint == "chat" and messages and "answer questions about past" in str(messages[0]["content"]):
            out.append(str(messages[-1]["content"]))
    return out


def _run(tmp_path, server, locomo, *extra: str):
    run_dir = tmp_path / "run"
    args = [
        "run", "+exp=full_context", f"dataset.path={locomo}", "dataset.conversations=[mini-1,mini-2]",
        "judge.runs=1", f"hydra.run.dir={run_dir}", "run.max_failure_rate=1.0", *FAST, *extra,
    ]  # fmt: skip
    return run_cli(args, cli_env(server.base_url, tmp_path / "cache")), run_dir


def test_a_conversation_past_the_window_fails_its_questions_unsent(tmp_path, standin, locomo_mini) -> None:
    dry, _ = _run(tmp_path, standin, locomo_mini, f"llm.context_window={WINDOW}", "run.dry_run=true")
    assert dry.returncode == 0, dry.stderr[-2000:]
    n_all = MINI_1_QUESTIONS + MINI_2_QUESTIONS
    assert (
        f"context window: {MINI_1_QUESTIONS} of {n_all} questions (1 conversation, up to 644 tokens) have "
        f"prompts past gpt-4o-mini's {WINDOW:,}-token window: they will fail unsent" in dry.stdout
    ), dry.stdout
    assert standin.count("chat") == 0

    result, run_dir = _run(tmp_path, standin, locomo_mini, f"llm.context_window={WINDOW}")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {r["qid"]: r for r in read_jsonl(run_dir / "answers.jsonl")}
    failed = [r for r in rows.values() if r.get("failure")]
    assert len(failed) == MINI_1_QUESTIONS and {r["conversation"] for r in failed} == {"mini-1"}
    for row in failed:
        tokens = int(row["failure"].split("a prompt of ", 1)[1].split(" tokens", 1)[0].replace(",", ""))
        assert tokens > WINDOW
        assert row["failure"] == (
            f"answer:context_window: a prompt of {tokens:,} tokens is past gpt-4o-mini's context window of "
            f"{WINDOW:,} tokens: not sent"
        )
    sent = _answer_prompts(standin)
    assert len(sent) == MINI_2_QUESTIONS and all(
        count_tokens(p) < WINDOW for p in sent
    )  # only mini-2's, which fit


def test_truncate_oldest_sends_the_newest_turns_that_fit(tmp_path, standin, locomo_mini) -> None:
    window = 2_300  # leaves 2,300 - 2,048 (ANSWER_FRAME_TOKENS) = 252 tokens of conversation
    extra = (f"llm.context_window={window}", "method.truncate=oldest")
    dry, _ = _run(tmp_path, standin, locomo_mini, *extra, "run.dry_run=true")
    assert "their conversations are cut to the window, oldest turns first (method.truncate=oldest)" in (
        dry.stdout
    ), dry.stdout
    result, run_dir = _run(tmp_path, standin, locomo_mini, *extra)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = read_jsonl(run_dir / "answers.jsonl")
    assert len(rows) == MINI_1_QUESTIONS + MINI_2_QUESTIONS and not [r for r in rows if r.get("failure")]
    assert all(0 < r["context_tokens"] <= 252 for r in rows)
    sent = _answer_prompts(standin)
    assert len(sent) == len(rows)
    mini_1 = next(c for c in load_dataset(locomo_mini).conversations if c.sample_id == "mini-1")
    lines = mini_1.render_lines()
    with_mini_1 = [p for p in sent if lines[-1] in p]
    assert len(with_mini_1) == MINI_1_QUESTIONS and all(lines[0] not in p for p in with_mini_1)


def test_the_new_keys_reach_the_answers_and_older_folders_read_as_their_defaults() -> None:
    old = {"llm": {"model": "gpt-4o-mini"}, "method": {"name": "full_context"}}
    same = {"llm": {"model": "gpt-4o-mini", "context_window": None}, "method": {"name": "full_context", "truncate": "none"}}  # fmt: skip
    assert compare_configs(old, same).changes == {}
    cut = {"llm": {"model": "gpt-4o-mini", "context_window": 4096}, "method": {"name": "full_context", "truncate": "oldest"}}  # fmt: skip
    changes = compare_configs(old, cut)
    assert set(changes.result_changing) == {"llm.context_window", "method.truncate"}
    assert changes.reach == Reach.ANSWER
