"""Token counting, in one place: tiktoken's cl100k_base, the Mem0 paper's encoding.

Loading the encoding costs ~0.27 s of CPU (parsing its 100k ranks, building the BPE), so a run does not load
it up front: `check_encoding` decides, from tiktoken's cache file alone, that the load cannot fail (the
offline one-line error stays before any LLM call); `run` then loads it on a thread while its preflight
waits for the server (`load_in_background`), and otherwise the first count loads it. Either way before
any timed search (pipeline/runner.py). Figures: docs/benchmarks.md, "Start-up after the SDK-free client".
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

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


# Where tiktoken 0.14 gets cl100k_base (tiktoken_ext/openai_public.py) and the sha256 it checks the file
# against. Should a later tiktoken move them, `check_encoding` finds no file here and loads the encoding,
# which is slower but as safe (tests/test_tokens_load.py compares them with tiktoken's own).
BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
BLOB_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def cached_blob() -> Path | None:
    """The file tiktoken's loader reads cl100k_base from when its cache has it (tiktoken.load's
    read_file_cached: TIKTOKEN_CACHE_DIR, else DATA_GYM_CACHE_DIR, else <tmp>/data-gym-cache; the file
    named by the sha1 of the blob's URL); None when caching is off ("")."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        import tempfile

        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if folder == "":
        return None
    return Path(folder) / hashlib.sha1(BLOB_URL.encode()).hexdigest()


def check_encoding() -> None:
    """What `encoding()` checks, without the load when it cannot fail: tiktoken's cache holds the file
    and its sha256 is the one tiktoken expects (then tiktoken reads it and downloads nothing; ~5 ms).
    Otherwise the encoding is loaded now: downloaded when online, `ConfigurationError` in one line when
    not."""
    if is_loaded():
        return
    path = cached_blob()
    if path is not None:
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        if hashlib.sha256(data).hexdigest() == BLOB_SHA256:
            return
    encoding()


def load_in_background() -> None:
    """Start loading the encoding on a daemon thread, to overlap the load with the preflight's network
    round trips (the GIL is free while the main thread waits for a reply). A count made before it is done
    waits for it (tiktoken's registry lock) instead of loading a second copy; a failed load is left to
    that count, which raises `encoding()`'s one-line error itself."""
    if not is_loaded():
        threading.Thread(target=_load_quietly, name="tiktoken-load", daemon=True).start()


def _load_quietly() -> None:
    with contextlib.suppress(Exception):
        encoding()


def is_loaded() -> bool:
    """Whether this process has loaded the encoding (a count has been made, or `encoding()` called)."""
    return encoding.cache_info().currsize > 0


COUNT_BLOCK = 1 << 16
"""Characters above which `count_tokens` counts a text block by block: tiktoken's `encode` returns a list
of Python ints, ~36 bytes a token against ~4 bytes of text, so counting a 10M-token conversation whole
would hold ~360 MB (twelve times its text) for a moment."""


def count_tokens(text: str) -> int:
    """cl100k_base tokens of `text`, exactly; a long text counted in blocks of about `COUNT_BLOCK`
    characters (`token_blocks`), so the memory a count takes does not grow with the text."""
    if len(text) <= COUNT_BLOCK:
        return len(encoding().encode(text, disallowed_special=()))
    enc = encoding()
    return sum(len(enc.encode(block, disallowed_special=())) for block in token_blocks(text))


def token_blocks(text: str, size: int = COUNT_BLOCK) -> Iterator[str]:
    """`text` cut into consecutive blocks of at least `size` characters (the last may be shorter), each
    ending just after a newline that a non-space character follows. cl100k_base's pre-tokenizer never
    joins such a newline to what follows it (no pattern takes a newline before a letter, digit or
    punctuation mark), so the blocks' token counts add up to the whole text's. A text with no such
    newline past `size` is one block."""
    start = 0
    while start < len(text):
        cut = text.find("\n", start + size)
        while cut != -1 and cut + 1 < len(text) and text[cut + 1].isspace():
            cut = text.find("\n", cut + 1)
        end = len(text) if cut == -1 or cut + 1 >= len(text) else cut + 1
        yield text[start:end]
        start = end


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
