"""The answer prompt: a question answered only from what a system retrieved."""

from __future__ import annotations

from mem0bench.data.context import ContextKind, RetrievedContext
from mem0bench.llm.types import Message

# What each kind of context is, in the prompt's words.
_CONTEXT_INTRO: dict[ContextKind, str] = {
    "memories": (
        "Below are memories kept about the two people in a long conversation, one list per person. "
        "Each memory carries, in square brackets, the date of the conversation session it came from."
    ),
    "graph_memories": (
        "Below are memories kept about the two people in a long conversation, one list per person, "
        "followed by each person's relations as (source -> relation -> destination). Each memory and "
        "relation carries, in square brackets, the date of the session it came from; a relation marked "
        "as no longer true was later superseded."
    ),
    "chunks": (
        "Below are excerpts of a long conversation between two people. Each line starts with the date "
        "of its session in parentheses, then the speaker."
    ),
    "full_context": (
        "Below is a long conversation between two people, session by session. Each line starts with "
        "the date of its session in parentheses, then the speaker."
    ),
}

_RULES = """How to answer:
1. Use only the information below; read it all before answering.
2. Pay attention to the dates: they tell when something happened or was said.
3. When two pieces of information disagree, trust the more recent one.
4. Turn relative times ("last year", "two months ago", "next Friday") into an absolute date or period,
   counted from the date of the session where they were said, and answer with that date, not the phrase.
5. Names mentioned inside a memory or message are not necessarily the speakers; keep straight who did what.
6. Answer in as few words as possible: under 5 to 6 words, no full sentence, no explanation."""


def build_answer_messages(question: str, context: RetrievedContext) -> list[Message]:
    """The chat messages that ask the answer model one question about one retrieved context."""
    prompt = (
        f"{_CONTEXT_INTRO[context.kind]}\n\n{_RULES}\n\n"
        f"<context>\n{context.text}\n</context>\n\n"
        f"Question: {question}\nAnswer:"
    )
    return [
        {"role": "system", "content": "You answer questions about past conversations, briefly and exactly."},
        {"role": "user", "content": prompt},
    ]
