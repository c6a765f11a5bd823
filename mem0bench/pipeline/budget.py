"""`eval.context_tokens_max`: one token budget for every system's retrieved context, cut in one place.

Systems retrieve as their authors meant; to compare them also at equal context size, the answer stage
keeps the context's leading lines while they fit the budget (systems put their best first), and a first
line over the budget alone is cut at the budget's token. The cut context's tokens are recounted; its
`items` becomes unknown (None), since only the system knows what a line stands for.
"""

from __future__ import annotations

import dataclasses

from mem0bench.common.errors import ConfigurationError
from mem0bench.data.context import RetrievedContext
from mem0bench.tokens import count_tokens, decode, encode

__all__ = ["check_budget", "cut_context"]


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
