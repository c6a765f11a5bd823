"""The answer prompt: a question answered only from what a system retrieved.

Four wordings (`answer.prompt`): `default`, ours; `paper`, our own wording of the instructions the Mem0
paper's harness gave (for memories: timestamps, newest wins, relative dates made absolute, names are not
speakers, reasoning shown where a calculation is needed, a 5-6 word answer; for chunks and the full
conversation: the shortest answer in the conversation's words); `zep`, our wording of what Zep's own LOCOMO
answer prompt instructs (getzep/zep-papers `zep_locomo_responses.py`); `amem`, our wording of A-Mem's
per-category answer prompts (WujiangXu/A-mem `test_advanced.py`); `memu`, our wording of memU's
(NevaMind-AI/memU `scripts/evals/locomo/prompts/generate_answer.txt`). Every way the whole reply is the
prediction that is scored, as in the paper's harness.
"""

from __future__ import annotations

from typing import Literal

from mem0bench.data.context import ContextKind, RetrievedContext
from mem0bench.llm.types import Message

AnswerPrompt = Literal["default", "paper", "zep", "amem", "memu"]
ANSWER_PROMPTS: tuple[AnswerPrompt, ...] = ("default", "paper", "zep", "amem", "memu")

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
    "notes": (
        "Below are notes a memory system kept about a long conversation between two people. Each note "
        "carries, in square brackets, the date it was noted or refers to, where the system kept one."
    ),
    "full_context": (
        "Below is a long conversation between two people, session by session. Each line starts with "
        "the date of its session in parentheses, then the speaker."
    ),
    # The oracle bound: the annotated evidence turns, worded as excerpts so the model is not told they are
    # the answer's source (that would be a hint no real system can give).
    "evidence": (
        "Below are excerpts of a long conversation between two people. Each line starts with the date "
        "of its session in parentheses, then the speaker."
    ),
    # The no-memory bound: the question alone.
    "none": "Nothing is available from the conversation the question is about: no excerpt, note or memory.",
}

_RULES = """How to answer:
1. Use only the information below; read it all before answering.
2. Pay attention to the dates: they tell when something happened or was said.
3. When two pieces of information disagree, trust the more recent one.
4. Turn relative times ("last year", "two months ago", "next Friday") into an absolute date or period,
   counted from the date of the session where they were said, and answer with that date, not the phrase.
5. Names mentioned inside a memory or message are not necessarily the speakers; keep straight who did what.
"""
_BRIEF = "6. Answer in as few words as possible: under 5 to 6 words, no full sentence, no explanation."


# The paper profile's instructions, by kind of context (our words, the paper harness's content).
_PAPER_MEMORY_RULES = """Work through it like this:
- Read every memory of both people, and look at each memory's date, before deciding anything.
- For a question about when something happened, find the memories about that event and use their dates.
- When memories disagree, believe the one with the latest date.
- A memory may speak of a time relative to its own date ("last month", "two years ago", "next week").
  Convert it into a real date using that memory's date: "last month" in a memory dated 10 March 2023 means
  February 2023. Answer with the date, month or year, never with the relative phrase.
- Only two people are speaking. Other names that appear in the memories belong to other people; do not
  attribute their actions to the speakers.
- Reason step by step, and where the answer takes a calculation (a date, an age, a count), write the
  working out before the answer.
- The answer itself must be short: fewer than 5 to 6 words."""

_PAPER_GRAPH_RULE = """- Use each person's relations as well as their memories: a relation marked as no longer true tells
  you what changed and when."""

_PAPER_TRANSCRIPT_RULES = """Answer from the conversation only. Give the shortest answer that is complete, in words taken
from the conversation where you can. For a question about time, work the date out from the session dates."""


# Zep's answer prompt (zep_locomo_responses.py), in our words: its system line, its instructions, its
# example of an event time that is not the mention's, and its step-by-step approach. It asks for no length.
_ZEP_SYSTEM = "You are an expert assistant who answers questions from the context you are given."
_ZEP_RULES = """Instructions:
1. Read all of the facts and entities below with care.
2. Look closely at the dates: they decide the answer.
3. For a question about a particular event or fact, look for direct evidence of it.
4. When facts contradict each other, go by the most recent one.
5. Turn every relative time into a specific date, month or year.
6. Name people, places and events as specifically as you can.
7. A fact's date is when the event it describes took place, not when someone mentioned it in a message.
   For example, a fact "I went to the vet yesterday" dated 15 March 2023 means the visit was on
   15 March 2023, whatever "yesterday" says.

Approach, step by step:
1. Find every fact that bears on the question.
2. Check their dates and content carefully.
3. Look for explicit dates, times, places or events that answer the question.
4. Where the answer needs a calculation (a relative time made absolute, say), show the working.
5. Give a precise, concise answer based only on that evidence.
6. Check that the answer addresses exactly what was asked.
7. Make the answer specific; no vague times."""

