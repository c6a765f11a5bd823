"""`eval.context_tokens_max`: one token budget for every system's retrieved context, cut in one place; and
the answer model's context window, which no answer prompt may pass (`past_window`).

Systems retrieve as their authors meant; to compare them also at equal context size, the answer stage
keeps the context's leading lines while they fit the budget (systems put their best first), and a first
line over the budget alone is cut at the budget's token. The cut context's tokens are recounted; its
`items` becomes unknown (None), since only the system knows what a line stands for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.data.context import RetrievedContext
from mem0bench.tokens import count_tokens, decode, encode

__all__ = ["MESSAGE_OVERHEAD", "check_budget", "cut_context", "past_window", "prompt_tokens"]

MESSAGE_OVERHEAD = 4
"""Tokens the chat format adds to each message (its role and separators; OpenAI's own count is 3 or 4),
plus as many for the reply's priming: what `prompt_tokens` adds to the messages' text."""


def check_budget(value: object) -> int | None:
    """`eval.context_tokens_max` checked: None (no budget) or an integer >= 1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"eval.context_tokens_max must be null or an integer >= 1, not {value!r}")
    return value


def cut_context(context: RetrievedContext, max_tokens: int | None) -> RetrievedContext:
    """`context` within `max_tokens` cl100k tokens (unchanged when it fits or there is no budget)."""
    if max_tokens is None or count_tokens(context.text) <= max_tokens:
        return context
    kept: list[str] = []
    for line in context.text.split("\n"):
        candidate = "\n".join([*kept, line])
        if count_tokens(candidate) > max_tokens:
            break
        kept.append(line)
    text = "\n".join(kept).rstrip()
    if not text:  # the first line alone is over the budget
        text = decode(encode(context.text)[:max_tokens])
    return dataclasses.replace(context, text=text, tokens=count_tokens(text), items=None)


def prompt_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """The chat prompt's tokens: its messages' text (cl100k_base) and the chat format's per-message ones."""
    text = sum(count_tokens(str(m.get("content") or "")) for m in messages)
    return text + MESSAGE_OVERHEAD * (len(messages) + 1)


def past_window(
    messages: Sequence[dict[str, Any]], model: str, window: int | None, reply_tokens: int | None
) -> str | None:
    """None when the prompt and its reply (`reply_tokens`, llm.max_tokens; None reserves nothing) fit the
    model's context window (None: unknown, nothing checked), else the one line saying by how much. Counted
    in cl100k_base: a model with another tokenizer (o200k_base: gpt-4o, gpt-4.1) counts a few percent fewer
    tokens for English text, so the check errs on the side of not sending."""
    if window is None:
        return None
    reserve = reply_tokens or 0
    # A token holds at least one byte: a prompt of fewer bytes surely fits, without counting it.
    size = sum(len(str(m.get("content") or "").encode("utf-8")) for m in messages)
    if size + MESSAGE_OVERHEAD * (len(messages) + 1) + reserve <= window:
        return None
    tokens = prompt_tokens(messages)
    if tokens + reserve <= window:
        return None
    reply = f" + {reserve:,} reply tokens (max_tokens)" if reserve else ""
    return f"a prompt of {tokens:,} tokens{reply} is past {model}'s context window of {window:,} tokens: not sent"
