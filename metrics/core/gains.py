"""Gain and discount functions shared by every measure in ``metrics.core``.

Grades are floats. A grade may be fractional (the mean of several raters) and,
where a project's scale allows it, negative. Unjudged hits are NaN.

How grades become gains
-----------------------
``exponential``
    ``2**grade - 1``, the "Burges" gain used by Quepid, OpenSearch and
    Elasticsearch. It is the default in the app.
``linear``
    ``grade`` itself, as trec_eval uses it.

A grade that is negative or NaN (unjudged) contributes a gain of 0 under both
definitions. Negative grades are therefore "judged, not relevant": they count
towards judged@k coverage, contribute nothing to DCG and are left out of the
ideal ranking, exactly as trec_eval treats negative qrels. Without this rule an
ideal list could hold negative gains and NDCG could leave [0, 1].

Negative grades that penalise
-----------------------------
With ``negative="penalise"`` (:func:`signed_gain_values`) a negative grade
keeps its sign: ``rel`` under the linear gain, ``-(2**|rel| - 1)`` under the
exponential one, so a harmful result lowers DCG. NDCG then needs the min-max
normalisation of :mod:`metrics.core.ndcg` to stay in [0, 1]. NaN (unjudged)
still gives 0.

How ranks become discounts
--------------------------
A discount is the weight multiplied into the gain at rank ``i`` (1-based):
``log2`` gives ``1 / log2(i + 1)`` (so rank 1 has weight 1), ``rank`` gives
``1 / i``. To show a discount the way explainers print it ("gain / 2"), divide
by ``1 / discount``.
"""

from functools import lru_cache
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Gain = Literal["exponential", "linear"]
Discount = Literal["log2", "rank"]
Negative = Literal["zero", "penalise"]

GAINS: tuple[Gain, ...] = ("exponential", "linear")
DISCOUNTS: tuple[Discount, ...] = ("log2", "rank")
NEGATIVES: tuple[Negative, ...] = ("zero", "penalise")


def check_gain(gain: str) -> Gain:
    """Return ``gain`` if it names a known gain, else raise ``ValueError``."""
    if gain not in GAINS:
        raise ValueError(f"gain must be one of {GAINS}, not {gain!r}")
    return gain  # type: ignore[return-value]


def check_negative(negative: str) -> Negative:
    """Return ``negative`` if it names a rule for negative grades, else raise ``ValueError``."""
    if negative not in NEGATIVES:
        raise ValueError(f"negative must be one of {NEGATIVES}, not {negative!r}")
    return negative  # type: ignore[return-value]


def check_discount(discount: str) -> Discount:
    """Return ``discount`` if it names a known discount, else raise ``ValueError``."""
    if discount not in DISCOUNTS:
        raise ValueError(f"discount must be one of {DISCOUNTS}, not {discount!r}")
    return discount  # type: ignore[return-value]


def gain_values(grades: ArrayLike, gain: Gain = "exponential") -> NDArray[np.float64]:
    """Turn grades into gains.

    Parameters
    ----------
    grades : array-like of float
        Grades in any shape. NaN marks an unjudged hit.
    gain : {"exponential", "linear"}, default="exponential"
        ``2**grade - 1`` or ``grade``.

    Returns
    -------
    gains : ndarray of float64, same shape as ``grades``
        The gains; 0 wherever the grade is NaN, zero or negative.

    References
    ----------
    .. [1] Burges et al., "Learning to rank using gradient descent", ICML 2005
       (exponential gain).
    .. [2] Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
       techniques", ACM TOIS 20(4), 2002 (linear gain).

    Examples
    --------
    >>> gain_values([3, 0, -1, float("nan"), 1.5], "exponential").round(6).tolist()
    [7.0, 0.0, 0.0, 0.0, 1.828427]
    >>> gain_values([3, 0, -1, float("nan"), 1.5], "linear").tolist()
    [3.0, 0.0, 0.0, 0.0, 1.5]
    """
    check_gain(gain)
    # fmax ignores NaN, so unjudged and negative grades both become 0 in one pass.
    positive = np.fmax(np.asarray(grades, dtype=np.float64), 0.0)
    if gain == "linear":
        return positive
    return np.exp2(positive) - 1.0


