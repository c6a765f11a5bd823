"""The UPDATE information guard of Algorithm 1.

The paper replaces a memory "only if the new fact carries more information". We accept an UPDATE's text only
if its content words (lowercased, punctuation and stopwords dropped) are not a subset of the old memory's,
i.e. it says something the old memory does not. A cheap, deterministic check that stops the classic failure
of an LLM "updating" a detailed memory with a vaguer paraphrase.
"""

from __future__ import annotations

import re

__all__ = ["adds_information", "content_tokens", "content_words"]

# Function words: they never make a memory more informative. (Negations are kept: "not" is news.)
_STOPWORD_TEXT = """
a an the and or but if then than so of to in on at by for with from into onto about as is are was
were be been being am has have had do does did will would shall should can could may might must it
its it's this that these those there here he she they them his her hers their theirs him i me my
mine we us our you your yours who whom whose which what when where why how also too very just
really some any all each both more most other such own same only again further once up down out over
under s t
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def content_tokens(text: str) -> list[str]:
    """Lowercased words of `text` in order, minus punctuation and stopwords ("Ann's" counts as "ann")."""
    words = (w.removesuffix("'s") for w in _WORD.findall(text.lower().replace("\u2019", "'")))
    return [w for w in words if w not in _STOPWORDS]


def content_words(text: str) -> frozenset[str]:
    """The set of `content_tokens`."""
    return frozenset(content_tokens(text))


def adds_information(new: str, old: str) -> bool:
    """True if `new` has a content word that `old` lacks (the UPDATE may replace `old`)."""
    return bool(content_words(new) - content_words(old))
