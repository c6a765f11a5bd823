"""Hand-computed checks of f1, bleu1, locomo_f1 and the aggregates (BRIEF section 4)."""

import math
import warnings

import pytest

from mem0bench.metrics import bleu1, f1, locomo_f1, mean, percentile

# ---- f1: Mem0 token-SET F1 --------------------------------------------------------------------


def test_f1_identical_after_lowercase_and_punct():
    # "the cat sat." -> {the, cat, sat} == gold set -> P = R = 1
    assert f1("The cat sat.", "the cat sat") == pytest.approx(1.0)


def test_f1_empty_and_punctuation_only():
    assert f1("", "") == 0.0  # both empty -> 0 by definition
    assert f1("cat", "") == 0.0 and f1("", "cat") == 0.0
    assert f1("...", "?!,") == 0.0  # . , ! ? become spaces -> no tokens at all


def test_f1_repeated_words_use_sets():
    # {cat, dog} vs {cat, dog}: duplicates vanish in a set -> 1.0 (locomo_f1 gives 0.8, see below)
    assert f1("cat cat dog", "cat dog") == pytest.approx(1.0)
    assert f1("the the cat", "the cat") == pytest.approx(1.0)


def test_f1_int_gold():
    # pred {in, 2022}, gold {2022}: P = 1/2, R = 1 -> 2*(1/2)/(3/2) = 2/3
    assert f1("In 2022.", 2022) == pytest.approx(2 / 3)


def test_f1_comma_and_apostrophe():
    # {paris, france} vs {paris}: 2/3 ; apostrophes are not split: {mel's, dog} vs {mel's}: 2/3
    assert f1("Paris, France", "paris") == pytest.approx(2 / 3)
    assert f1("Mel's dog", "mel's") == pytest.approx(2 / 3)


def test_f1_unicode_and_no_stemming():
    assert f1("Café!", "café") == pytest.approx(1.0)  # str.lower handles É
    assert f1("running", "run") == 0.0  # no stemming in the paper's F1


# ---- bleu1 ------------------------------------------------------------------------------------


def test_bleu1_exact_match_and_int_gold():
    assert bleu1("The cat sat", "the cat sat") == pytest.approx(1.0)
    assert bleu1("2022", 2022) == pytest.approx(1.0)


def test_bleu1_brevity_penalty_short_prediction():
    # c = 3, r = 6; clipped unigram precision 3/3 = 1; BP = exp(1 - 6/3) = e^-1
    assert bleu1("the cat sat", "the cat sat on the mat") == pytest.approx(math.exp(-1))


def test_bleu1_partial_no_penalty():
    # c = r = 2; 1 of 2 unigrams match -> 0.5, BP = 1
    assert bleu1("a cat", "the cat") == pytest.approx(0.5)
    # c = 6 > r = 1 -> BP = 1; precision 1/6 ("cat" only)
    assert bleu1("the cat sat on the mat", "cat") == pytest.approx(1 / 6)
    # NLTK tokenizes "paris." as [paris, .]: precision 1/2, c = 2 > r = 1 -> 0.5
    assert bleu1("Paris.", "paris") == pytest.approx(0.5)


def test_bleu1_empty_and_disjoint_are_zero_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bleu1("", "cat") == 0.0
        assert bleu1("cat", "") == 0.0
        assert bleu1("", "") == 0.0
        assert bleu1("dog", "cat") == 0.0  # NLTK returns 0 when no unigram matches


def test_bleu1_splits_sentences_like_the_reference():
    # The paper's code calls nltk.word_tokenize, which splits sentences first (Punkt), so "paris." inside
    # a two-sentence gold is [paris, .]. gold: she moved to paris . she loves it . (r = 9);
    # prediction: she moved to paris . (c = 5), all 5 match -> BP = exp(1 - 9/5) = exp(-0.8).
    # Without the sentence split the gold holds "paris." and the score is 0.8 * exp(-0.6) = 0.439.
    assert bleu1("She moved to Paris.", "She moved to Paris. She loves it.") == pytest.approx(math.exp(-0.8))


def test_bleu1_keeps_abbreviations_whole():
    # "dr." is in Punkt's English abbreviations: no sentence break after it; "smith." ends a sentence.
    # gold: he met dr. smith . they talked . (r = 8); prediction: dr. smith (c = 2), both match.
    # BP = exp(1 - 8/2) = exp(-3). (No split: gold has "smith.", 1 of 2 match, 0.5 * exp(-2.5) = 0.041.)
    assert bleu1("Dr. Smith", "He met Dr. Smith. They talked.") == pytest.approx(math.exp(-3))


