"""Small deterministic stand-ins shared by the unit tests of the memory systems."""

from __future__ import annotations

import re
import zlib

import numpy as np


def bow_embed(text: str, dim: int = 256) -> np.ndarray:
    """Deterministic bag-of-words embedding, L2-normalized: texts that share words are similar."""
    v = np.zeros(dim, np.float32)
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        v[zlib.crc32(word.encode()) % dim] += 1.0
    if not v.any():
        v[0] = 1.0
    return v / np.linalg.norm(v)
