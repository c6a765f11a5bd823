"""Hand-made label matrices for the judge statistics. T = CORRECT, F = WRONG, N = judge failure."""

import json
import math

import pytest

from mem0bench.metrics import judge_summary, per_run_accuracy
from mem0bench.metrics.judge_stats import fleiss_kappa, majority_accuracy

T, F, N = True, False, None


def test_all_correct():
    s = judge_summary([[T, T], [T, T], [T, T]], 2)
    assert (s.mean, s.std, s.per_run, s.majority, s.kappa, s.failures) == (1.0, 0.0, [1.0, 1.0], 1.0, 1.0, 0)


def test_all_wrong_kappa_defined_as_one():
    # P_e = 1 -> kappa is 0/0; defined as 1.0 because every label agrees
    s = judge_summary([[F, F, F], [F, F, F]], 3)
    assert (s.mean, s.std, s.kappa) == (0.0, 0.0, 1.0)


def test_three_by_two():
    # run0: T, T, F -> 2/3 ; run1: T, F, F -> 1/3 ; mean 1/2
    # population std (ddof 0): deviations +-1/6 -> (1/36 + 1/36) / 2 = 1/36 -> 1/6
    # majority: q0 T (2-0), q1 tie -> WRONG, q2 F -> 1/3
    # Fleiss (n = 2): counts (2,0),(1,1),(0,2); P_i = 1, 0, 1 -> P_bar = 2/3; p = (1/2, 1/2) -> P_e = 1/2
    # kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3
    m = [[T, T], [T, F], [F, F]]
    s = judge_summary(m, 2)
    assert s.per_run == pytest.approx([2 / 3, 1 / 3])
    assert s.mean == pytest.approx(0.5) and s.std == pytest.approx(1 / 6)
    assert s.majority == pytest.approx(1 / 3) and s.kappa == pytest.approx(1 / 3)


def test_fleiss_kappa_by_hand():
    # n = 3 raters, N = 4 questions; counts (correct, wrong): (3,0),(3,0),(2,1),(0,3)
    # P_i = (sum n_ij^2 - n) / (n (n - 1)): (9-3)/6 = 1, 1, (4+1-3)/6 = 1/3, 1 -> P_bar = (10/3)/4 = 5/6
    # p_correct = 8/12 = 2/3, p_wrong = 1/3 -> P_e = 4/9 + 1/9 = 5/9
    # kappa = (5/6 - 5/9) / (1 - 5/9) = (5/18) / (4/9) = 5/8
    m = [[T, T, T], [T, T, T], [T, T, F], [F, F, F]]
    assert fleiss_kappa(m, 3) == pytest.approx(5 / 8)
    # per run: 3/4, 3/4, 2/4 ; mean 2/3 ; deviations 1/12, 1/12, -1/6 -> SS = 6/144 -> var (/3) 1/72
    s = judge_summary(m, 3)
    assert s.per_run == pytest.approx([0.75, 0.75, 0.5]) and s.mean == pytest.approx(2 / 3)
    assert s.std == pytest.approx(math.sqrt(1 / 72)) and s.majority == pytest.approx(0.75)


def test_majority_ties_count_as_wrong():
    # [T,T,F,F] tie -> WRONG ; [T,T,T,F] -> CORRECT ; [T,F,N,N] tie over labelled -> WRONG ; all-N excluded
    assert majority_accuracy([[T, T, F, F], [T, T, T, F], [T, F, N, N], [N, N, N, N]], 4) == pytest.approx(
        1 / 3
    )


def test_failures_excluded_from_denominators():
    # run0 labels T, F, T -> 2/3 ; run1 labels F, T -> 1/2 ; mean 7/12 ; failures: q0 1 + q2 2 = 3
    # majority: q0 [T] -> T, q1 F, q2 excluded, q3 T -> 2/3
    # kappa only over fully labelled q1 (0,2), q3 (2,0): P_bar = 1, P_e = 1/2 -> 1.0
    m = [[T, N], [F, F], [N, N], [T, T]]
    assert per_run_accuracy(m, 2) == pytest.approx([2 / 3, 1 / 2])
    s = judge_summary(m, 2)
    assert (s.failures, s.kappa) == (3, 1.0)
    assert s.mean == pytest.approx(7 / 12) and s.majority == pytest.approx(2 / 3)


def test_run_with_no_labels_is_nan_and_skipped():
    s = judge_summary([[T, N], [F, N]], 2)
    assert s.per_run[0] == 0.5 and math.isnan(s.per_run[1])
    assert (s.mean, s.std, s.kappa, s.failures) == (0.5, 0.0, None, 2)
    d = s.to_dict()
    assert d["per_run"] == [0.5, None] and json.loads(json.dumps(d)) == d


def test_single_run_and_empty_matrix():
    s = judge_summary([[T], [F]], 1)
    assert (s.mean, s.std, s.kappa) == (0.5, 0.0, None)
    d = judge_summary([], 2).to_dict()
    assert d == {
        "mean": None,
        "std": None,
        "std_ddof": 0,
        "runs": 2,
        "per_run": [None, None],
        "majority": None,
        "kappa": None,
        "failures": 0,
    }


def test_bad_input_rejected():
    with pytest.raises(ValueError):
        per_run_accuracy([[T, T], [T]], 2)
    with pytest.raises(TypeError):
        per_run_accuracy([["CORRECT"]], 1)


def test_spread_is_the_population_std():
    # 10 questions, three runs: 9/10, 8/10, 7/10 correct -> mean 0.8, deviations +-0.1 and 0
    # population (ddof 0): sqrt((0.01 + 0 + 0.01) / 3) = sqrt(0.02 / 3) ~ 0.08165 (the sample std would be 0.1)
    m = [[T, T, T]] * 7 + [[T, T, F], [T, F, F], [F, F, F]]
    s = judge_summary(m, 3)
    assert s.per_run == pytest.approx([0.9, 0.8, 0.7]) and s.mean == pytest.approx(0.8)
    assert s.std == pytest.approx(math.sqrt(0.02 / 3)) and s.std_ddof == 0
    assert s.to_dict()["std_ddof"] == 0
