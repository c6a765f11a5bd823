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

from mem0bench.memory.mem0.guard import content_tokens

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
def _document(text: str) -> Counter[str]:
    # Edge texts never change and every question re-reads the same speaker's edges: tokenize each once.
    return Counter(terms(text))


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """The BM25 score of each document for `query`, with the documents themselves as the corpus."""
    docs = [_document(d) for d in documents]
    if not docs:
        return []
    query_terms = set(terms(query))
    n = len(docs)
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / n or 1.0
    frequency = {t: sum(1 for d in docs if t in d) for t in query_terms}
    # The "+1" form of IDF stays positive even for a term in every document.
    idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items() if f}
    scores = []
    for doc, length in zip(docs, lengths):
        score = 0.0
        for t, weight in idf.items():
            tf = doc.get(t, 0)
            if tf:
                score += weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        scores.append(score)
    return scores
