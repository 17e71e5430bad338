"""Binary and cascade measures of one query: precision, AP, reciprocal rank, ERR.

Precision, average precision and reciprocal rank need a yes/no notion of
relevance: a hit is relevant when its grade is at least ``threshold`` (1 by
default, trec_eval's ``-l 1``). Unjudged hits (None or NaN) are not relevant.

ERR is graded: the probability that a user stops at a hit of grade ``g`` is
``(2**g - 1) / 2**max_grade``, where ``max_grade`` is the top of the project's
scale (3 for a 0-3 scale). Negative and unjudged grades stop nobody.
"""

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from metrics.core.ideal import as_grades
from metrics.core.ndcg import check_k

Grades = Sequence[float | None] | NDArray


def relevant_mask(grades: Grades, threshold: float = 1.0) -> NDArray[np.bool_]:
    """Return True where a grade reaches ``threshold``; NaN (unjudged) gives False.

    Examples
    --------
    >>> relevant_mask([2, 0, None, 1]).tolist()
    [True, False, False, True]
    """
    return as_grades(grades) >= threshold


def precision(ranked_grades: Grades, *, k: int | None, threshold: float = 1.0) -> float:
    """Precision at ``k``: relevant hits in the top ``k``, divided by ``k``.

    Parameters
    ----------
    ranked_grades : sequence of float or None
        Grades in rank order; None/NaN for unjudged.
    k : int or None
        Cut-off. As in trec_eval the divisor is ``k`` even when fewer hits
        were returned; None divides by the number of hits returned.
    threshold : float, default=1.0
        Lowest grade that counts as relevant.

    Returns
    -------
    precision : float

    References
    ----------
    .. [1] trec_eval, ``m_P.c``.

    Examples
    --------
    Worked example D's grades, relevant from grade 1:

    >>> precision([2, 0, 3, 2], k=4), precision([2, 0, 3, 2], k=10)
    (0.75, 0.3)
    """
    k = check_k(k)
    relevant = relevant_mask(ranked_grades, threshold)[:k]
    divisor = k if k is not None else len(relevant)
    return float(np.count_nonzero(relevant)) / divisor if divisor else 0.0


def average_precision(
    ranked_grades: Grades, judged_grades: Grades, *, k: int | None = None, threshold: float = 1.0
) -> float:
    """Average precision: mean of precision at each relevant hit, over all relevant.

    Parameters
    ----------
    ranked_grades : sequence of float or None
        Grades in rank order; None/NaN for unjudged.
    judged_grades : sequence of float
        Every judged grade of the query; those at or above ``threshold`` make
        the number of relevant documents, the divisor.
    k : int or None, default=None
        Only hits in the top ``k`` contribute (trec_eval's ``map_cut``).
    threshold : float, default=1.0

    Returns
    -------
    average_precision : float
        0 when the query has no relevant judged document.

    References
    ----------
    .. [1] trec_eval, ``m_map.c``.

    Examples
    --------
    Relevant hits at ranks 1 and 3, three relevant documents judged:

    >>> average_precision([1, 0, 2, 0], [1, 2, 1, 0])
    0.5555555555555555
    """
    relevant = relevant_mask(ranked_grades, threshold)[: check_k(k)]
    n_relevant = int(np.count_nonzero(relevant_mask(judged_grades, threshold)))
    if n_relevant == 0:
        return 0.0
    ranks = np.flatnonzero(relevant) + 1
    precisions = np.arange(1, len(ranks) + 1) / ranks
    return float(np.sum(precisions)) / n_relevant


def reciprocal_rank(
    ranked_grades: Grades, *, k: int | None = None, threshold: float = 1.0
) -> float:
    """One over the rank of the first relevant hit; 0 if none is in the top ``k``.

    Parameters
    ----------
    ranked_grades : sequence of float or None
        Grades in rank order; None/NaN for unjudged.
    k : int or None, default=None
        Only the top ``k`` hits are looked at.
    threshold : float, default=1.0
        Lowest grade that counts as relevant.

    Returns
    -------
    reciprocal_rank : float

    References
    ----------
    .. [1] trec_eval, ``m_recip_rank.c``.

    Examples
    --------
    >>> reciprocal_rank([0, None, 2, 3])
    0.3333333333333333
    """
    relevant = np.flatnonzero(relevant_mask(ranked_grades, threshold)[: check_k(k)])
    return 1.0 / float(relevant[0] + 1) if len(relevant) else 0.0


def expected_reciprocal_rank(ranked_grades: Grades, *, k: int | None, max_grade: float) -> float:
    """Expected reciprocal rank (ERR) at ``k``.

    ``ERR = sum_r (1 / r) * R_r * prod_{i < r} (1 - R_i)`` with the stopping
    probability ``R = (2**g - 1) / 2**max_grade``.

    Parameters
    ----------
    ranked_grades : sequence of float or None
        Grades in rank order; None/NaN and negative grades give ``R = 0``.
    k : int or None
        Cut-off; None uses the whole list.
    max_grade : float
        Highest grade of the project's scale (3 for 0-3). Grades above it
        are clipped to it, so ``R`` stays below 1.

    Returns
    -------
    err : float

    References
    ----------
    .. [1] Chapelle, Metzler, Zhang & Grinspan, "Expected reciprocal rank for
       graded relevance", CIKM 2009.

    Examples
    --------
    Worked example A's grades on a 0-3 scale:

    >>> round(expected_reciprocal_rank([2, 3, 1, 2], k=4, max_grade=3), 12)
    0.65810139974
    """
    stop = stopping_probabilities(as_grades(ranked_grades)[: check_k(k)], max_grade)
    # The user reaches rank r only if they did not stop at any rank before it.
    reach = np.concatenate(([1.0], np.cumprod(1.0 - stop)[:-1]))
    return float(np.sum(reach * stop / np.arange(1, len(stop) + 1)))


def stopping_probabilities(grades: NDArray, max_grade: float) -> NDArray:
    """ERR's ``R = (2**g - 1) / 2**max_grade`` of each grade; NaN and negative give 0.

    Examples
    --------
    >>> stopping_probabilities(np.array([3.0, 0.0, np.nan, -1.0]), 3).tolist()
    [0.875, 0.0, 0.0, 0.0]
    """
    if max_grade <= 0:
        raise ValueError(f"max_grade must be positive, not {max_grade}")
    clipped = np.clip(np.fmax(grades, 0.0), 0.0, max_grade)
    return (np.exp2(clipped) - 1.0) / np.exp2(max_grade)
