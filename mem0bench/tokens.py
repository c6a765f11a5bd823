"""Token counting, in one place: tiktoken's cl100k_base, the Mem0 paper's encoding."""

from __future__ import annotations

import os
from functools import lru_cache

import tiktoken

from mem0bench.common.errors import ConfigurationError

ENCODING = "cl100k_base"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The encoding; `ConfigurationError` in one line when tiktoken cannot get it (it downloads the file
    on first use, which fails offline unless TIKTOKEN_CACHE_DIR holds it)."""
    try:
        return tiktoken.get_encoding(ENCODING)
    except Exception as exc:  # requests' errors, a bad cache file, ...: all mean the same to the user
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        folder = os.environ.get("TIKTOKEN_CACHE_DIR")
        where = f"TIKTOKEN_CACHE_DIR={folder} does not hold it" if folder else "TIKTOKEN_CACHE_DIR is not set"
        raise ConfigurationError(
            f"tiktoken cannot load its {ENCODING} encoding ({where}, and downloading it failed: {reason}); "
            f"offline, set TIKTOKEN_CACHE_DIR to a folder holding tiktoken's {ENCODING} file"
        ) from None


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def encode(text: str) -> list[int]:
    return encoding().encode(text, disallowed_special=())


def decode(tokens: list[int]) -> str:
    return encoding().decode(tokens)


CHARS_PER_TOKEN = 4
"""English text in cl100k_base: about 4 characters a token. For sizes too big to count quickly."""


def approx_tokens(chars: int) -> int:
    """Tokens estimated from a character count (`CHARS_PER_TOKEN`): what the dry run and `data stats`
    show for suites whose text would take minutes to count (LongMemEval_M is ~750M tokens)."""
    return round(chars / CHARS_PER_TOKEN)
