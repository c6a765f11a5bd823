"""The judge prompt: CORRECT or WRONG for one generated answer against the gold answer.

Three gradings (`judge.prompt`), most generous first:
- `paper`: the Mem0 paper's judge in substance (its published J used it): CORRECT as soon as the answer
  is about the gold answer's subject, whatever else it says; any format of the same date, or a relative date
  that lands on it, is CORRECT.
- `lenient` (our default): generous about length, wording and date formats, but the answer must refer to
  the same thing as the gold and must not contradict it.
- `strict`: the same fact, nothing contradicting it, dates at the gold's precision.

Suites other than LOCOMO bring their own grading per category (`mem0bench.suites`: `rubric`), and may grade
on three levels (`graded`: CORRECT 1 / PARTIAL 0.5 / WRONG 0, with `GradedVerdict`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mem0bench.llm.structured import ReplyModel, spec_from_model
from mem0bench.llm.types import Message

JudgePrompt = Literal["lenient", "strict", "paper"]
JUDGE_PROMPTS: tuple[JudgePrompt, ...] = ("lenient", "strict", "paper")


class Verdict(ReplyModel):
    """The judge's reply: the schema sent to the model and the parser of its reply."""

    reasoning: str = Field(description="One short sentence on why.")
    label: Literal["CORRECT", "WRONG"]


JUDGE_SPEC = spec_from_model("record_verdict", "Record whether the generated answer is correct.", Verdict)


class GradedVerdict(ReplyModel):
    """The three-level judge's reply (CORRECT 1, PARTIAL 0.5, WRONG 0). Any other label breaks the schema:
    the client asks for a repair, and a reply that never fits is a judge failure, never a WRONG."""

    reasoning: str = Field(description="One short sentence on why.")
    label: Literal["CORRECT", "PARTIAL", "WRONG"]


GRADED_JUDGE_SPEC = spec_from_model(
    "record_graded_verdict", "Record whether the reply is correct, partly correct or wrong.", GradedVerdict
)

_GRADING: dict[JudgePrompt, str] = {
    "lenient": (
        "Grade generously. The generated answer may be longer or phrased differently; count it CORRECT "
        "when it refers to the same thing as the gold answer. For time questions, the same date or period "
        "in another format, or a relative reference that resolves to it (for example 'the week before "
        "May 7, 2023' for 'early May 2023'), is CORRECT. Count it WRONG when it names something else, "
        "contradicts the gold answer, or does not answer."
    ),
    "paper": (
        "Grade very generously: the gold answer is short and the generated one may be far longer. If the "
        "generated answer is about the same subject as the gold answer, count it CORRECT, even when it adds "
        "other things. For time questions, count it CORRECT when it points to the same date or period, "
        "written any way ('the 7th of May' for '7 May 2023'), or through a relative expression that resolves "
        "to it. Count it WRONG only when it is about something else altogether."
    ),
    "strict": (
        "Grade strictly. Count the generated answer CORRECT only when it states the same fact as the gold "
        "answer with nothing that contradicts it; a date must denote the same day, month or year as the "
        "gold answer at the same precision. Anything vaguer, broader or different is WRONG."
    ),
}

_ADVERSARIAL_NOTE = (
    "This question asks about something the conversation does not say. The right answer is that the "
    "information is not available; an answer that asserts a specific fact is WRONG."
)


ADVERSARIAL_GOLD = "The conversation does not contain this information."
"""The gold answer an adversarial (category 5) question is judged against."""


def build_judge_messages(
    question: str,
    gold: str,
    prediction: str,
    *,
    prompt: JudgePrompt,
    adversarial: bool = False,
    rubric: str | None = None,
    reference: str = "Gold answer",
    graded: bool = False,
) -> list[Message]:
    """The messages for one judgement; `adversarial` swaps the gold answer for 'not stated'. A suite's own
    `rubric` replaces the `prompt` grading, its reference is named `reference`, and `graded` asks for
    CORRECT, PARTIAL or WRONG."""
    if prompt not in _GRADING:
        raise ValueError(f"judge.prompt must be one of {', '.join(JUDGE_PROMPTS)}, not {prompt!r}")
    gold_line = ADVERSARIAL_GOLD if adversarial else gold
    intro = "You are grading an answer to a question about a long conversation, against a gold answer."
    if rubric is not None:
        intro = (
            "You are grading a reply to a question about a long conversation, "
            f"against a reference ({reference.lower()})."
        )
    parts = [intro, rubric or _GRADING[prompt]]
    if adversarial:
        parts.append(_ADVERSARIAL_NOTE)
    parts.append(f"Question: {question}\n{reference}: {gold_line}\nGenerated answer: {prediction}")
    function = GRADED_JUDGE_SPEC.name if graded else JUDGE_SPEC.name
    parts.append(f"Record your verdict with the {function} function.")
    return [{"role": "user", "content": "\n\n".join(parts)}]
