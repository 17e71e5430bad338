"""Bootstrap intervals and the paired randomisation test; no database."""

import numpy as np
import pytest

from metrics.core import stats
from metrics.core.stats import (
    bootstrap_mean_ci,
    paired_bootstrap_ci,
    paired_randomisation_test,
)


@pytest.fixture
def scores():
    rng = np.random.default_rng(42)
    a = rng.beta(2, 2, size=300)
    return a, np.clip(a + rng.normal(0.03, 0.1, size=300), 0, 1)


def test_the_same_seed_gives_the_same_interval_and_p_value(scores):
    a, b = scores

    assert bootstrap_mean_ci(a, seed=5) == bootstrap_mean_ci(a, seed=5)
    assert paired_randomisation_test(a, b, seed=5) == paired_randomisation_test(a, b, seed=5)


def test_the_bootstrap_interval_surrounds_the_mean(scores):
    a, _ = scores

    ci = bootstrap_mean_ci(a)

    assert ci.low < ci.estimate < ci.high
    assert ci.estimate == pytest.approx(np.mean(a))
    assert ci.confidence == 0.95 and ci.resamples == 10_000


def test_the_bootstrap_interval_of_many_values_matches_the_normal_approximation(scores):
    a, _ = scores
    half_width = 1.96 * np.std(a) / np.sqrt(len(a))

    ci = bootstrap_mean_ci(a)

    # The bootstrap distribution of a mean of 300 values is nearly normal.
    assert ci.low == pytest.approx(np.mean(a) - half_width, abs=0.004)
    assert ci.high == pytest.approx(np.mean(a) + half_width, abs=0.004)


def test_a_higher_confidence_gives_a_wider_interval(scores):
    a, _ = scores

    assert bootstrap_mean_ci(a, confidence=0.99).width > bootstrap_mean_ci(a).width


def test_the_interval_of_identical_values_is_that_value():
    ci = bootstrap_mean_ci([0.1, 0.1, 0.1])

    assert ci.low == ci.estimate == ci.high == pytest.approx(0.1)


def test_the_interval_of_no_values_is_undefined():
    ci = bootstrap_mean_ci([])

    assert np.isnan(ci.estimate) and np.isnan(ci.low) and np.isnan(ci.high)


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5])
def test_a_confidence_outside_zero_to_one_is_refused(bad):
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_mean_ci([0.5, 0.6], confidence=bad)


def test_missing_values_are_refused_rather_than_averaged():
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_mean_ci([0.5, np.nan])


def test_the_paired_interval_is_the_interval_of_the_differences(scores):
    a, b = scores

    assert paired_bootstrap_ci(a, b, seed=3) == bootstrap_mean_ci(b - a, seed=3)


def test_the_paired_interval_is_above_zero_when_b_is_better_on_every_query(scores):
    a, _ = scores

    ci = paired_bootstrap_ci(a, a + 0.05)

    assert ci.low == pytest.approx(0.05) and ci.high == pytest.approx(0.05)


def test_unpaired_inputs_are_refused():
    with pytest.raises(ValueError, match="pair up"):
        paired_bootstrap_ci([0.1, 0.2], [0.3])


def test_the_exact_test_counts_the_sign_patterns_as_extreme_as_observed():
    # Differences +0.1, +0.1, +0.1, -0.1: the observed |sum| 0.2 is reached by the
    # 10 patterns with at least three signs alike out of 16.
    test = paired_randomisation_test([0.5, 0.5, 0.5, 0.5], [0.6, 0.6, 0.6, 0.4])

    assert test.exact
    assert test.p_value == pytest.approx(10 / 16)
    assert test.mean_difference == pytest.approx(0.05)


def test_queries_with_equal_scores_do_not_enter_the_test():
    with_ties = paired_randomisation_test([0.1, 0.2, 0.3, 0.7, 0.7], [0.2, 0.3, 0.4, 0.7, 0.7])

    assert with_ties.p_value == pytest.approx(2 / 8)


def test_identical_systems_have_p_value_one():
    test = paired_randomisation_test([0.3, 0.5], [0.3, 0.5])

    assert test.p_value == 1.0 and test.mean_difference == 0.0


def test_the_sampled_p_value_agrees_with_the_exact_one():
    rng = np.random.default_rng(1)
    a = rng.random(15)
    b = a + rng.normal(0.05, 0.15, size=15)

    exact = paired_randomisation_test(a, b, n_resamples=2**15)
    sampled = paired_randomisation_test(a, b, n_resamples=10_000)

    assert exact.exact and not sampled.exact
    # The Monte Carlo error of a p-value from 10,000 draws is at most 0.005.
    assert sampled.p_value == pytest.approx(exact.p_value, abs=0.02)


