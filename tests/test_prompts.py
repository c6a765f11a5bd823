from __future__ import annotations

import pytest

from mem0bench.memory.base import RetrievedContext
from mem0bench.prompts.answer import build_answer_messages
from mem0bench.prompts.judge import build_judge_messages


def _text(messages) -> str:
    return "\n".join(m["content"] for m in messages)


def test_answer_prompt_holds_context_rules_and_question():
    ctx = RetrievedContext(kind="memories", text="Memories for Jon:\n- [8 May, 2023] lost his job", tokens=9)
    text = _text(build_answer_messages("When did Jon lose his job?", ctx))
    assert "lost his job" in text and "When did Jon lose his job?" in text
    for rule in ("more recent", "absolute date", "not necessarily the speakers", "5 to 6 words"):
        assert rule in text


@pytest.mark.parametrize("kind", ["memories", "graph_memories", "chunks", "full_context"])
def test_every_context_kind_has_an_introduction(kind):
    ctx = RetrievedContext(kind=kind, text="x", tokens=1)
    assert build_answer_messages("q?", ctx)[1]["content"].startswith("Below")


def test_judge_prompts_differ_and_adversarial_replaces_the_gold():
    lenient = _text(build_judge_messages("q", "7 May 2023", "May 7", prompt="lenient"))
    strict = _text(build_judge_messages("q", "7 May 2023", "May 7", prompt="strict"))
    assert "generously" in lenient and "strictly" in strict and "7 May 2023" in lenient
    adversarial = _text(build_judge_messages("q", "", "he never said", prompt="lenient", adversarial=True))
    assert "does not contain this information" in adversarial


def test_unknown_judge_prompt_is_rejected():
    with pytest.raises(ValueError, match="lenient, strict"):
        build_judge_messages("q", "a", "b", prompt="kind")