def test_bleu1_quotes_as_nltk_3_9_1():
    # NLTK 3.9.1 (the published values' version) tokenizes "'sleep'" as ["'sleep", "'"]; 3.10 gives
    # ["'", "sleep", "'"] and this would be 3/5 = 0.6. prediction: the album 'sleep ' (c = 4), 2 match
    # (r = 2, BP = 1) -> 0.5.
    assert bleu1("The album 'Sleep'", "'Sleep'") == pytest.approx(0.5)


# ---- locomo_f1 --------------------------------------------------------------------------------


def test_locomo_identical_and_articles():
    assert locomo_f1("Paris", "paris", 2) == pytest.approx(1.0)
    # a/an/the/and are removed as whole words: both sides -> [cat, dog]
    assert locomo_f1("The cat and a dog", "cat dog", 4) == pytest.approx(1.0)
    # "andrew" is not the word "and": [andrew] vs [andrew]
    assert locomo_f1("Andrew", "andrew and", 2) == pytest.approx(1.0)


def test_locomo_empty_and_punctuation_only():
    assert locomo_f1("!!!", "...", 2) == 0.0
    assert locomo_f1("the", "a", 2) == 0.0  # both empty after normalization
    assert locomo_f1("", "cat", 2) == 0.0
    assert locomo_f1("", "", 1) == 0.0


def test_locomo_repeated_words_use_multisets():
    # [cat, cat, dog] vs [cat, dog]: common 2, P = 2/3, R = 1 -> 2*(2/3)/(5/3) = 0.8 (f1 gives 1.0)
    assert locomo_f1("cat cat dog", "cat dog", 2) == pytest.approx(0.8)
    # articles are dropped first: [cat] vs [cat]
    assert locomo_f1("the the cat", "the cat", 2) == pytest.approx(1.0)


def test_locomo_int_gold():
    # [in, 2022] vs [2022]: P = 1/2, R = 1 -> 2/3
    assert locomo_f1("In 2022", 2022, 2) == pytest.approx(2 / 3)


def test_locomo_stemming_and_unicode():
    assert locomo_f1("running", "run", 2) == pytest.approx(1.0)  # Porter: running -> run
    assert locomo_f1("Café", "café", 2) == pytest.approx(1.0)
    # only ASCII punctuation is removed: "mel’s" keeps its curly quote, "mel's" -> "mels" -> "mel"
    assert locomo_f1("Mel’s", "Mel's", 2) == 0.0


def test_locomo_category1_comma_lists():
    # gold parts: painting -> max over [hike],[paint] = 1; hiking -> 1; swimming -> 0; mean 2/3
    assert locomo_f1("hiking, painting", "painting, hiking, swimming", 1) == pytest.approx(2 / 3)
    # one prediction part [hike, paint] vs each gold part [hike] / [paint]: 2/3 each -> 2/3
    assert locomo_f1("hiking and painting", "hiking, painting", 1) == pytest.approx(2 / 3)
    # category 2 drops the commas instead: [hike, paint] vs [hike, paint] -> 1.0
    assert locomo_f1("hiking and painting", "hiking, painting", 2) == pytest.approx(1.0)


def test_locomo_category3_cuts_gold_at_semicolon():
    assert locomo_f1("Sweden", "Sweden; she moved from there", 3) == pytest.approx(1.0)
    # without the cut: [sweden] vs [sweden, she, move, from, there]: P = 1, R = 1/5 -> 1/3
    assert locomo_f1("Sweden", "Sweden; she moved from there", 2) == pytest.approx(1 / 3)


def test_locomo_category5_phrases():
    assert locomo_f1("It is Not Mentioned in the conversation.", "anything", 5) == 1.0
    assert locomo_f1("No information available.", "", 5) == 1.0
    assert locomo_f1("Unknown", "Unknown", 5) == 0.0  # only the two phrases count
    assert locomo_f1("not  mentioned", "x", 5) == 0.0  # substring match: the double space breaks it


def test_locomo_unknown_category():
    for bad in (0, 6, True):
        with pytest.raises(ValueError):
            locomo_f1("a", "a", bad)


# ---- aggregates -------------------------------------------------------------------------------


def test_mean_and_percentile():
    assert mean([]) is None and percentile([], 50) is None
    assert mean([1, 2]) == pytest.approx(1.5)
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    # linear: position 0.9 * 3 = 2.7 -> 3 + 0.7 * (4 - 3) = 3.7
    assert percentile([4, 1, 3, 2], 90) == pytest.approx(3.7)
