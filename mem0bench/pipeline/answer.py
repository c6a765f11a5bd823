"""The answer stage: retrieve a context for a question, ask the answer model, time both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from mem0bench.common.errors import ConfigurationError, exception_line
from mem0bench.data.model import Conversation, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.reachability import ServerUnreachable
from mem0bench.llm.timing import measure
from mem0bench.llm.types import LLMCallError, Message
from mem0bench.llm.windows import context_window
from mem0bench.memory.base import MemorySystem
from mem0bench.pipeline.budget import cut_context, past_window
from mem0bench.pipeline.failures import SYSTEM_ERROR, RunAborted
from mem0bench.prompts.answer import AnswerPrompt, build_answer_messages
from mem0bench.prompts.files import PromptFile
from mem0bench.rundir.records import AnswerRecord, keep_context
from mem0bench.suites import suite_of
from mem0bench.suites.base import import_named
from mem0bench.systems.external.failure_kinds import bridged_kind


async def answer_question(
    system: MemorySystem,
    client: LLMClient,
    conversation: Conversation,
    question: Question,
    *,
    prompt: AnswerPrompt = "default",
    template: PromptFile | None = None,
    context_tokens_max: int | None = None,
) -> AnswerRecord:
    """One question through retrieval and answering. A failed call gives a record with `failure` set.
    `template` (answer.prompt_file) replaces `prompt` and salts the call's cache key;
    `context_tokens_max` (eval.context_tokens_max) cuts any system's context to that many tokens."""
    base: dict[str, Any] = {
        "qid": question.qid,
        "conversation": conversation.sample_id,
        "question": question.question,
        "gold": question.answer,
        "category": question.category.label,
        "category_id": int(question.category),
        "evidence": question.evidence,
        "evidence_sessions": question.evidence_sessions,
        "question_type": question.question_type,
    }
    suite = suite_of(int(question.category))
    intro = (
        suite.answer_intro.format(asked_on=question.asked_on or "the day after the last session")
        if suite.answer_intro
        else None
    )
    with measure() as whole:
        try:
            try:
                context = await system.retrieve(conversation, question)
            except (LLMCallError, ConfigurationError, ServerUnreachable, RunAborted):
                raise
            except Exception as exc:
                # The system's own code failed on this question: the question has no context, so no
                # answer; it is counted as this question's failure and the run goes on. A library's SDK
                # error over a call our client failed for good keeps that call's kind (a rate limit is
                # retried as one, not reported as the system's bug).
                kind = bridged_kind(exc) or SYSTEM_ERROR
                return AnswerRecord(
                    **base, prediction="", context_tokens=None, search_latency_s=None, total_latency_s=None,
                    failure=f"search:{kind}: {exception_line(exc)}", usage=whole.usage,
                )  # fmt: skip
            context = cut_context(context, context_tokens_max)
            with measure() as timing:
                if template is None and suite.answer_prompt is not None:  # the suite's own (BEAM)
                    build = cast(Callable[..., list[Message]], import_named(suite.answer_prompt))
                    messages = build(question.question, context)
                elif template is None:
                    messages = build_answer_messages(
                        question.question,
                        context,
                        prompt=prompt,
                        intro=intro,
                        style=suite.answer_style,
                        category=int(question.category),
                    )
                else:
                    messages = template.render(question=question.question, context=context.text)
                too_long = _past_window(client, messages, suite.answer_max_tokens)
                if too_long is not None:  # the server would refuse it (or silently cut it): not sent
                    return AnswerRecord(
                        **base, prediction="", context_tokens=context.tokens, search_latency_s=None,
                        total_latency_s=None, failure=f"answer:context_window: {too_long}", usage=whole.usage,
                    )  # fmt: skip
                if template is None:
                    reply = await client.chat(messages, stage="answer", max_tokens=suite.answer_max_tokens)
                else:
                    reply = await client.chat(messages, stage="answer", salt=template.salt)
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


def _past_window(client: LLMClient, messages: list[dict[str, Any]], reply_tokens: int | None) -> str | None:
    """The answer prompt and its reply (the suite's answer max_tokens, else llm.max_tokens) checked against
    the answer model's context window (llm.context_window, else the known models' table); a stand-in client
    without settings is not checked."""
    settings = getattr(client, "settings", None)
    if settings is None:
        return None
    window = context_window(settings.model, settings.context_window)
    return past_window(messages, settings.model, window, reply_tokens or settings.max_tokens)
