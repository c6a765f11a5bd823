"""LongMemEval's authors' judge (`judge=longmemeval`): their request and their reading of the reply, in our words.

What `src/evaluation/evaluate_qa.py` (xiaowu0162/LongMemEval) does, followed point by point: one user message
per question that chooses its instruction by question type (an `_abs` question gets the abstention one,
whatever its type); model gpt-4o-2024-08-06, one run, temperature 0, at most 10 tokens; a free-text reply
asked for as a bare yes or no (no reason first); the question is correct when "yes" appears anywhere in the
lowercased reply. The instructions below say what each of theirs asks, in our own sentences.
"""

from __future__ import annotations

from mem0bench.llm.types import Message

LME_JUDGE_MODEL = "gpt-4o-2024-08-06"
"""The authors' judge model; their `print_qa_metrics.py` refuses labels from any other."""
LME_TEMPERATURE = 0.0
LME_MAX_TOKENS = 10

_FACT = (
    "Below are a question, its correct answer and a model's response. Say yes when the correct answer "
    "appears in the response, even if the response also says other things; say yes as well when the "
    "response is equivalent to the correct answer or walks through every step that leads to it. Say no "
    "when the response holds only part of what the correct answer requires, and no in every other case."
)
_TEMPORAL = (
    f"{_FACT} Be lenient by one on counts of time: when the question asks how many days, weeks, months "
    "and so on, a response one off from the correct number (say 19 days where the answer is 18) still "
    "earns a yes."
)
_UPDATE = (
    "Below are a question, its correct answer and a model's response. Say yes when the correct answer "
    "appears in the response, otherwise no. The facts asked about changed over time: a response that "
    "mentions earlier states alongside the latest one is still a yes, provided the latest state it gives "
    "is the correct answer."
)
_PREFERENCE = (
    "Below are a question, a rubric describing the personalised reply the user would want, and a model's "
    "response. Say yes when the response meets what the rubric wants, otherwise no. It need not cover "
    "every point of the rubric: it is a yes as long as it remembers the user's personal information and "
    "puts it to correct use."
)
_ABSTENTION = (
    "Below are a question that cannot be answered, a note on why, and a model's response. Say yes when "
    "the response recognises that the question cannot be answered, for instance by saying the information "
    "is missing or incomplete, or that something else was mentioned but not what is asked; otherwise no."
)

# By our category label (the question type in snake_case; `abstention` for `_abs` questions): the
# instruction, the name of the reference line, and the closing question.
_ASKED = "Is the model response correct? Reply with yes or no only."
INSTRUCTIONS: dict[str, tuple[str, str, str]] = {
    "single_session_user": (_FACT, "Correct answer", _ASKED),
    "single_session_assistant": (_FACT, "Correct answer", _ASKED),
    "multi_session": (_FACT, "Correct answer", _ASKED),
    "temporal_reasoning": (_TEMPORAL, "Correct answer", _ASKED),
    "knowledge_update": (_UPDATE, "Correct answer", _ASKED),
    "single_session_preference": (_PREFERENCE, "Rubric", _ASKED),
    "abstention": (
        _ABSTENTION,
        "Why it cannot be answered",
        "Does the model response recognise that the question cannot be answered? Reply with yes or no only.",
    ),
}


def build_lme_judge_messages(question: str, reference: str, response: str, *, category: str) -> list[Message]:
    """The one user message for a question of this category (our label: `single_session_user`, ...,
    `abstention`); an unknown category is an error, never a guess at which instruction applies."""
    if category not in INSTRUCTIONS:
        raise ValueError(
            f"judge.prompt=longmemeval grades LongMemEval questions only; category {category!r} is not one "
            f"(one of {', '.join(INSTRUCTIONS)})"
        )
    instruction, reference_name, asked = INSTRUCTIONS[category]
    text = (
        f"{instruction}\n\nQuestion: {question}\n\n{reference_name}: {reference}\n\n"
        f"Model response: {response}\n\n{asked}"
    )
    return [{"role": "user", "content": text}]


def said_yes(reply: str) -> bool:
    """The authors' reading: correct when "yes" appears anywhere in the lowercased reply. A reply with
    neither yes nor no (or an unrelated word holding "yes") is read as they read it: not yes is incorrect,
    never a judge failure."""
    return "yes" in reply.lower()
