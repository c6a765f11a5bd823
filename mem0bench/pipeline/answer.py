"""The answer stage: retrieve a context for a question, ask the answer model, time both."""

from __future__ import annotations

from typing import Any

from mem0bench.data.model import Conversation, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.timing import measure
from mem0bench.llm.types import LLMCallError
from mem0bench.memory.base import MemorySystem
from mem0bench.prompts.answer import AnswerPrompt, build_answer_messages
from mem0bench.rundir.records import AnswerRecord, keep_context


async def answer_question(
    system: MemorySystem,
    client: LLMClient,
    conversation: Conversation,
    question: Question,
    *,
    prompt: AnswerPrompt = "default",
) -> AnswerRecord:
    """One question through retrieval and answering. A failed call gives a record with `failure` set."""
    base: dict[str, Any] = {
        "qid": question.qid,
        "conversation": conversation.sample_id,
        "question": question.question,
        "gold": question.answer,
        "category": question.category.label,
        "category_id": int(question.category),
        "evidence": question.evidence,
    }
    with measure() as whole:
        try:
            context = await system.retrieve(conversation, question)
            with measure() as timing:
                messages = build_answer_messages(question.question, context, prompt=prompt)
                reply = await client.chat(messages, stage="answer")
        except LLMCallError as exc:
            return AnswerRecord(
                **base, prediction="", context_tokens=None, search_latency_s=None, total_latency_s=None,
                failure=f"{exc.failure.stage}:{exc.failure.kind}: {exc.failure.message}", usage=whole.usage,
            )  # fmt: skip
    search = context.search_latency_s
    return AnswerRecord(
        **base,
        prediction=reply.text.strip(),
        context_tokens=context.tokens,
        context_items=context.items,
        search_latency_s=search,
        total_latency_s=(search or 0.0) + timing.latency_s,
        local_search_s=context.local_search_s,
        answer_server_s=None if reply.cached else timing.network_s,
        context_dia_ids=context.source_dia_ids,
        usage=whole.usage,
        cached=whole.cached_calls > 0,
        context=keep_context(context.text),
    )
