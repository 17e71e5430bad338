"""How well one rater (a machine judge) agrees with a reference (the human consensus).

Both sides are one grade per pair, on a scale of ordered levels. The reference is
usually a consensus, which may fall between levels (the mean of 1 and 2 is 1.5):
``nearest_levels`` puts it on the nearest level, a tie going to the lower one (as the
majority policy breaks ties), so that a fractional consensus never inflates relevance.

Measures
--------
confusion matrix
    ``matrix[i, j]``: pairs the reference put at level ``i`` and the judge at ``j``.
weighted Cohen's kappa
    ``1 - sum(w * observed) / sum(w * expected)``, with ``expected`` the outer product
    of the two marginals over the number of pairs and disagreement weights
    ``|i - j| / (L - 1)`` (linear) or its square (quadratic), ``L`` the number of
    levels (Cohen, 1968). NaN when ``expected`` carries no weight (both sides give one
    and the same grade everywhere).
Krippendorff's alpha (ordinal)
    ``metrics.core.agreement.krippendorff_alpha`` with the two grades of each pair as
    one unit.
mean signed difference
    mean of ``judge - reference``: positive when the judge over-labels.
agreement per grade
    for each reference level, the share of its pairs the judge put on the same level.
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from metrics.core.agreement import krippendorff_alpha

Weights = Literal["linear", "quadratic"]


def nearest_levels(values: ArrayLike, levels: ArrayLike) -> np.ndarray:
    """Each value's nearest level (the lower one on a tie), as a level index.

    >>> nearest_levels([0.4, 1.5, 2.6, 3.0], [0, 1, 2, 3]).tolist()
    [0, 1, 3, 3]
    """
    values, levels = np.asarray(values, dtype=np.float64), np.asarray(levels, dtype=np.float64)
    # argmin takes the first of equal distances: the lower level.
    return np.abs(values[:, None] - levels[None, :]).argmin(axis=1)


def confusion_matrix(reference: ArrayLike, judged: ArrayLike, n_levels: int) -> np.ndarray:
    """Counts of (reference level, judge level) over pairs, given level indices."""
    reference, judged = np.asarray(reference, np.int64), np.asarray(judged, np.int64)
    matrix = np.zeros((n_levels, n_levels), dtype=np.int64)
    np.add.at(matrix, (reference, judged), 1)
    return matrix


def weighted_kappa(matrix: ArrayLike, weights: Weights = "quadratic") -> float:
    """Cohen's weighted kappa of a confusion matrix (see the module's docstring).

    >>> round(weighted_kappa([[2, 1, 0], [0, 2, 0], [0, 1, 2]], "linear"), 4)
    0.7143
    """
    observed = np.asarray(matrix, dtype=np.float64)
    n_levels, total = len(observed), observed.sum()
    if total == 0 or n_levels < 2:
        return float("nan")
    distance = np.abs(np.subtract.outer(np.arange(n_levels), np.arange(n_levels))) / (n_levels - 1)
    weight = distance if weights == "linear" else distance**2
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / total
    disagreement_expected = (weight * expected).sum()
    if disagreement_expected == 0:
        return float("nan")
    return float(1 - (weight * observed).sum() / disagreement_expected)


@dataclass(frozen=True)
class Agreement:
    pairs: int
    matrix: np.ndarray  # reference level x judge level
    kappa_linear: float
    kappa_quadratic: float
    alpha: float
    mean_signed_difference: float
    per_grade: np.ndarray  # share of each reference level's pairs on the same level; NaN if none


def agreement(reference: ArrayLike, judged: ArrayLike, levels: ArrayLike) -> Agreement:
    """Every measure of the module for one judge against a reference.

    ``reference`` may hold fractional consensus grades (put on the nearest level);
    ``judged`` holds grades on the scale ``levels`` (lowest first). The mean signed
    difference and alpha use the grade values, the matrix and kappas the levels.
    """
    levels = np.asarray(levels, dtype=np.float64)
    judged_values = np.asarray(judged, dtype=np.float64)
    reference_levels = nearest_levels(reference, levels)
    judged_levels = nearest_levels(judged_values, levels)
    matrix = confusion_matrix(reference_levels, judged_levels, len(levels))
    reference_values = levels[reference_levels]
    pairs = len(judged_values)
    values = np.column_stack([reference_values, judged_values]).ravel()
    offsets = np.arange(0, 2 * pairs + 1, 2)
    rows = matrix.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_grade = np.where(rows > 0, np.diag(matrix) / rows, np.nan)
    return Agreement(
        pairs=pairs,
        matrix=matrix,
        kappa_linear=weighted_kappa(matrix, "linear"),
        kappa_quadratic=weighted_kappa(matrix, "quadratic"),
        alpha=krippendorff_alpha(values, offsets, "ordinal") if pairs else float("nan"),
        mean_signed_difference=(
            float(np.mean(judged_values - reference_values)) if pairs else float("nan")
        ),
        per_grade=per_grade,
    )
