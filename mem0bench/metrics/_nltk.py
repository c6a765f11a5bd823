"""Import NLTK without the optional libraries it wraps, so scoring does not pay for them.

`import nltk` runs its whole package __init__, which offers wrappers around scikit-learn, pandas, SciPy and
matplotlib and imports each one it finds installed (NLTK guards them all with try/except ImportError).
mem0bench uses only NLTK's tokenizer, Porter stemmer and BLEU, none of which needs them; where
sentence-transformers is installed, scikit-learn and friends come along and `import nltk` measured 2.1-2.4 s
of CPU here instead of 0.36 s. So the first import of NLTK hides those libraries (only the ones not
already imported) and puts them back right after: anything that imports them later gets them as usual.
"""

from __future__ import annotations

import sys

_OPTIONAL = ("sklearn", "pandas", "scipy", "matplotlib")


def import_nltk_lean() -> None:
    """Import `nltk` once, with its optional third-party integrations left out."""
    if "nltk" in sys.modules:
        return
    hidden = [name for name in _OPTIONAL if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # `import name` raises ImportError
    try:
        import nltk  # noqa: F401
    finally:
        for name in hidden:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]


import_nltk_lean()
