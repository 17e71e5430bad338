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

from metrics.core.gains import Discount, Gain, discount_values, gain_values
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
    others: int = 0,
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
    others : int
        Unjudged documents of the query that the ranking does not return (another
        list's hits): graded, they join the ideal under ``ideal="judged"`` (and nothing
        under ``"returned"``), like unjudged hits ranked below k. Their grades come
        last in the fillings.

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
    returned = len(unjudged)
    extra = others if ideal == "judged" else 0

    def value(fill: Sequence[float]) -> float:
        filled = ranked.copy()
        filled[unjudged] = fill[:returned]
        source = np.concatenate([judged, fill]) if ideal == "judged" else filled
        options = {"gain": gain, "discount": discount, "ideal_depth": ideal_depth}
        return ndcg(filled, source, k=k, **options).ndcg

    lowest, highest = scale[0], scale[-1]
    u = returned + extra
    low_fills = [(lowest,) * (u - m) + (highest,) * m for m in range(u + 1)]
    within = int(np.count_nonzero(unjudged < k)) if k is not None else returned
    high_fills = [
        tuple(top) + (lowest,) * (u - within)
        for top in combinations_with_replacement(scale[::-1], within)
    ]
    if k is not None and ideal == "judged" and ideal_depth == "cut" and u:
        # Every filling at once in numpy (the working rows of ndcg cost most of the time).
        lows = _values(ranked, judged, unjudged, low_fills, k, gain, discount)
        highs = _values(ranked, judged, unjudged, high_fills, k, gain, discount)
        at, to = int(np.argmin(lows)), int(np.argmax(highs))
        return NdcgRange(float(lows[at]), float(highs[to]), low_fills[at], high_fills[to])
    low_fill = min(low_fills, key=value)
    high_fill = max(high_fills, key=value)
    return NdcgRange(value(low_fill), value(high_fill), low_fill, high_fill)


def _values(ranked, judged, unjudged, fills, k: int, gain, discount) -> NDArray:
    """NDCG@k of each filling (rows of ``fills``), judged ideal cut at k, vectorised."""
    fill = np.asarray(fills, dtype=np.float64)
    top = ranked[:k]
    weights = discount_values(max(len(top), k), discount)
    known = gain_values(np.where(np.isnan(top), 0.0, top), gain) @ weights[: len(top)]
    within = unjudged[unjudged < k]
    gains = gain_values(fill, gain)
    dcg = known + gains[:, : len(within)] @ weights[within]
    pool = np.concatenate(
        [
            np.broadcast_to(
                gain_values(judged[~np.isnan(judged)], gain),
                (len(fill), len(judged[~np.isnan(judged)])),
            ),
            gains,
        ],
        axis=1,
    )
    best = -np.sort(-pool, axis=1)[:, :k]
    idcg = best @ weights[: best.shape[1]]
    # DCG never exceeds IDCG here (the ranked grades are among the ideal's); the
    # minimum only takes off rounding in the last bit.
    return np.minimum(np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0), 1.0)


@dataclass(frozen=True, slots=True)
class NdcgRanges:
    """Per-query ``low`` and ``high`` ends of the range (queries in offset order), and
    which queries had an unjudged hit (``open``: the others have ``low == high``)."""

    low: NDArray
    high: NDArray
    open: NDArray


