"""LOCOMO's official per-category QA score (snap-research/locomo ``task_eval/evaluation.py``)."""

from __future__ import annotations

import re
import string
from collections import Counter

# First: NLTK without the heavy libraries it only wraps (see _nltk).
from mem0bench.metrics import _nltk  # noqa: F401  # isort: skip
from nltk.stem import PorterStemmer

__all__ = ["locomo_f1", "normalize_answer", "stemmed_tokens", "token_f1"]

_STEMMER = PorterStemmer()
_ASCII_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_ABSTAIN_PHRASES = ("not mentioned", "no information available")
CATEGORIES = (1, 2, 3, 4, 5)


def normalize_answer(text: object) -> str:
    """Drop ','; lowercase; drop ASCII punctuation; blank out a/an/the/and; collapse whitespace."""
    s = str(text).replace(",", "").lower().translate(_ASCII_PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def stemmed_tokens(text: object) -> list[str]:
    """Normalized, whitespace-split, Porter-stemmed tokens."""
    return [_STEMMER.stem(w) for w in normalize_answer(text).split()]


def token_f1(prediction: object, gold: object) -> float:
    """Multiset (Counter) F1 over stemmed tokens; 0.0 when nothing is shared."""
    pred = stemmed_tokens(prediction)
    ref = stemmed_tokens(gold)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(ref)
    return 2 * precision * recall / (precision + recall)


def _multi_answer_f1(prediction: str, gold: str) -> float:
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def locomo_f1(prediction: object, gold: object, category: int) -> float:
    """Score one answer the way LOCOMO does for its QA ``category`` (1-5)."""
    if category not in CATEGORIES or isinstance(category, bool):
        raise ValueError(f"unknown LOCOMO category: {category!r}")
    pred = str(prediction)
    ref = str(gold)
    if category == 5:
        low = pred.lower()
        return 1.0 if any(p in low for p in _ABSTAIN_PHRASES) else 0.0
    if category == 1:
        return _multi_answer_f1(pred, ref)
    if category == 3:
        ref = ref.split(";")[0].strip()
    return token_f1(pred, ref)
