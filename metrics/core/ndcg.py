"""NDCG of one query, with the rank-by-rank working the app shows to users.

Definitions (see ``metrics.core.gains`` for gains and discounts)
---------------------------------------------------------------
``DCG@k = sum_{i <= k} gain(grade_i) * discount(i)`` over the returned hits.

``IDCG@k`` is the DCG of the ideal list: the ideal grades sorted from best to
worst, after dropping NaN and negative grades. The caller chooses the ideal
grades (:func:`ideal_grades`): every judged document of the query
(``"judged"``, the default, which penalises relevant documents the engine
missed) or only the returned hits (``"returned"``).

``ideal_depth="cut"`` (the standard ``ndcg_cut``) sums the first ``k`` ideal
positions; ``ideal_depth="full"`` sums all of them, as Quepid's ``nDCG@10``
does, so that a short result list cannot reach 1.

``NDCG@k = DCG@k / IDCG@k``. When IDCG is 0 (no judged document of the query
has a positive grade) NDCG is 0, following trec_eval; such queries are
counted by :func:`metrics.core.aggregate.mean_ndcg` instead of being hidden.

Grades may be fractional (a consensus mean of several raters): the gain
formulas apply unchanged (``2**1.5 - 1``). Grades may be negative where a
project's scale allows it: a negative grade is judged but contributes gain 0
and is left out of the ideal list, as trec_eval does with negative qrels.
Hence, for any grades, ``0 <= NDCG <= 1``.

Unjudged hits (``None`` or NaN) have gain 0 (``unjudged="zero"``), or are
removed before ranking (``unjudged="remove"``, a "condensed" list, which
moves the hits below them up). Either way ``judged`` and ``retrieved`` count
the top ``k`` of the list as returned, so judged@k coverage is always known.

Negative grades that penalise (``negative="penalise"``)
-------------------------------------------------------
Everything above is ``negative="zero"``, trec_eval's rule and the default. With
``negative="penalise"`` a negative grade keeps its sign in the gain (linear
``rel``, exponential ``-(2**|rel| - 1)``; see
:func:`metrics.core.gains.signed_gain_values`), and NDCG is normalised min-max
between the worst and the best ordering, after Gienapp, Fröbe, Hagen & Potthast
(CIKM 2020)::

    NDCG@k = (DCG@k - minDCG@k) / (maxDCG@k - minDCG@k)

``maxDCG@k`` is IDCG@k as above (the ideal grades, best first, negative ones
left out). ``minDCG@k`` is the DCG of the worst ordering: the ideal source's
negative grades, most harmful first, and gain 0 at every later rank. Zeros
rather than the positive judged documents fill the worst list because a
ranking can always show an unjudged or irrelevant document there (gain 0); the
reverse of the ideal list, which would put the positive documents last, is
not the worst a ranking can do, and a list holding one harmful and some
unjudged hits would score below it. With this worst list every ranking of the
judged and unjudged documents has ``minDCG@k <= DCG@k <= maxDCG@k``, so NDCG
stays in [0, 1]; ``ideal_depth="full"`` sums both normalisers over every
position. When ``maxDCG@k = minDCG@k`` (no judged grade other than 0) NDCG is 0
by convention, as for IDCG = 0. A query with harmful but no relevant judged
documents has ``maxDCG = 0 > minDCG``: it scores 1 when the list shows none of
the harmful documents, 0 when it shows them first. Without negative grades the
two rules give the same numbers.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from metrics.core.gains import (
    Discount,
    Gain,
    Negative,
    check_discount,
    check_gain,
    check_negative,
    discount_values,
    signed_gain_values,
)
from metrics.core.gains import gain_values as _gain_values

IdealSource = Literal["judged", "returned"]
IdealDepth = Literal["cut", "full"]
Unjudged = Literal["zero", "remove"]

IDEAL_DEPTHS: tuple[IdealDepth, ...] = ("cut", "full")
UNJUDGED: tuple[Unjudged, ...] = ("zero", "remove")


@dataclass(frozen=True, slots=True)
class RankRow:
    """One line of the "show the working" table (table D of the worked examples).

    ``grade`` is ``None`` for an unjudged hit or when no hit sits at this rank
    (``returned`` is then False); ``ideal_grade`` is ``None`` past the end of
    the ideal list. ``discount`` is the weight multiplied into the gain
    (``1 / log2(rank + 1)`` or ``1 / rank``). ``cg``, ``dcg`` and ``idcg`` are
    cumulative up to and including this rank; ``ndcg_at`` is ``dcg / idcg``
    at this rank, or ``dcg`` over the full IDCG when ``ideal_depth="full"``.
    With ``negative="penalise"`` the worst ordering has its own columns
    (``worst_grade``, ``worst_gain``, cumulative ``min_dcg``) and ``ndcg_at`` is
    ``(dcg - min_dcg) / (idcg - min_dcg)``; otherwise they are None and 0.
    """

    rank: int
    returned: bool
    grade: float | None
    gain: float
    discount: float
    discounted_gain: float
    cg: float
    dcg: float
    ideal_grade: float | None
    ideal_gain: float
    idcg: float
    ndcg_at: float
    worst_grade: float | None = None
    worst_gain: float = 0.0
    min_dcg: float = 0.0


@dataclass(frozen=True, slots=True)
class NdcgResult:
    """NDCG of one query, its parts, its judged@k coverage and its working rows.

    ``min_dcg`` is the worst ordering's DCG with ``negative="penalise"``, else 0.
    """

    k: int | None
    dcg: float
    idcg: float
    ndcg: float
    cg: float
    judged: int
    retrieved: int
    rows: tuple[RankRow, ...]
    min_dcg: float = 0.0

    @property
    def all_irrelevant(self) -> bool:
        """True when IDCG equals the worst DCG (0 unless negative grades penalise), so
        NDCG is 0 by convention rather than by ranking."""
        return self.idcg == self.min_dcg

    @property
    def coverage(self) -> float:
        """Share of the top ``k`` hits that are judged; 0.0 when nothing was returned."""
        return self.judged / self.retrieved if self.retrieved else 0.0


def check_k(k: int | None) -> int | None:
    """Return ``k`` if it is None or a positive integer, else raise ``ValueError``."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer or None, not {k!r}")
    return int(k)


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


