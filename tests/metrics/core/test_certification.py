"""A judge against a reference, on a fixture computed by hand; no database."""

import krippendorff
import numpy as np
import pytest

from metrics.core.certification import agreement, confusion_matrix, nearest_levels, weighted_kappa

# Eight pairs on levels 0-2. Reference 0: the judge says 0, 0, 1; reference 1: 1, 1;
# reference 2: 1, 2, 2.
REFERENCE = [0, 0, 0, 1, 1, 2, 2, 2]
JUDGED = [0, 0, 1, 1, 1, 1, 2, 2]
MATRIX = [[2, 1, 0], [0, 2, 0], [0, 1, 2]]


def test_confusion_matrix_counts_reference_rows_and_judge_columns():
    assert confusion_matrix(REFERENCE, JUDGED, 3).tolist() == MATRIX


def test_kappa_equals_the_hand_computed_values():
    # Marginals: rows 3, 2, 3; columns 2, 4, 2; eight pairs. Linear weights 0, 1/2, 1:
    # observed disagreement 1/2 + 1/2 = 1, expected 1.5 + 0.5 + 1.5 = 3.5 -> 1 - 1/3.5.
    assert weighted_kappa(MATRIX, "linear") == pytest.approx(1 - 1 / 3.5, abs=1e-15)
    # Quadratic weights 0, 1/4, 1: observed 0.5, expected 1.125 + 0.25 + 1.125 = 2.5.
    assert weighted_kappa(MATRIX, "quadratic") == pytest.approx(0.8, abs=1e-15)


def test_agreement_equals_the_hand_computed_fixture():
    result = agreement(REFERENCE, JUDGED, [0, 1, 2])

    assert result.pairs == 8
    assert result.matrix.tolist() == MATRIX
    # Coincidences [[4,1,0],[1,4,1],[0,1,4]], n = 5, 6, 5: ordinal d(0,1) = d(1,2) =
    # 5.5^2, d(0,2) = 11^2; D_o = 121/16, D_e = 121/3, alpha = 1 - 3/16.
    assert result.alpha == pytest.approx(13 / 16, abs=1e-15)
    assert result.mean_signed_difference == 0.0
    assert result.per_grade.tolist() == pytest.approx([2 / 3, 1.0, 2 / 3])


def test_an_over_labelling_judge_has_a_positive_mean_signed_difference():
    result = agreement([0, 0, 1, 2], [1, 2, 1, 3], [0, 1, 2, 3])

    assert result.mean_signed_difference == 1.0
    assert result.per_grade[3] != result.per_grade[3]  # No reference pair at 3: NaN.


def test_a_fractional_consensus_goes_to_the_nearest_grade_ties_down():
    assert nearest_levels([0.5, 1.5, 1.51, 2.49], [0, 1, 2, 3]).tolist() == [0, 1, 2, 2]
    result = agreement([1.5, 2.5], [1, 2], [0, 1, 2, 3])
    assert result.matrix[1, 1] == result.matrix[2, 2] == 1


def test_kappa_is_nan_when_both_sides_give_one_grade_everywhere():
    assert np.isnan(weighted_kappa([[0, 0], [0, 5]]))
    assert weighted_kappa([[3, 0], [0, 2]]) == 1.0


@pytest.mark.parametrize("seed", range(20))
def test_alpha_equals_the_krippendorff_package_on_random_data(seed):
    rng = np.random.default_rng(seed)
    pairs = int(rng.integers(5, 300))
    reference = rng.integers(0, 4, pairs)
    judged = np.clip(reference + rng.integers(-1, 2, pairs), 0, 3)

    result = agreement(reference, judged, [0, 1, 2, 3])

    expected = krippendorff.alpha(
        reliability_data=np.vstack([reference, judged]).astype(float),
        level_of_measurement="ordinal",
        value_domain=[0, 1, 2, 3],
    )
    assert result.alpha == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_kappa_equals_its_definition_cell_by_cell_on_random_data(seed):
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 20, (4, 4))
    n = matrix.sum()
    rows, cols = matrix.sum(axis=1), matrix.sum(axis=0)
    observed = expected = 0.0
    for i in range(4):
        for j in range(4):
            weight = ((i - j) / 3) ** 2
            observed += weight * matrix[i, j] / n
            expected += weight * rows[i] * cols[j] / n**2

    assert weighted_kappa(matrix) == pytest.approx(1 - observed / expected, abs=1e-12)
