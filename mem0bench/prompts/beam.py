"""BEAM's prompts (Tavakoli et al., "Beyond a Million Tokens"), in our words.

Three jobs, each our own wording of what the authors' prompt (src/prompts.py of mohammadtavakoli78/BEAM)
instructs:

- the rubric judge (their `unified_llm_judge_base_prompt`): one rubric item, the reply, and (in their
  template, though their code never fills it) the question; score 1 (complies), 0.5 (partly) or 0 (not), a
  negative item ("no", "avoid") met only by a reply that answers the question and leaves the thing out;
  meaning over wording, equal numbers in any form, style ignored unless the item asks for a format; a JSON
  object {"score", "reason"} and nothing else;
- the event-ordering alignment (their `llm_equivalence`): are two snippets the same event or fact, YES or NO;
- the answer (their `answer_generation_for_rag`): answer only from the context, no outside knowledge, direct
  and concise, the answer without explanation.
"""

from __future__ import annotations

import json
import re

from mem0bench.data.context import ContextKind, RetrievedContext
from mem0bench.llm.types import Message

__all__ = [
    "ANSWER_SYSTEM",
    "UNFILLED_QUESTION",
    "build_answer_messages",
    "build_equivalence_messages",
    "build_rubric_messages",
    "read_item_score",
    "said_same",
]

UNFILLED_QUESTION = "<question>"
"""What the authors' judge sees in place of the question: their code never replaces the placeholder."""

_JUDGE = """You are checking one reply against ONE requirement of a grading rubric.

QUESTION the user asked: {question}
REQUIREMENT to check: {item}
REPLY to check: {reply}

Decide first whether the requirement asks for something to be present (a positive requirement) or for
something to be left out (a negative one: words such as "no", "not", "avoid", "absent").

The reply must address the question. A reply that does not try to answer it scores 0, and a negative
requirement is met only when the reply answers the question AND leaves the thing out.

Judge meaning, not wording: paraphrases and synonyms count; ignore case, punctuation and spacing; numbers,
amounts and dates count as equal in any equivalent form ("$68,000", "68k", "68,000 USD"); where a number or a
duration is expected, compare the values. Ignore tone, length, hedging and style unless the requirement
itself asks for a format (a list, one sentence, no citations).

Where the requirement joins several elements ("and", commas), all of them are needed for full marks; some
of them earn half.

Scores:
- 1.0: the requirement is fully met (positive: the element is there and right; negative: it is absent and
  the reply answers the question).
- 0.5: partly met (positive: there, with small errors or incomplete; negative: mostly avoided, with a minor
  slip).
- 0.0: not met (positive: missing or wrong; negative: present, or the reply evades the question).

Reply with one JSON object and nothing before or after it:
{{"score": <1.0, 0.5 or 0.0>, "reason": "<why the requirement is or is not met>"}}"""

_SAME_SYSTEM = (
    "You decide whether two snippets describe the same event or fact. Reply YES if they do, NO if they do "
    "not: one word, no explanation."
)

ANSWER_SYSTEM = (
    "You answer questions about a long chat between a user and an AI assistant, only from what you are given."
)
_CONTEXT: dict[ContextKind, str] = {
    "memories": "Below are memories kept from a long chat between a user and an AI assistant, each with the date "
    "of the session it came from.",
    "graph_memories": "Below are memories and relations kept from a long chat between a user and an AI "
    "assistant, each with the date of the session it came from.",
    "chunks": "Below are excerpts of a long chat between a user and an AI assistant, each line starting with "
    "the date of its session, then the speaker.",
    "notes": "Below are notes a memory system kept about a long chat between a user and an AI assistant.",
    "full_context": "Below is a long chat between a user and an AI assistant, session by session, each line "
    "starting with the date of its session, then the speaker.",
    "evidence": "Below are excerpts of a long chat between a user and an AI assistant, each line starting "
    "with the date of its session, then the speaker.",
    "none": "Nothing is available from the chat the question is about.",
}
_ANSWER_RULES = """Answer the user's question below using ONLY this context:
1. Use nothing but the context; do not add knowledge of your own.
2. Be direct and concise: give the answer itself, without an explanation of how you got it. Where the
   question asks for a summary, an ordering or a list, or sets a format, give that in full."""


def build_rubric_messages(question: str | None, item: str, reply: str) -> list[Message]:
    """The judge's messages for one rubric item; `question` None leaves the placeholder as the authors' code
    does (`dataset.judge_question=unfilled`)."""
    text = _JUDGE.format(question=UNFILLED_QUESTION if question is None else question, item=item, reply=reply)
    return [{"role": "user", "content": text}]


_SCORE = re.compile(r'"?score"?\s*:\s*"?\s*([01](?:\.\d+)?|\.5)')


def read_item_score(text: str) -> float | None:
    """The score in a judge reply: the JSON object's `score` (in a code fence or among other text, as the
    authors' parser finds it, or a broken object's as their repair does); None when there is none or it is
    not 0, 0.5 or 1."""
    body = text.strip()
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", body, re.DOTALL)
    candidates = [fenced.group(1)] if fenced else []
    candidates += [body, *re.findall(r"\{.*?\}", body, re.DOTALL)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(value, dict) and "score" in value:
            return _as_score(value["score"])
    found = _SCORE.search(body)
    return _as_score(found.group(1)) if found else None


def _as_score(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        score = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return score if score in (0.0, 0.5, 1.0) else None


def build_equivalence_messages(first: str, second: str) -> list[Message]:
    """Are `first` (a rubric item) and `second` (a line of the reply) the same event or fact?"""
    return [
        {"role": "system", "content": _SAME_SYSTEM},
        {"role": "user", "content": f"First snippet: {first}\nSecond snippet: {second}"},
    ]


def said_same(text: str) -> bool:
    """The alignment's reading of a reply, as the authors': YES anywhere in it, in any case."""
    return "yes" in text.lower()


def build_answer_messages(question: str, context: RetrievedContext) -> list[Message]:
    """The answer prompt of the BEAM suite (`Suite.answer_prompt`)."""
    body = (
        f"{_CONTEXT[context.kind]}\n\n<context>\n{context.text}\n</context>\n\n{_ANSWER_RULES}\n\n"
        f"Question: {question}\nAnswer:"
    )
    return [{"role": "system", "content": ANSWER_SYSTEM}, {"role": "user", "content": body}]
