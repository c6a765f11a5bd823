"""eval.context_tokens_max: one budget cuts any system's context in the answer stage."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mem0bench.common.errors import ConfigurationError
from mem0bench.data.context import RetrievedContext
from mem0bench.data.model import Conversation, Question
from mem0bench.pipeline.answer import answer_question
from mem0bench.pipeline.budget import check_budget, cut_context
from mem0bench.suites.locomo import SINGLE_HOP
from mem0bench.tokens import count_tokens

LINES = [f"- memory number {i} about the trip to Lisbon in May" for i in range(40)]
TEXT = "\n".join(LINES)


def _context(text: str = TEXT) -> RetrievedContext:
    return RetrievedContext(kind="memories", text=text, tokens=count_tokens(text), items=40)


def test_the_budget_keeps_the_leading_lines_that_fit() -> None:
    cut = cut_context(_context(), 60)
    assert cut.tokens == count_tokens(cut.text) <= 60 < count_tokens(TEXT)
    kept = cut.text.split("\n")
    assert kept == LINES[: len(kept)] and len(kept) >= 4  # best first: whole lines, in order
    assert cut.items is None  # what a line stands for is the system's to say
    assert cut_context(_context(), None) == _context() == cut_context(_context(), 10_000)
    long_line = " ".join(["word"] * 500)
    assert cut_context(_context(long_line), 20).tokens == 20


def test_bad_budgets_are_one_clear_error() -> None:
    assert check_budget(None) is None and check_budget(4437) == 4437
    for bad in (0, -1, "4k", True, 1.5):
        with pytest.raises(ConfigurationError, match="eval.context_tokens_max"):
            check_budget(bad)


class _System:
    async def retrieve(self, conversation: Any, question: Any) -> RetrievedContext:
        return _context()


class _Client:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def chat(self, messages: Any, **kw: Any) -> Any:
        self.messages.append(messages)
        return type("Reply", (), {"text": "Lisbon", "cached": False})()


def test_the_answer_stage_applies_the_budget_to_any_system() -> None:
    question = Question("c:q0", "c", 0, "Where?", "Lisbon", SINGLE_HOP)
    conversation = Conversation("c", "A", "B", (), (question,))
    client = _Client()
    record = asyncio.run(
        answer_question(_System(), client, conversation, question, context_tokens_max=50)  # type: ignore[arg-type]
    )
    sent = "\n".join(m["content"] for m in client.messages[0])
    assert record.context_tokens is not None and record.context_tokens <= 50
    assert LINES[0] in sent and LINES[-1] not in sent
