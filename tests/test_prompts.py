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


@pytest.mark.parametrize("kind", ["memories", "graph_memories"])
def test_paper_answer_prompt_holds_the_paper_instructions(kind):
    ctx = RetrievedContext(kind=kind, text="Memories for Jon:\n- [8 May, 2023] lost his job", tokens=9)
    text = _text(build_answer_messages("When did Jon lose his job?", ctx, prompt="paper"))
    assert "lost his job" in text and text.endswith("Question: When did Jon lose his job?\nAnswer:")
    for rule in ("latest date", "real date", "Other names", "step by step", "working out", "5 to 6 words"):
        assert rule in text
    assert ("relations" in text.split("<context>")[0].split("Work through")[1]) == (kind == "graph_memories")
    assert text != _text(build_answer_messages("When did Jon lose his job?", ctx))


@pytest.mark.parametrize("kind", ["chunks", "full_context"])
def test_paper_answer_prompt_for_transcripts_asks_for_the_shortest_answer(kind):
    text = _text(build_answer_messages("q?", RetrievedContext(kind=kind, text="x", tokens=1), prompt="paper"))
    assert "shortest answer" in text and "words taken" in text and "step by step" not in text


def test_unknown_answer_prompt_is_rejected():
    with pytest.raises(ValueError, match="default, paper"):
        build_answer_messages("q?", RetrievedContext(kind="chunks", text="x", tokens=1), prompt="terse")


def test_paper_judge_is_the_most_generous_and_says_so():
    paper = _text(build_judge_messages("q", "7 May 2023", "May 7", prompt="paper"))
    lenient = _text(build_judge_messages("q", "7 May 2023", "May 7", prompt="lenient"))
    assert "same subject" in paper and "same subject" not in lenient
    assert "contradicts" in lenient and "contradicts" not in paper
    assert "7 May 2023" in paper and "May 7" in paper
