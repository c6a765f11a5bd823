"""The statistics behind intervals, comparisons and judge checks, on hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from mem0bench.metrics.significance import (
    cohen_kappa,
    mcnemar_exact,
    minimum_detectable_difference,
    wilson_interval,
)
from mem0bench.metrics.uncertainty import bootstrap_weights, cluster_bootstrap


def test_mcnemar_exact_by_hand():
    assert mcnemar_exact(1, 5) == pytest.approx(2 * (1 + 6) / 64)  # 2 * P(X <= 1), X ~ Bin(6, 1/2)
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(5, 1) == mcnemar_exact(1, 5)
    assert mcnemar_exact(3, 3) == 1.0  # capped
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)


def test_minimum_detectable_difference_is_2_8_standard_errors():
    assert minimum_detectable_difference(1.0) == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    assert minimum_detectable_difference(0.0) == 0.0


def test_wilson_interval_by_hand():
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson_interval(5, 10)
    assert (lo, hi) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(0, 0) is None


def test_cohen_kappa_by_hand():
    # observed 3/4, chance 1/2*1/4 + 1/2*3/4 = 1/2: kappa = (0.75 - 0.5) / 0.5
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == pytest.approx(0.5)
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    assert cohen_kappa([True, True], [True, True]) == 1.0
    assert cohen_kappa([], []) is None


def test_bootstrap_of_a_constant_is_the_constant_with_zero_width():
    out = cluster_bootstrap(np.full((30, 2), 0.25), ["a"] * 10 + ["b"] * 20, replicates=200, seed=1)
    assert all(i.estimate == 0.25 and i.stderr == 0.0 and i.ci95 == (0.25, 0.25) for i in out)


def test_bootstrap_of_zero_differences_is_zero():
    """What a run compared with itself gives: delta 0 and [0, 0]."""
    (interval,) = cluster_bootstrap(np.zeros(12), ["c1", "c2", "c3"] * 4, replicates=500, seed=0)
    assert (interval.estimate, interval.stderr, interval.ci95) == (0.0, 0.0, (0.0, 0.0))


def test_bootstrap_is_seeded():
    values = np.arange(40, dtype=float) % 3
    clusters = [f"c{i % 4}" for i in range(40)]
    a = cluster_bootstrap(values, clusters, replicates=300, seed=7)
    assert a == cluster_bootstrap(values, clusters, replicates=300, seed=7)
    assert a != cluster_bootstrap(values, clusters, replicates=300, seed=8)


def test_bootstrap_weights_draw_whole_clusters_then_questions():
    clusters = ["a"] * 3 + ["b"] * 5
    weights = bootstrap_weights(clusters, 400, seed=3)
    # two clusters drawn per replicate: the rows drawn add up to 6 (a twice), 8 or 10 (b twice)
    assert set(weights.sum(axis=1)) <= {6, 8, 10} and len(set(weights.sum(axis=1))) == 3
    # a cluster left out contributes nothing: some replicates have no row of 'a'
    assert (weights[:, :3].sum(axis=1) == 0).any()


def test_bootstrap_stderr_of_one_cluster_matches_the_binomial():
    values = np.array([1.0, 0.0] * 200)  # p = 0.5, n = 400: sqrt(p(1-p)/n) = 0.025
    (interval,) = cluster_bootstrap(values, ["only"] * 400, replicates=2000, seed=0)
    assert interval.stderr == pytest.approx(0.025, rel=0.1)
    lo, hi = interval.ci95
    assert lo < 0.5 < hi and hi - lo == pytest.approx(2 * 1.96 * 0.025, rel=0.15)


def test_clustered_scores_widen_the_interval():
    """Whole conversations that succeed or fail together carry less information than independent
    questions: the two-level bootstrap shows it, a question-only bootstrap would not."""
    clusters = [f"c{i // 40}" for i in range(400)]
    together = np.array([1.0 if (i // 40) % 2 else 0.0 for i in range(400)])
    (clustered,) = cluster_bootstrap(together, clusters, replicates=1000, seed=0)
    (flat,) = cluster_bootstrap(together, ["one"] * 400, replicates=1000, seed=0)
    assert clustered.stderr > 3 * flat.stderr


def test_bootstrap_skips_missing_values_and_handles_empty():
    values = np.array([[1.0, np.nan], [0.0, np.nan]])
    first, second = cluster_bootstrap(values, ["a", "b"], replicates=50, seed=0)
    assert first.estimate == 0.5 and second.estimate is None and second.ci95 is None
    assert cluster_bootstrap(np.zeros((0, 1)), [], replicates=10, seed=0)[0].estimate is None


def test_bootstrap_settings_are_checked_in_one_line():
    from mem0bench.common.errors import ConfigurationError
    from mem0bench.pipeline.spec import bootstrap_settings

    assert bootstrap_settings({}).replicates == 2000  # configs from before
    assert bootstrap_settings({"bootstrap": 3000, "bootstrap_seed": 4}).seed == 4
    with pytest.raises(ConfigurationError, match="eval.bootstrap must be an integer >= 2"):
        bootstrap_settings({"bootstrap": "many"})