def dcg(
    grades: Sequence[float | None] | NDArray,
    *,
    k: int | None,
    gain: Gain = "exponential",
    discount: Discount = "log2",
) -> float:
    """Discounted cumulative gain of grades in rank order, cut at ``k``.

    Parameters
    ----------
    grades : sequence of float or None
        Grades in rank order; None/NaN (unjudged) and negative grades give 0.
    k : int or None
        Number of ranks to sum; None sums all of them.
    gain : {"exponential", "linear"}, default="exponential"
    discount : {"log2", "rank"}, default="log2"

    Returns
    -------
    dcg : float

    References
    ----------
    .. [1] Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
       techniques", ACM TOIS 20(4), 2002.

    Examples
    --------
    Worked example B, linear gain:

    >>> dcg([3, 1, 2, 3, 2, 0], k=None, gain="linear")
    6.696665042260721
    """
    top = as_grades(grades)[: check_k(k)]
    return discounted_sum(_gain_values(top, gain), discount)


def discounted_sum(gains: NDArray[np.float64], discount: Discount) -> float:
    """Sum ``gains`` weighted by the discount of their rank, in rank order.

    The sum runs rank by rank (as trec_eval's loop does) rather than as a dot
    product, so the last row of the working table equals the result exactly.

    Examples
    --------
    >>> discounted_sum(np.array([2.0, 0.0, 3.0, 2.0]), "rank")
    3.5
    """
    if len(gains) == 0:
        return 0.0
    return float(np.cumsum(gains * discount_values(len(gains), discount))[-1])


def cumulative_gain(
    grades: Sequence[float | None] | NDArray, *, k: int | None, gain: Gain = "linear"
) -> float:
    """Cumulative gain (no discount) of the top ``k`` grades.

    Parameters
    ----------
    grades : sequence of float or None
        Grades in rank order; None/NaN (unjudged) and negative grades give 0.
    k : int or None
        Number of ranks to sum; None sums all of them.
    gain : {"linear", "exponential"}, default="linear"
        Worked examples print CG with the grades themselves as gains.

    Returns
    -------
    cg : float

    References
    ----------
    .. [1] Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
       techniques", ACM TOIS 20(4), 2002.

    Examples
    --------
    Worked example B:

    >>> cumulative_gain([3, 1, 2, 3, 2, 0], k=None)
    11.0
    """
    return float(np.sum(_gain_values(as_grades(grades)[: check_k(k)], gain)))