def ndcg_ranges(
    ranked_grades: NDArray,
    offsets: NDArray,
    judged_grades: NDArray,
    judged_offsets: NDArray,
    *,
    k: int | None,
    grades: Sequence[float],
    gain: Gain = "exponential",
    discount: Discount = "log2",
    ideal: str = "judged",
    ideal_depth: IdealDepth = "cut",
    others: NDArray | None = None,
) -> NdcgRanges:
    """:func:`ndcg_range` of every query of a batch (flat arrays with offsets, as
    :func:`metrics.core.batch.ndcg_batch` takes them).

    A query without an unjudged hit has one NDCG, computed for the whole batch at
    once; :func:`ndcg_range` runs only for the queries that have one, or ``others``
    (per query: unjudged documents other lists return, see :func:`ndcg_range`).

    >>> ranked = np.array([3, np.nan, 1, np.nan, 2, 1])
    >>> r = ndcg_ranges(ranked, np.array([0, 4, 6]), np.array([3, 1, 0, 2, 1]),
    ...                 np.array([0, 3, 5]), k=3, grades=[0, 1, 2, 3], gain="linear")
    >>> np.round(r.low, 4).tolist(), np.round(r.high, 4).tolist(), r.open.tolist()
    ([0.649, 1.0], [1.0, 1.0], [True, False])
    """
    from metrics.core.batch import ndcg_batch

    ranked = np.asarray(ranked_grades, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    judged = np.asarray(judged_grades, dtype=np.float64)
    judged_offsets = np.asarray(judged_offsets, dtype=np.int64)
    n = len(offsets) - 1
    missing = np.isnan(ranked)
    counts = np.concatenate([[0], np.cumsum(missing)])
    open_ = counts[offsets[1:]] > counts[offsets[:-1]]
    others = np.zeros(n, np.int64) if others is None else np.asarray(others, np.int64)
    if ideal == "judged":
        open_ |= (others > 0) & (np.diff(offsets) > 0)
    ideal_grades, ideal_offsets = (
        (ranked, offsets) if ideal == "returned" else (judged, judged_offsets)
    )
    options = {"gain": gain, "discount": discount, "ideal_depth": ideal_depth}
    fixed = ndcg_batch(
        ranked, offsets, k=k, ideal_grades=ideal_grades, ideal_offsets=ideal_offsets,
        unjudged="zero", negative="zero", **options,
    ).ndcg  # fmt: skip
    low, high = fixed.astype(np.float64).copy(), fixed.astype(np.float64).copy()
    scale = np.unique(np.asarray(list(grades), dtype=np.float64))
    if (
        k is not None and ideal == "judged" and ideal_depth == "cut" and len(scale)
        and gain_values(scale[:1], gain)[0] == 0.0
    ):  # fmt: skip
        # The usual case, every open query at once (see _batch_ranges).
        queries = np.flatnonzero(open_)
        low[queries], high[queries] = _batch_ranges(
            ranked, offsets, judged, judged_offsets, queries, others[queries],
            k=k, scale=scale, gain=gain, discount=discount,
        )  # fmt: skip
        return NdcgRanges(low, high, open_)
    for q in np.flatnonzero(open_).tolist():
        found = ndcg_range(
            ranked[offsets[q] : offsets[q + 1]],
            judged[judged_offsets[q] : judged_offsets[q + 1]],
            k=k, grades=grades, ideal=ideal, others=int(others[q]), **options,
        )  # fmt: skip
        low[q], high[q] = found.low, found.high
    return NdcgRanges(low, high, open_)


def _segment_positions(offsets: NDArray) -> NDArray:
    """The position of each element within its segment of a flat array."""
    sizes = np.diff(offsets)
    return np.arange(int(offsets[-1] - offsets[0])) - np.repeat(offsets[:-1] - offsets[0], sizes)


def _batch_ranges(ranked, offsets, judged, judged_offsets, queries, others, *, k, scale, gain,
                  discount) -> tuple[NDArray, NDArray]:  # fmt: skip
    """:func:`ndcg_range`'s two ends for many queries at once: judged ideal cut at k,
    the scale's lowest grade of gain 0 (so a hit filled with it adds nothing anywhere).

    Low end: the highest grade goes to the ``m`` deepest unjudged documents (returned in
    rank order, then ``others``). While none of them is in the top k, DCG stays and IDCG
    only grows with ``m``, so of those fillings the one with most such documents is
    lowest; the other candidates put the highest grade on the last ``j`` unjudged hits of
    the top k too, ``j`` = 1 .. their count: at most k + 1 candidates per query. High
    end: every non-increasing sequence of the scale's gains on the unjudged hits of the
    top k, the rest at gain 0, as ``ndcg_range`` tries them, for the queries with as many
    unjudged hits in the top k at once.
    """
    n = len(queries)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    weights = discount_values(k, discount)
    starts, ends = offsets[queries], offsets[queries + 1]
    sizes = np.minimum(ends - starts, k)
    # The top k of each open query as an (n, k) matrix; hits past a short list are "judged 0".
    rank = np.arange(k)
    index = starts[:, None] + rank[None, :]
    inside = rank[None, :] < sizes[:, None]
    top = np.where(inside, ranked[np.where(inside, index, 0)], 0.0)
    missing = np.isnan(top) & inside
    known = gain_values(np.where(missing, 0.0, top), gain) @ weights
    within = missing.sum(axis=1)
    counts = np.concatenate([[0], np.cumsum(np.isnan(ranked))])
    u = counts[ends] - counts[starts] + others
    # The weights of the unjudged hits of the top k, left-aligned in rank order.
    order = np.argsort(~missing, axis=1, kind="stable")
    slots = np.take_along_axis(np.where(missing, weights[None, :], 0.0), order, axis=1)
    # Each query's judged gains, the k largest, as an (n, k) matrix padded with 0.
    j_starts, j_ends = judged_offsets[queries], judged_offsets[queries + 1]
    j_sizes = j_ends - j_starts
    j_index = np.repeat(j_starts, j_sizes) + _segment_positions(
        np.concatenate([[0], np.cumsum(j_sizes)])
    )
    j_gains = gain_values(judged[j_index], gain)
    owner = np.repeat(np.arange(n), j_sizes)
    sort = np.lexsort((-j_gains, owner))
    j_rank = _segment_positions(np.concatenate([[0], np.cumsum(j_sizes)]))
    best = np.zeros((n, k))
    keep = j_rank < k
    best[owner[sort][keep], j_rank[keep]] = j_gains[sort][keep]
    highest = float(gain_values(scale[-1:], gain)[0])
    # Low end. tail[mm] = what the judged gains add to IDCG after mm highest fills.
    tail = np.stack(
        [best[:, : k - mm] @ weights[mm:] for mm in range(k + 1)], axis=1
    )  # (n, k + 1)
    cumulative = np.concatenate([[0.0], np.cumsum(weights)])
    filled = np.concatenate([np.zeros((n, 1)), np.cumsum(slots, axis=1)], axis=1)
    j = np.arange(k + 1)[None, :]
    valid = j <= within[:, None]
    back = np.clip(within[:, None] - j, 0, k)
    suffix = np.take_along_axis(filled, within[:, None], axis=1) - np.take_along_axis(
        filled, back, axis=1
    )
    m = np.minimum(u[:, None] - within[:, None] + j, k)
    dcg = known[:, None] + highest * suffix
    idcg = highest * cumulative[m] + np.take_along_axis(tail, m, axis=1)
    low = np.where(valid, _ratio(dcg, idcg), np.inf).min(axis=1)
    # High end, grouped by the number of unjudged hits in the top k. IDCG of a filling
    # merges two descending lists, the fills and the judged gains: a fill's place is its
    # index plus the judged gains above it, a judged gain's its index plus the fills at
    # or above it (no sort of every candidate).
    gains = np.unique(gain_values(scale, gain))[::-1]
    beyond = np.concatenate([weights, np.zeros(2 * k + 1)])  # places past k weigh 0
    above = (best[:, :, None] > gains[None, None, :]).sum(axis=1)  # (n, levels)
    at_least = best[:, :, None] <= gains[None, None, :]  # (n, k, levels)
    high = np.empty(n)
    for count in np.unique(within).tolist():
        rows = np.flatnonzero(within == count)
        levels = np.array(
            list(combinations_with_replacement(range(len(gains)), count)) if count else [[]],
            dtype=np.int64,
        )
        fills = gains[levels]  # (candidates, count), descending
        per_level = np.stack([(levels == v).sum(axis=1) for v in range(len(gains))], axis=1)
        step = max(1, 2_000_000 // max(1, len(fills) * (k + count)))
        for at in range(0, len(rows), step):
            part = rows[at : at + step]
            dcg = known[part, None] + slots[part, :count] @ fills.T
            places = np.arange(count)[None, None, :] + above[part][:, levels]
            idcg = (fills[None, :, :] * beyond[places]).sum(axis=2)
            ahead = at_least[part].astype(np.int64) @ per_level.T  # (part, k, candidates)
            places = np.arange(k)[None, :, None] + ahead
            idcg += np.einsum("qj,qjc->qc", best[part], beyond[places])
            high[part] = _ratio(dcg, idcg).max(axis=1)
    return low, high


def _ratio(dcg: NDArray, idcg: NDArray) -> NDArray:
    """DCG / IDCG, 0 where IDCG is 0, at most 1 (rounding in the last bit)."""
    safe = np.where(idcg > 0, idcg, 1.0)
    return np.minimum(np.where(idcg > 0, dcg / safe, 0.0), 1.0)


def difference_bounds(
    low_a: NDArray, high_a: NDArray, low_b: NDArray, high_b: NDArray
) -> tuple[float, float]:
    """Bounds of the mean difference B - A over paired queries, from each list's range.

    Per query the difference lies in ``[low_b - high_a, high_b - low_a]``; the mean's
    bounds are the means of those ends. An **outer** bound: a document both lists
    return gets one grade in both, which these ends ignore (they may pair A's highest
    filling with B's lowest though the two share the unjudged document), so the true
    range of the difference may be narrower, never wider.

    >>> low, high = difference_bounds(np.array([0.5, 0.2]), np.array([0.7, 0.2]),
    ...                               np.array([0.6, 0.4]), np.array([0.6, 0.4]))
    >>> round(low, 12), round(high, 12)
    (0.05, 0.15)
    """
    if len(low_a) == 0:
        return (0.0, 0.0)
    low = float(np.mean(np.asarray(low_b) - np.asarray(high_a)))
    high = float(np.mean(np.asarray(high_b) - np.asarray(low_a)))
    return (low, high)


B_BETTER, A_BETTER, NO_DIFFERENCE, NOT_DECIDED = (
    "b_better", "a_better", "no_difference", "not_decided",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Verdict:
    """Which list is better, or why that is not decided yet."""

    decision: str
    reason: str
    unjudged_pairs: int
    alpha: float


def verdict(
    *,
    mean_difference: float,
    p_value: float,
    bounds: tuple[float, float],
    interval: tuple[float, float],
    unjudged_pairs: int,
    alpha: float = 0.05,
) -> Verdict:
    """The comparison's decision.

    Decided means the sign of B - A holds over the whole bounds interval and the
    randomisation test rejects at ``alpha``. While unjudged pairs remain and the
    bounds cross 0 the grades still to come could change the answer ("not decided");
    else a test that rejects decides by the sign of the mean difference; else, with
    unjudged pairs left, more grades may decide (the interval of the difference
    crosses 0), and with none, no difference is shown. A comparison with no unjudged
    pair has bounds of width 0: the verdict is the test's alone.

    >>> verdict(mean_difference=0.1, p_value=0.001, bounds=(0.1, 0.1),
    ...         interval=(0.05, 0.15), unjudged_pairs=0).decision
    'b_better'
    >>> v = verdict(mean_difference=0.1, p_value=0.001, bounds=(-0.2, 0.3),
    ...             interval=(0.05, 0.15), unjudged_pairs=7)
    >>> v.decision, v.unjudged_pairs
    ('not_decided', 7)
    >>> verdict(mean_difference=0.0, p_value=0.9, bounds=(0.0, 0.0),
    ...         interval=(-0.1, 0.1), unjudged_pairs=0).decision
    'no_difference'
    """
    low, high = bounds
    pairs = (
        f"{unjudged_pairs:,} unjudged (query, document) pair{'s' if unjudged_pairs != 1 else ''}"
    )
    if unjudged_pairs and not (
        (low > 0 and mean_difference > 0) or (high < 0 and mean_difference < 0)
    ):
        reason = (
            "Not decided yet: the unjudged hits could still change the answer. The bounds "
            f"of the difference ({low:+.4f} to {high:+.4f}) cross zero; {pairs} in the "
            "top k stand in the way."
        )
        return Verdict(NOT_DECIDED, reason, unjudged_pairs, alpha)
    if p_value < alpha:
        better = B_BETTER if mean_difference > 0 else A_BETTER
        name = "B" if better == B_BETTER else "A"
        reason = (
            f"{name} better: mean difference {mean_difference:+.4f}, p = {p_value:.3g} < "
            f"{alpha:g}, and every grade the unjudged hits could get keeps the sign "
            f"(bounds {low:+.4f} to {high:+.4f})."
        )
        return Verdict(better, reason, unjudged_pairs, alpha)
    if unjudged_pairs:
        why = f"the randomisation test does not reject at {alpha:g} (p = {p_value:.3g})"
        if interval[0] < 0 < interval[1]:
            why = (
                f"the interval of the difference ({interval[0]:+.4f} to {interval[1]:+.4f}) "
                f"crosses zero (p = {p_value:.3g}, not below {alpha:g})"
            )
        reason = f"Not decided yet: {why}; grades for {pairs} may decide it."
        return Verdict(NOT_DECIDED, reason, unjudged_pairs, alpha)
    reason = (
        f"No difference shown: p = {p_value:.3g}, not below {alpha:g}, with every hit "
        "in the top k judged."
    )
    return Verdict(NO_DIFFERENCE, reason, unjudged_pairs, alpha)
