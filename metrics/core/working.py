"""The "show the working" table of one query's NDCG, rank by rank (table D of the
worked examples); :func:`metrics.core.ndcg.ndcg` returns it as ``NdcgResult.rows``."""

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from metrics.core.gains import Discount, Gain, discount_values, signed_gain_values
from metrics.core.gains import gain_values as _gain_values
from metrics.core.ideal import IdealDepth


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


def _padded(values: NDArray[np.float64], length: int) -> NDArray[np.float64]:
    return np.concatenate((values, np.full(length - len(values), np.nan)))


def working_rows(
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