def ndcg(
    ranked_grades: Sequence[float | None] | NDArray,
    ideal_grades: Sequence[float | None] | NDArray,
    *,
    k: int | None,
    gain: Gain = "exponential",
    discount: Discount = "log2",
    ideal_depth: IdealDepth = "cut",
    unjudged: Unjudged = "zero",
    negative: Negative = "zero",
) -> NdcgResult:
    """Normalised discounted cumulative gain of one query, with its working.

    Parameters
    ----------
    ranked_grades : sequence of float or None
        Grades of the returned hits in rank order. ``None`` or NaN marks an
        unjudged hit. Grades may be fractional or negative.
    ideal_grades : sequence of float
        Grades the ideal list is built from, in any order (see
        :func:`ideal_grades`); NaN grades are ignored, and so are negative ones
        unless they penalise, when they make the worst ordering.
    k : int or None
        Rank cut-off; None evaluates the whole list.
    gain : {"exponential", "linear"}, default="exponential"
    discount : {"log2", "rank"}, default="log2"
    ideal_depth : {"cut", "full"}, default="cut"
        Sum the ideal list to ``k`` (standard) or entirely (Quepid).
    unjudged : {"zero", "remove"}, default="zero"
        Give unjudged hits gain 0, or remove them before ranking.
    negative : {"zero", "penalise"}, default="zero"
        Negative grades give gain 0 (trec_eval), or keep their sign with NDCG
        normalised min-max between the worst and the best ordering (see the
        module's docstring for the exact definition).

    Returns
    -------
    result : NdcgResult
        ``dcg``, ``idcg``, ``ndcg`` (0 when ``idcg`` equals ``min_dcg``), ``cg``,
        ``judged`` and ``retrieved`` (judged@k coverage), the worst ordering's
        ``min_dcg`` (0 unless negative grades penalise) and the working ``rows``.

    References
    ----------
    .. [1] Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
       techniques", ACM TOIS 20(4), 2002.
    .. [2] Burges et al., "Learning to rank using gradient descent", ICML 2005.
    .. [3] trec_eval, ``m_ndcg.c`` and ``m_ndcg_cut.c``.
    .. [4] Gienapp, Fröbe, Hagen & Potthast, "The impact of negative relevance
       judgments on NDCG", CIKM 2020 (min-max normalisation).

    Examples
    --------
    Worked example A (exponential gain, log2 discount):

    >>> result = ndcg([2, 3, 1, 2], [3, 2, 2, 1], k=4)
    >>> result.dcg, result.idcg, result.ndcg
    (9.208537949220382, 10.823465818787767, 0.8507938310514055)

    Worked example D (linear gain, rank discount), the working table:

    >>> d = ndcg([2, 0, 3, 2], [3, 2, 2, 0], k=4, gain="linear", discount="rank")
    >>> [(r.rank, r.grade, r.cg, r.dcg, round(r.idcg, 4), round(r.ndcg_at, 4)) for r in d.rows]
    ... # doctest: +NORMALIZE_WHITESPACE
    [(1, 2.0, 2.0, 2.0, 3.0, 0.6667), (2, 0.0, 2.0, 2.0, 4.0, 0.5),
     (3, 3.0, 5.0, 3.0, 4.6667, 0.6429), (4, 2.0, 7.0, 3.5, 4.6667, 0.75)]

    A harmful result (grade -2) at rank 1, then moved to rank 4 (linear gain):

    >>> first = ndcg([-2, 3, 2, 0], [3, 2, 0, -2], k=4, gain="linear", negative="penalise")
    >>> last = ndcg([3, 2, 0, -2], [3, 2, 0, -2], k=4, gain="linear", negative="penalise")
    >>> round(first.ndcg, 6), round(last.ndcg, 6), first.min_dcg
    (0.46197, 0.862445, -2.0)
    """
    k = check_k(k)
    check_gain(gain)
    check_discount(discount)
    _check_choice("ideal_depth", ideal_depth, IDEAL_DEPTHS)
    _check_choice("unjudged", unjudged, UNJUDGED)
    check_negative(negative)
    ranked = as_grades(ranked_grades)
    returned_top = ranked[:k]
    judged = int(np.count_nonzero(~np.isnan(returned_top)))
    if unjudged == "remove":
        ranked = ranked[~np.isnan(ranked)]
    top = ranked[:k]
    ideal = sorted_ideal(ideal_grades)
    worst = sorted_worst(ideal_grades) if negative == "penalise" else ideal[:0]
    summed = slice(k) if ideal_depth == "cut" else slice(None)
    idcg = discounted_sum(_gain_values(ideal[summed], gain), discount)
    min_dcg = discounted_sum(signed_gain_values(worst[summed], gain), discount)
    rows = _working_rows(
        top,
        ideal[:k],
        worst[:k],
        gain,
        discount,
        full=(idcg, min_dcg),
        depth=ideal_depth,
        signed=negative == "penalise",
    )
    dcg_value = rows[len(top) - 1].dcg if len(top) else 0.0
    span = idcg - min_dcg
    return NdcgResult(
        k=k,
        dcg=dcg_value,
        idcg=idcg,
        # Without negative grades min_dcg is 0.0 and this is exactly dcg / idcg.
        ndcg=0.0 if span == 0.0 else (dcg_value - min_dcg) / span,
        cg=rows[len(top) - 1].cg if len(top) else 0.0,
        judged=judged,
        retrieved=len(returned_top),
        rows=rows,
        min_dcg=min_dcg,
    )


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, not {value!r}")