def signed_gain_values(grades: ArrayLike, gain: Gain = "exponential") -> NDArray[np.float64]:
    """Turn grades into gains that keep the sign of negative grades.

    Parameters
    ----------
    grades : array-like of float
        Grades in any shape. NaN marks an unjudged hit.
    gain : {"exponential", "linear"}, default="exponential"
        ``sign(grade) * (2**|grade| - 1)`` or ``grade``.

    Returns
    -------
    gains : ndarray of float64, same shape as ``grades``
        Equal to :func:`gain_values` wherever the grade is not negative; 0 where
        it is NaN.

    References
    ----------
    .. [1] Gienapp, Fröbe, Hagen & Potthast, "The impact of negative relevance
       judgments on NDCG", CIKM 2020.

    Examples
    --------
    >>> signed_gain_values([3, 0, -1, -2, float("nan")], "exponential").tolist()
    [7.0, 0.0, -1.0, -3.0, 0.0]
    >>> signed_gain_values([3, -1.5, float("nan")], "linear").tolist()
    [3.0, -1.5, 0.0]
    """
    check_gain(gain)
    values = np.nan_to_num(np.asarray(grades, dtype=np.float64), nan=0.0)
    if gain == "linear":
        return values
    return np.copysign(np.exp2(np.abs(values)) - 1.0, values)


def gain_of_grade(grade: float, gain: Gain = "exponential") -> float:
    """Return the gain of one grade, with the same rules as :func:`gain_values`.

    Examples
    --------
    >>> gain_of_grade(2, "exponential"), gain_of_grade(2, "linear")
    (3.0, 2.0)
    """
    return float(gain_values(np.float64(grade), gain))


@lru_cache(maxsize=32)
def _discount_table(length: int, discount: Discount) -> NDArray[np.float64]:
    ranks = np.arange(1, length + 1, dtype=np.float64)
    table = 1.0 / np.log2(ranks + 1.0) if discount == "log2" else 1.0 / ranks
    # The table is shared between callers through the cache, so it must not change.
    table.flags.writeable = False
    return table


def discount_values(length: int, discount: Discount = "log2") -> NDArray[np.float64]:
    """Return the discount weights of ranks ``1 .. length``.

    Parameters
    ----------
    length : int
        Number of ranks.
    discount : {"log2", "rank"}, default="log2"
        ``1 / log2(rank + 1)`` or ``1 / rank``.

    Returns
    -------
    weights : ndarray of float64, shape (length,)
        Read-only (the tables are cached); copy before changing it.

    References
    ----------
    .. [1] Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
       techniques", ACM TOIS 20(4), 2002.

    Examples
    --------
    >>> discount_values(4, "log2").round(4).tolist()
    [1.0, 0.6309, 0.5, 0.4307]
    >>> discount_values(4, "rank").round(4).tolist()
    [1.0, 0.5, 0.3333, 0.25]
    """
    check_discount(discount)
    if length < 0:
        raise ValueError(f"length must be >= 0, not {length}")
    return _discount_table(int(length), discount)


def discount_prefix_sums(length: int, discount: Discount = "log2") -> NDArray[np.float64]:
    """Return ``P`` with ``P[n]`` = sum of the discount weights of ranks ``1 .. n``.

    ``P`` has ``length + 1`` entries and ``P[0] = 0``, so the summed weight of
    ranks ``a + 1 .. b`` is ``P[b] - P[a]``. This is what lets the ideal DCG of
    integer grades be computed from per-grade counts without sorting.

    Examples
    --------
    >>> discount_prefix_sums(3, "rank").round(4).tolist()
    [0.0, 1.0, 1.5, 1.8333]
    """
    return np.concatenate(([0.0], np.cumsum(discount_values(length, discount))))