# A-Mem's answer prompts (test_advanced.py), in our words, by LOCOMO category (its numbering: 2 temporal,
# 5 adversarial). Its adversarial prompt offered a choice between the gold's adversarial answer and "Not
# mentioned in the conversation"; ours does not put a gold answer in the prompt and states the second.
_AMEM_PHRASE = (
    "Answer the question with a short phrase, based on the context above. Use the exact words of the context "
    "wherever you can."
)
_AMEM_RULES: dict[int, str] = {
    2: (
        "Answer the question based on the context above. Use the dates of the conversation to answer with an "
        "approximate date. Give the shortest answer you can, in the conversation's own words where possible, "
        "and leave out the subject."
    ),
    5: (
        "Answer the question based on the context above, with a short answer. If the context does not "
        "support any answer, reply: Not mentioned in the conversation."
    ),
}


# memU's answer prompt (generate_answer.txt), in our words and its order (one user message: the question,
# the context, then what to do). Its reply had a <thinking> part and a <result> part, and only the result
# was scored; here the whole reply is, so the thinking is asked for but not written down.
_MEMU_INTRO = (
    "You are a knowledgeable assistant with access to character information and event records. Answer the "
    "question below from the context given."
)
_MEMU_RULES = """How to answer:
1. First think it through, without writing the thinking down: what the question asks and which events
   bear on it. Answers may be scattered across several events: look for all of them. Think about time
   carefully: an event's time may be relative to when the speaker mentioned it; work out the real time of
   the event.
2. Then give the answer, complete and accurate, based only on the context: if several events give answers,
   include all of them; if the information is not there, say what is missing. Keep it concise and to the
   point: no more than 20 words."""


def _paper_rules(kind: ContextKind) -> str:
    if kind in ("memories", "notes"):
        return _PAPER_MEMORY_RULES
    if kind == "graph_memories":
        return f"{_PAPER_MEMORY_RULES}\n{_PAPER_GRAPH_RULE}"
    return _PAPER_TRANSCRIPT_RULES


def build_answer_messages(
    question: str,
    context: RetrievedContext,
    *,
    prompt: AnswerPrompt = "default",
    intro: str | None = None,
    style: str | None = None,
    category: int | None = None,
) -> list[Message]:
    """The chat messages that ask the answer model one question about one retrieved context.

    `intro` (a paragraph after the description of the context) and `style` (in place of the rule on a
    5-6 word answer) come from a suite other than LOCOMO (`mem0bench.suites`); LOCOMO passes neither, and
    its prompt is the same text as before suites existed. `category` (the question's LOCOMO category)
    chooses `amem`'s wording; the other prompts do not read it."""
    if prompt in ("paper", "zep", "amem", "memu") and (intro is not None or style is not None):
        raise ValueError(f"answer.prompt={prompt} is a LOCOMO wording: use answer.prompt=default")
    block = f"<context>\n{context.text}\n</context>\n\nQuestion: {question}\nAnswer:"
    if prompt == "zep":
        text = f"{_CONTEXT_INTRO[context.kind]}\n\n{_ZEP_RULES}\n\n{block}"
        return [{"role": "system", "content": _ZEP_SYSTEM}, {"role": "user", "content": text}]
    if prompt == "memu":
        text = (
            f"{_MEMU_INTRO}\n\nQuestion: {question}\n\nContext:\n<context>\n{context.text}\n</context>\n\n"
            f"{_MEMU_RULES}\n\nAnswer:"
        )
        return [{"role": "user", "content": text}]
    if prompt == "amem":
        # A-Mem's order: the context first, then what to do with it, then the question.
        rules = _AMEM_RULES.get(category or 0, _AMEM_PHRASE)
        text = (
            f"{_CONTEXT_INTRO[context.kind]}\n\n<context>\n{context.text}\n</context>\n\n{rules}\n\n"
            f"Question: {question}\nAnswer:"
        )
        return [{"role": "user", "content": text}]
    if prompt == "paper":
        text = (
            f"{_CONTEXT_INTRO[context.kind]}\n\n{_paper_rules(context.kind)}\n\n"
            f"<context>\n{context.text}\n</context>\n\n"
            f"Question: {question}\nAnswer:"
        )
        return [{"role": "user", "content": text}]
    if prompt != "default":
        raise ValueError(f"answer.prompt must be one of {', '.join(ANSWER_PROMPTS)}, not {prompt!r}")
    head = _CONTEXT_INTRO[context.kind] + (f"\n\n{intro}" if intro else "")
    prompt_text = (
        f"{head}\n\n{_RULES}{style or _BRIEF}\n\n"
        f"<context>\n{context.text}\n</context>\n\n"
        f"Question: {question}\nAnswer:"
    )
    return [
        {"role": "system", "content": "You answer questions about past conversations, briefly and exactly."},
        {"role": "user", "content": prompt_text},
    ]
