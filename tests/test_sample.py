"""`eval.sample=stratified`: a seeded sample that keeps each category's share (conv-26's first 20
questions have no single_hop at all)."""

from __future__ import annotations

from collections import Counter

import pytest

from mem0bench.data import load_dataset
from mem0bench.pipeline.experiment import select_questions


@pytest.fixture(scope="module")
def conv26(locomo_path):
    return load_dataset(locomo_path, conversations=["conv-26"]).conversations[0]


def _counts(conversation, n, how, seed=0, adversarial=False):
    chosen = select_questions(
        conversation, include_adversarial=adversarial, max_questions=n, sample=how, seed=seed
    )
    return chosen, Counter(q.category.label for q in chosen)


def test_first_n_is_skewed_and_stratified_keeps_the_shares(conv26):
    _, first = _counts(conv26, 20, "first")
    assert first["single_hop"] == 0  # the problem: the first 20 of conv-26
    chosen, strat = _counts(conv26, 20, "stratified")
    # conv-26, categories 1-4: single_hop 70, temporal 37, multi_hop 32, open_domain 13 (152).
    # One each, then 16 by largest remainder of 16 * size / 152: 7, 3, 3, 1 plus one for temporal.
    assert strat == {"single_hop": 9, "temporal": 5, "multi_hop": 4, "open_domain": 2}
    order = [q.qid for q in conv26.questions]
    assert [q.qid for q in chosen] == sorted((q.qid for q in chosen), key=order.index)  # dataset order


def test_stratified_is_seeded(conv26):
    a, _ = _counts(conv26, 20, "stratified", seed=0)
    b, _ = _counts(conv26, 20, "stratified", seed=0)
    c, counts_c = _counts(conv26, 20, "stratified", seed=1)
    assert [q.qid for q in a] == [q.qid for q in b]
    assert [q.qid for q in a] != [q.qid for q in c]
    assert counts_c == {"single_hop": 9, "temporal": 5, "multi_hop": 4, "open_domain": 2}


def test_small_and_large_n(conv26):
    _, five = _counts(conv26, 5, "stratified")
    assert set(five) == {"single_hop", "temporal", "multi_hop", "open_domain"} and sum(five.values()) == 5
    _, two = _counts(conv26, 2, "stratified")
    assert two == {"single_hop": 1, "temporal": 1}  # the two largest categories
    everything, _ = _counts(conv26, None, "stratified")
    assert len(everything) == 152
    _, with_adversarial = _counts(conv26, 30, "stratified", adversarial=True)
    assert with_adversarial["adversarial"] > 0 and sum(with_adversarial.values()) == 30