def _padded(values: NDArray[np.float64], length: int) -> NDArray[np.float64]:
    return np.concatenate((values, np.full(length - len(values), np.nan)))


def _working_rows(
    top: NDArray[np.float64],
    ideal_top: NDArray[np.float64],
    worst_top: NDArray[np.float64],
    gain: Gain,
    discount: Discount,
    *,
    full: tuple[float, float],
    depth: IdealDepth,
    signed: bool,
) -> tuple[RankRow, ...]:
    """Build one row per rank, down to the longest of the returned, ideal and worst lists.

    ``full`` is (IDCG, worst DCG) summed over every position, ``signed`` whether
    negative grades keep their sign.
    """
    length = max(len(top), len(ideal_top), len(worst_top))
    grades, ideal = _padded(top, length), _padded(ideal_top, length)
    worst = _padded(worst_top, length)
    weights = discount_values(length, discount)
    ranked_gain = signed_gain_values if signed else _gain_values
    gains, ideal_gains = ranked_gain(grades, gain), _gain_values(ideal, gain)
    worst_gains = signed_gain_values(worst, gain)
    cg, dcg_at = np.cumsum(gains), np.cumsum(gains * weights)
    idcg_at = np.cumsum(ideal_gains * weights)
    min_at = np.cumsum(worst_gains * weights)
    # With ideal_depth="full" each row is normalised by the full IDCG (and worst
    # DCG), so the last row agrees with the query's NDCG.
    if depth == "full":
        idcg_at_or_full, min_at_or_full = np.full(length, full[0]), np.full(length, full[1])
    else:
        idcg_at_or_full, min_at_or_full = idcg_at, min_at
    normaliser = idcg_at_or_full - min_at_or_full
    safe = np.where(normaliser > 0, normaliser, 1.0)
    ndcg_at = np.where(normaliser > 0, (dcg_at - min_at_or_full) / safe, 0.0)
    return tuple(
        RankRow(
            rank=i + 1,
            returned=i < len(top),
            grade=None if np.isnan(grades[i]) else float(grades[i]),
            gain=float(gains[i]),
            discount=float(weights[i]),
            discounted_gain=float(gains[i] * weights[i]),
            cg=float(cg[i]),
            dcg=float(dcg_at[i]),
            ideal_grade=None if np.isnan(ideal[i]) else float(ideal[i]),
            ideal_gain=float(ideal_gains[i]),
            idcg=float(idcg_at[i]),
            ndcg_at=float(ndcg_at[i]),
            worst_grade=None if np.isnan(worst[i]) else float(worst[i]),
            worst_gain=float(worst_gains[i]),
            min_dcg=float(min_at[i]),
        )
        for i in range(length)
    )
