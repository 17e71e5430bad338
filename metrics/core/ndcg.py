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

Judged-only NDCG (``unjudged="remove"``)
----------------------------------------
trec_eval's ``-J`` and Sakai's condensed lists (Sakai, "Alternatives to Bpref",
SIGIR 2007): every hit without a grade is removed from the ranking, the hits
below it moving up, and then NDCG@k is computed as above on what is left::

    judged-only NDCG@k = NDCG@k(ranked grades with the ungraded hits removed)

The ideal is unchanged: it is built from the same ideal grades (by default every
judged document of the query), so removing hits never changes IDCG. A hit is
judged when it has a grade, whatever the grade: 0 is judged and stays, and so
does a negative ("harmful") grade, which keeps its rank (gain 0, or its negative
gain when negative grades penalise). That is the one difference from trec_eval's
``-J``, which reads a negative grade in a qrels file as "in the pool, not judged"
and drops it too (``python -m metrics.core -J`` does, ``--remove-unjudged`` does
not). Judged-only NDCG of a list is never below its NDCG with unjudged hits at
gain 0 unless negative grades penalise: each judged hit keeps its gain and
moves to a rank discounted no more. Worked example E (linear gain, log2 discount, k = 3;
docs/metrics.md works it by hand): ranked grades 2, unjudged, 3, 0, unjudged, 1,
the query's judged grades 3, 2, 1, 0:

>>> ranked, judged = [2, None, 3, 0, None, 1], [3, 2, 1, 0]
>>> zero = ndcg(ranked, judged, k=3, gain="linear")
>>> only = ndcg(ranked, judged, k=3, gain="linear", unjudged="remove")
>>> [round(r.dcg, 4) for r in (zero, only)], round(only.idcg, 4)
([3.5, 3.8928], 4.7619)
>>> round(zero.ndcg, 4), round(only.ndcg, 4), (only.judged, only.retrieved)
(0.735, 0.8175, (2, 3))

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
from metrics.core.ideal import IDEAL_DEPTHS, IdealDepth, as_grades, sorted_ideal, sorted_worst
from metrics.core.working import RankRow, working_rows

Unjudged = Literal["zero", "remove"]

UNJUDGED: tuple[Unjudged, ...] = ("zero", "remove")


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
        Give unjudged hits gain 0, or remove them before ranking (judged-only
        NDCG, trec_eval's ``-J``; see the module's docstring).
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
    rows = working_rows(
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
