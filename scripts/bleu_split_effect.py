"""How many BLEU-1 values on published LOCOMO answers depend on Punkt sentence splitting.

    python scripts/bleu_split_effect.py ../shared/data/external/zep/zep_locomo_grades.json

Prints the installed NLTK version, the number of (answer, gold) pairs, and how many BLEU-1 values differ
between mem0bench's `bleu1` (Punkt sentences, then words: the paper's tokenization) and the tokenization
without sentence splitting (`word_tokenize(text, preserve_line=True)`). Run it under two NLTK versions
and compare the scores it writes with --out to see which values a version change moves.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import nltk
from nltk.tokenize import word_tokenize
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from mem0bench.metrics import bleu1


def _unsplit_bleu1(prediction: str, gold: str) -> float:
    pred = word_tokenize(str(prediction).lower(), preserve_line=True)
    ref = word_tokenize(str(gold).lower(), preserve_line=True)
    if not pred or not ref:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(
            sentence_bleu([ref], pred, weights=(1, 0, 0, 0), smoothing_function=SmoothingFunction().method1)
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "grades", type=Path, help="zep_locomo_grades.json (answer and golden_answer per record)"
    )
    parser.add_argument("--out", type=Path, help="write the 1,540 bleu1 values here (JSON list)")
    args = parser.parse_args(argv)
    try:
        data = json.loads(args.grades.read_text(encoding="utf-8"))
        rows = [(str(r["answer"]), str(r["golden_answer"])) for records in data.values() for r in records]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"error: {args.grades}: not a readable grades file ({exc})", file=sys.stderr)
        return 2
    ours = [bleu1(p, g) for p, g in rows]
    differ = sum(1 for (p, g), v in zip(rows, ours) if v != _unsplit_bleu1(p, g))
    print(
        f"nltk {nltk.__version__}: {len(rows)} answers, {differ} BLEU-1 values change with sentence splitting"
    )
    if args.out:
        args.out.write_text(json.dumps(ours))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
