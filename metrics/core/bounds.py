"""The range of NDCG that a query's unjudged hits leave open.

Definition
----------
Give every unjudged hit of the ranking a grade of the scale, and count it as a judged
document of the query with that grade: it enters DCG at its rank and the ideal list
(``ideal="judged"``: the query's judged documents and the filled hits; ``"returned"``:
the filled ranking). The **range** is the lowest and the highest NDCG@k over every
such filling. Both ends are NDCGs of a real filling (``low_fill``, ``high_fill``: the
grades given to the unjudged hits, in rank order), so the range is exact, not an
estimate, and the NDCG the grades will eventually give lies in it.

Filling every unjudged hit with the scale's lowest grade, and then with its highest,
does **not** give the range once the ideal is recomputed: a filled hit also raises
IDCG. An unjudged hit below rank k adds nothing to DCG@k but, graded highly, lowers
NDCG@k; an unjudged hit at rank 10 of a list whose top is perfect lowers NDCG when
graded highly, because the ideal puts that grade at rank 1:

>>> all_low = ndcg([2, 0], [2], k=1, gain="linear").ndcg
>>> all_high = ndcg([2, 3], [2, 3], k=1, gain="linear").ndcg
>>> all_low, round(all_high, 4)
(1.0, 0.6667)
>>> r = ndcg_range([2, None], [2], k=1, grades=[0, 1, 2, 3], gain="linear")
>>> round(r.low, 4), r.low_fill, r.high, r.high_fill
(0.6667, (3.0,), 1.0, (0.0,))

How the two ends are found (negative grades at gain 0, ``negative="zero"``)
---------------------------------------------------------------------------
DCG@k is linear in the filled gains; IDCG is the sum of the largest values of a
multiset times decreasing discounts, a maximum of linear functions, so convex in
them. NDCG = DCG / IDCG is then lowest at a corner of the box of gains (every
unjudged hit at the lowest or the highest grade: ``min DCG - t * IDCG`` of a
concave function is at a corner, Dinkelbach's argument), and swapping two filled
grades never changes IDCG, so the lowest NDCG gives the highest grade to the ``m``
deepest unjudged hits, for some ``m`` from 0 to all of them. The highest NDCG gives
the lowest grade to every unjudged hit below rank k (it adds to IDCG only) and, by
the same swap, grades that never rise down the ranking to those within k: every
such sequence of the scale's grades is tried, ``C(u + L - 1, u)`` of them for ``u``
unjudged hits within k and ``L`` grades. The tests check both ends against every
filling of small lists.

Per query, the ranges of a mean over queries are the means of the ends (each
query's unjudged hits are its own). A difference between two lists is not the
difference of their ranges when they share unjudged documents, which must get the
same grade in both; that is not computed here.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations_with_replacement

import numpy as np
from numpy.typing import NDArray

from metrics.core.gains import Discount, Gain
from metrics.core.ideal import IdealDepth, as_grades
from metrics.core.ndcg import check_k, ndcg


@dataclass(frozen=True, slots=True)
class NdcgRange:
    """The lowest and highest NDCG over every filling of the unjudged hits, and the
    fillings that give them (a grade per unjudged hit, in rank order)."""

    low: float
    high: float
    low_fill: tuple[float, ...]
    high_fill: tuple[float, ...]


def ndcg_range(
    ranked_grades: Sequence[float | None] | NDArray,
    judged_grades: Sequence[float] | NDArray,
    *,
    k: int | None,
    grades: Sequence[float],
    gain: Gain = "exponential",
    discount: Discount = "log2",
    ideal: str = "judged",
    ideal_depth: IdealDepth = "cut",
) -> NdcgRange:
    """The range of NDCG@k that the unjudged hits of ``ranked_grades`` leave open.

    Parameters
    ----------
    ranked_grades : sequence of float or None
        The whole ranking's grades in rank order; None or NaN is unjudged.
    judged_grades : sequence of float
        Grades of the query's judged documents (returned or not), the ideal's source
        under ``ideal="judged"``.
    k : int or None
    grades : sequence of float
        The scale's grades, which an unjudged hit may turn out to have.
    gain, discount, ideal, ideal_depth
        As for :func:`metrics.core.ndcg.ndcg`; negative grades count 0.

    Examples
    --------
    Worked example F (docs/metrics.md): linear gain, k = 3, scale 0 to 3.

    >>> r = ndcg_range([3, None, 1, None], [3, 1, 0], k=3, grades=[0, 1, 2, 3], gain="linear")
    >>> round(r.low, 4), r.low_fill, round(r.high, 4), r.high_fill
    (0.649, (0.0, 3.0), 1.0, (3.0, 0.0))
    """
    k = check_k(k)
    if ideal not in ("judged", "returned"):
        raise ValueError(f"ideal must be judged or returned, not {ideal!r}")
    scale = sorted({float(g) for g in grades})
    if not scale:
        raise ValueError("grades must name at least one grade of the scale")
    ranked = as_grades(ranked_grades)
    judged = as_grades(judged_grades)
    unjudged = np.flatnonzero(np.isnan(ranked))

    def value(fill: Sequence[float]) -> float:
        filled = ranked.copy()
        filled[unjudged] = fill
        source = np.concatenate([judged, fill]) if ideal == "judged" else filled
        options = {"gain": gain, "discount": discount, "ideal_depth": ideal_depth}
        return ndcg(filled, source, k=k, **options).ndcg

    lowest, highest = scale[0], scale[-1]
    u = len(unjudged)
    low_fills = [(lowest,) * (u - m) + (highest,) * m for m in range(u + 1)]
    within = int(np.count_nonzero(unjudged < k)) if k is not None else u
    high_fills = [
        tuple(top) + (lowest,) * (u - within)
        for top in combinations_with_replacement(scale[::-1], within)
    ]
    low_fill = min(low_fills, key=value)
    high_fill = max(high_fills, key=value)
    return NdcgRange(value(low_fill), value(high_fill), low_fill, high_fill)
