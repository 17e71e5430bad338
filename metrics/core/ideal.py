"""The grades NDCG is normalised by: the ideal (best) ordering and, for negative grades
under ``negative="penalise"``, the worst one; see :mod:`metrics.core.ndcg`."""

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from metrics.core.gains import Negative, check_negative

IdealSource = Literal["judged", "returned"]
IdealDepth = Literal["cut", "full"]

IDEAL_DEPTHS: tuple[IdealDepth, ...] = ("cut", "full")


def as_grades(grades: Sequence[float | None] | NDArray) -> NDArray[np.float64]:
    """Return grades as a float64 array with ``None`` turned into NaN (unjudged)."""
    if isinstance(grades, np.ndarray):
        return grades.astype(np.float64, copy=False)
    return np.array([np.nan if g is None else g for g in grades], dtype=np.float64)


def sorted_worst(grades: Sequence[float | None] | NDArray) -> NDArray[np.float64]:
    """Return the negative grades, most harmful first: the start of the worst ordering.

    The rest of the worst ordering has gain 0 (see the module's docstring).

    Examples
    --------
    >>> sorted_worst([1, None, -1, 3, -2.5, 0]).tolist()
    [-2.5, -1.0]
    """
    values = as_grades(grades)
    return np.sort(values[values < 0])


def sorted_ideal(grades: Sequence[float | None] | NDArray) -> NDArray[np.float64]:
    """Return the grades that may enter an ideal list, best first.

    NaN (unjudged) and negative grades are dropped: they have gain 0 and an
    ideal list never needs them.

    Examples
    --------
    >>> sorted_ideal([1, None, 3, -1, 0, 2.5]).tolist()
    [3.0, 2.5, 1.0, 0.0]
    """
    values = as_grades(grades)
    kept = values[values >= 0]
    return -np.sort(-kept)


def ideal_grades(
    source: IdealSource,
    *,
    ranked_grades: Sequence[float | None] | NDArray,
    judged_grades: Sequence[float | None] | NDArray | None = None,
    negative: Negative = "zero",
) -> NDArray[np.float64]:
    """Build the ideal list of one query from the chosen source.

    Parameters
    ----------
    source : {"judged", "returned"}
        ``"judged"``: every judged document of the query, returned or not
        (``judged_grades`` is required). ``"returned"``: the returned hits'
        grades, re-sorted.
    ranked_grades : sequence of float or None
        Grades of the returned hits in rank order; None/NaN for unjudged.
    judged_grades : sequence of float, optional
        Grades of every judged document of the query.
    negative : {"zero", "penalise"}, default="zero"
        With ``"penalise"`` the source's negative grades are kept after the
        others, most harmful last: :func:`ndcg` builds the worst ordering from
        them (and leaves them out of the ideal one).

    Returns
    -------
    ideal : ndarray of float64
        Non-negative grades, best first (then the negative ones if they penalise).

    References
    ----------
    .. [1] trec_eval, ``m_ndcg.c`` (the ideal from every judged document).

    Examples
    --------
    >>> ideal_grades("returned", ranked_grades=[2, 0, 3, 2]).tolist()
    [3.0, 2.0, 2.0, 0.0]
    >>> ideal_grades("judged", ranked_grades=[2, None], judged_grades=[2, 3, -1, 0]).tolist()
    [3.0, 2.0, 0.0]
    >>> ideal_grades("judged", ranked_grades=[2], judged_grades=[2, -1, 3], negative="penalise")
    array([ 3.,  2., -1.])
    """
    check_negative(negative)
    if source == "returned":
        grades = ranked_grades
    elif source != "judged":
        raise ValueError(f"source must be 'judged' or 'returned', not {source!r}")
    elif judged_grades is None:
        raise ValueError("source='judged' needs judged_grades: every judged grade of the query")
    else:
        grades = judged_grades
    if negative == "zero":
        return sorted_ideal(grades)
    return np.concatenate((sorted_ideal(grades), sorted_worst(grades)[::-1]))
