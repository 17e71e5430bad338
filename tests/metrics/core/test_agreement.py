"""Krippendorff's alpha against the published worked examples; no database."""

import numpy as np
import pytest

from metrics.core.agreement import (
    METRICS,
    krippendorff_alpha,
    krippendorff_alpha_by_group,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C:
# four observers (rows), twelve units (columns), NaN where an observer gave no value.
SECTION_C = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
        [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
    ]
)
# The paper's results for this data, printed to three decimals.
SECTION_C_ALPHA = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}

# Section A: two observers, ten units, binary values; alpha = 0.095.
SECTION_A = np.array([[0, 1, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]])


def units(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observers x units matrix -> the flat (values, offsets) layout, unit after unit."""
    columns = [column[~np.isnan(column)] for column in matrix.T.astype(float)]
    offsets = np.concatenate(([0], np.cumsum([len(column) for column in columns])))
    return np.concatenate(columns), offsets


@pytest.mark.parametrize("metric", METRICS)
def test_alpha_reproduces_krippendorffs_2011_example_with_missing_values(metric):
    values, offsets = units(SECTION_C)

    alpha = krippendorff_alpha(values, offsets, metric)

    assert round(alpha, 3) == SECTION_C_ALPHA[metric]


def test_ordinal_alpha_of_the_2011_example_at_full_precision():
    values, offsets = units(SECTION_C)

    # Computed by hand from the paper's coincidence matrix (n = 40): 0.815 rounded.
    assert krippendorff_alpha(values, offsets) == pytest.approx(0.8153875037548814, abs=1e-12)


def test_alpha_reproduces_the_two_observer_binary_example():
    values, offsets = units(SECTION_A)

    assert round(krippendorff_alpha(values, offsets, "nominal"), 3) == 0.095


def test_alpha_is_one_when_every_pair_of_raters_agrees():
    values, offsets = units(np.array([[0, 1, 2, 3, 3], [0, 1, 2, 3, 3], [0, 1, 2, 3, np.nan]]))

    assert krippendorff_alpha(values, offsets) == 1.0


def test_alpha_is_undefined_when_the_grades_do_not_vary():
    values, offsets = units(np.array([[2, 2, 2], [2, 2, 2]]))

    assert np.isnan(krippendorff_alpha(values, offsets))


def test_alpha_is_undefined_when_no_unit_has_two_grades():
    assert np.isnan(krippendorff_alpha([0, 3, 1], [0, 1, 2, 3]))
    assert np.isnan(krippendorff_alpha([], [0]))


def test_units_with_a_single_grade_do_not_change_alpha():
    values, offsets = units(SECTION_C[:, :11])

    # Unit 12 of the paper has one value only: dropping it changes nothing.
    assert krippendorff_alpha(values, offsets) == pytest.approx(0.8153875037548814, abs=1e-12)


def test_ordinal_alpha_depends_only_on_the_order_of_grades():
    values, offsets = units(SECTION_C)
    stretched = np.array([0.0, 1.0, 10.0, 11.0, 50.0, 51.0])[values.astype(int)]

    assert krippendorff_alpha(stretched, offsets) == pytest.approx(
        krippendorff_alpha(values, offsets), abs=1e-12
    )
    assert krippendorff_alpha(stretched, offsets, "interval") != pytest.approx(
        krippendorff_alpha(values, offsets, "interval")
    )


def test_systematic_disagreement_gives_a_negative_alpha():
    values, offsets = units(np.array([[0, 3, 0, 3], [3, 0, 3, 0]]))

    assert krippendorff_alpha(values, offsets) < 0


def test_alpha_by_group_equals_alpha_computed_for_each_group_alone():
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 4, size=60)
    grades = np.clip(truth[None, :] + rng.integers(-1, 2, size=(3, 60)), 0, 3).astype(float)
    grades[rng.random(grades.shape) < 0.2] = np.nan
    values, offsets = units(grades)
    groups = np.arange(60) % 4

    by_group = krippendorff_alpha_by_group(values, offsets, groups)

    for group in range(4):
        alone, alone_offsets = units(grades[:, groups == group])
        assert by_group[group] == pytest.approx(krippendorff_alpha(alone, alone_offsets))


def test_alpha_by_group_gives_nan_to_groups_without_units():
    alphas = krippendorff_alpha_by_group([1, 1, 0, 0], [0, 2, 4], [0, 0], n_groups=3)

    assert np.isnan(alphas[1]) and np.isnan(alphas[2])


def test_an_unknown_metric_is_refused():
    with pytest.raises(ValueError, match="metric must be one of"):
        krippendorff_alpha([1, 2], [0, 2], "cosine")
