"""BM25 relevance of relation triplets to a question: how Mem0^g's entity-centric channel orders its edges.

Node matching decides which edges the channel may return (the edges of nodes similar to the question's
entities); BM25 over the triplet texts decides their order, as mem0's graph search did. Without it the
speaker's own node, which matches almost every question and touches most edges, fills the channel with that
speaker's newest edges whatever was asked.

The corpus is the channel's candidate edges for one question, so a word that every candidate shares (the
speaker's name) weighs little and a word only the relevant edge has weighs most. Tokens are content words
(lowercased, stopwords dropped, as the update guard reads them) with a plural 's' trimmed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from mem0bench.systems.methods.mem0.guard import content_tokens

__all__ = ["bm25_scores", "terms"]

K1 = 1.5
"""Term-frequency saturation (the usual BM25 value)."""
B = 0.75
"""Length normalisation (the usual BM25 value)."""


def terms(text: str) -> list[str]:
    """BM25 terms: content words, 'races' -> 'race' (not 'ss' endings: 'class' stays)."""
    return [
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in content_tokens(text)
    ]


@lru_cache(maxsize=65536)
def _document(text: str) -> tuple[Counter[str], int]:
    # Edge texts never change and every question re-reads the same speaker's edges: tokenize each once.
    counts = Counter(terms(text))
    return counts, sum(counts.values())


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """The BM25 score of each document for `query`, with the documents themselves as the corpus."""
    n = len(documents)
    if not n:
        return []
    docs = [_document(d) for d in documents]
    average = sum(length for _, length in docs) / n or 1.0
    scores = [0.0] * n
    for t in set(terms(query)):
        having = [i for i, (counts, _) in enumerate(docs) if t in counts]
        if not having:
            continue
        # The "+1" form of IDF stays positive even for a term in every document.
        idf = math.log(1.0 + (n - len(having) + 0.5) / (len(having) + 0.5))
        for i in having:
            counts, length = docs[i]
            tf = counts[t]
            scores[i] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
    return scores
