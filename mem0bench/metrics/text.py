"""The Mem0 paper's lexical scores: token-set F1 and BLEU-1 (BRIEF section 4)."""

from __future__ import annotations

import warnings

from nltk.tokenize import word_tokenize
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

__all__ = ["bleu1", "f1", "simple_tokens"]

_PUNCT_TO_SPACE = str.maketrans({".": " ", ",": " ", "!": " ", "?": " "})
_SMOOTHING = SmoothingFunction().method1


def simple_tokens(text: object) -> list[str]:
    """str(), lowercase, replace ``. , ! ?`` with spaces, split on whitespace."""
    return str(text).lower().translate(_PUNCT_TO_SPACE).split()


def f1(prediction: object, gold: object) -> float:
    """Token-set F1 as in the Mem0 paper; 0.0 if either side is empty or nothing is shared."""
    pred = set(simple_tokens(prediction))
    ref = set(simple_tokens(gold))
    if not pred or not ref:
        return 0.0
    common = len(pred & ref)
    if common == 0:
        return 0.0
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall)


def _nltk_tokens(text: object) -> list[str]:
    # preserve_line=True skips punkt sentence splitting, so no NLTK data is needed.
    return word_tokenize(str(text).lower(), preserve_line=True)


def bleu1(prediction: object, gold: object) -> float:
    """NLTK sentence BLEU-1 (weights 1,0,0,0; smoothing method1); 0.0 for empty inputs."""
    pred = _nltk_tokens(prediction)
    ref = _nltk_tokens(gold)
    if not pred or not ref:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        score = sentence_bleu([ref], pred, weights=(1, 0, 0, 0), smoothing_function=_SMOOTHING)
    return float(score)