def test_the_test_is_symmetric_in_the_two_systems(scores):
    a, b = scores

    forward, backward = paired_randomisation_test(a, b), paired_randomisation_test(b, a)

    assert forward.p_value == backward.p_value
    assert forward.mean_difference == pytest.approx(-backward.mean_difference)


def test_a_clear_improvement_gets_the_smallest_possible_p_value(scores):
    a, _ = scores

    test = paired_randomisation_test(a, a + np.linspace(0.01, 0.1, len(a)))

    # Never 0: the observed assignment counts as one of the resamples.
    assert test.p_value == pytest.approx(1 / 10_001)


def test_no_difference_on_average_gives_a_large_p_value():
    rng = np.random.default_rng(3)
    a = rng.random(500)

    assert paired_randomisation_test(a, a + rng.normal(0, 0.1, size=500)).p_value > 0.05


def test_kept_draws_give_the_means_fresh_draws_give(monkeypatch):
    # The positions drawn for 37 values are kept; other values over as many queries use
    # them again, another seed draws afresh. Chunks of two resamples, the last of one.
    values, other = np.random.default_rng(1).random((2, 1, 37))
    monkeypatch.setattr(stats, "CHUNK_DRAWS", 100)
    monkeypatch.setattr(stats, "_kept_draws", {})
    monkeypatch.setattr(stats, "KEPT_DRAW_BYTES", 0)
    cases = [(values, 5), (other, 5), (values, 6)]
    fresh = [stats.bootstrap_means(v, n_resamples=501, seed=seed) for v, seed in cases]
    assert stats._kept_draws == {}

    monkeypatch.setattr(stats, "KEPT_DRAW_BYTES", 37 * 501 * 2)
    first = stats.bootstrap_means(values, n_resamples=501, seed=5)
    kept = stats._kept_draws[(37, 501, 5)]
    reused = stats.bootstrap_means(other, n_resamples=501, seed=5)
    assert stats._kept_draws[(37, 501, 5)] is kept
    reseeded = stats.bootstrap_means(values, n_resamples=501, seed=6)

    for got, expected in zip([first, reused, reseeded], fresh, strict=True):
        assert got.tobytes() == expected.tobytes()
    assert list(stats._kept_draws) == [(37, 501, 6)]


def test_draws_larger_than_the_budget_are_not_kept(monkeypatch):
    monkeypatch.setattr(stats, "_kept_draws", {})
    monkeypatch.setattr(stats, "KEPT_DRAW_BYTES", 37 * 501 * 2 - 1)

    bootstrap_mean_ci(np.arange(37.0), n_resamples=501, seed=5)

    assert stats._kept_draws == {}


def plain_bootstrap_means(values, *, n_resamples, seed):
    """The means as first written: each chunk of samples drawn from the seed's generator,
    gathered whole with fancy indexing and averaged, one series after the other."""
    series, n = values.shape
    rng = np.random.default_rng(seed)
    rows = max(1, stats.CHUNK_DRAWS // n)
    means = np.empty((series, n_resamples))
    for start in range(0, n_resamples, rows):
        picks = rng.integers(0, n, size=(min(rows, n_resamples - start), n))
        for i, row in enumerate(values):
            means[i, start : start + len(picks)] = row[picks].mean(axis=1)
    return means


@pytest.mark.parametrize("n", [1, 2, 9, 1_000, 10_000, 70_000])
@pytest.mark.parametrize("gathered", [7, 2**16])
def test_bootstrap_means_are_those_of_the_plain_gather_bit_for_bit(monkeypatch, n, gathered):
    # Gathering a few samples at a time into a buffer (GATHER_VALUES) must not change
    # one bit of any mean: the stored intervals are compared with recomputed ones. With 7
    # values per gather every sample is gathered alone; 70,000 queries draw uint32 positions.
    monkeypatch.setattr(stats, "_kept_draws", {})
    monkeypatch.setattr(stats, "GATHER_VALUES", gathered)
    values = np.random.default_rng(n).random((3, n))
    values[:, ::3] = 0.0
    resamples = 1_000 if n <= 10_000 else 40
    expected = plain_bootstrap_means(values, n_resamples=resamples, seed=4)

    drawn = stats.bootstrap_means(values, n_resamples=resamples, seed=4)
    kept = stats.bootstrap_means(values[::-1].copy(), n_resamples=resamples, seed=4)

    assert drawn.tobytes() == expected.tobytes()
    assert kept.tobytes() == expected[::-1].tobytes()
