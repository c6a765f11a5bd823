"""The stand-in's prompt cache: which leading tokens of a chat prompt an earlier request already sent.

OpenAI reports `usage.prompt_tokens_details.cached_tokens` for a prompt whose first 1,024 tokens or more
repeat an earlier request's, in steps of 128 tokens (1,024, 1,152, 1,280, ...). This keeps a hash of every
such prefix it has seen and, for a new prompt, gives the longest step it shares. Lookup and insertion are
one step under the caller's lock: of several concurrent requests sharing a prefix exactly the first to
arrive misses, so the counts are deterministic (OpenAI, routing by prefix, may miss more often).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence

MIN_PREFIX = 1024
STEP = 128


class PromptCache:
    """Prefix hashes of the prompts seen so far (token ids), at every 128-token step from 1,024 on."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()

    def lookup_and_add(self, tokens: Sequence[int]) -> int:
        """The cached tokens to report for a prompt of `tokens` (0 below 1,024 shared), then remember it."""
        h = hashlib.blake2b(digest_size=16)
        cached = 0
        done = 0
        for end in range(MIN_PREFIX, len(tokens) + 1, STEP):
            h.update(struct.pack(f"<{end - done}I", *tokens[done:end]))
            done = end
            key = h.copy().digest()
            if key in self._seen:
                cached = end  # prefixes are nested: every shorter step of a seen one was seen too
            else:
                self._seen.add(key)
        return cached
