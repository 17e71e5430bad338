"""Click models: per (query, document) relevance estimated from a search log's clicks.

Plain numpy. A log comes in as one row per document shown (``Impressions``): the pair
it belongs to (a code per query-document pair), its rank (from 1) and whether it was
clicked. Two estimates:

- **COEC**, clicks over expected clicks (Zhang & Jones [1]_, as OpenSearch's Search
  Relevance Workbench computes implicit judgments): the pair's clicks divided by the
  clicks an average document would have had at the ranks it was shown at, that is
  the sum of the log's click-through rate at each of its ranks. 1 is average; the
  estimate is not bounded.
- **PBM**, the position-based model (Craswell et al. [2]_; Chuklin, Markov & de Rijke
  [3]_, section 3.3): a document is clicked when it is examined, with a probability
  ``gamma[rank]`` that depends on the rank only, and attractive, with a probability
  ``alpha[pair]`` that depends on the pair only; ``P(click) = gamma * alpha``. Both
  are fitted by expectation maximisation ([3]_, section 4.2): a click says the
  document was examined and attractive; a skip that it was not both, in proportions
  the current estimates give. ``alpha`` is the relevance estimate, in [0, 1].

References
----------
.. [1] W. V. Zhang, R. Jones, "Comparing click logs and editorial labels for training
   query rewriting", WWW 2007 workshop on query log analysis.
.. [2] N. Craswell, O. Zoeter, M. Taylor, B. Ramsey, "An experimental comparison of
   click position-bias models", WSDM 2008.
.. [3] A. Chuklin, I. Markov, M. de Rijke, "Click Models for Web Search", Morgan &
   Claypool, 2015.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["ClickEstimate", "Impressions", "coec", "grades_of", "pbm"]


@dataclass(frozen=True)
class Impressions:
    """One entry per document shown: ``pair`` (codes 0..n_pairs-1), ``rank`` (from 1),
    ``clicked``."""

    pair: np.ndarray
    rank: np.ndarray
    clicked: np.ndarray

    @classmethod
    def of(cls, pair, rank, clicked) -> "Impressions":
        return cls(np.asarray(pair, np.int64), np.asarray(rank, np.int64),
                   np.asarray(clicked, bool))  # fmt: skip

    @property
    def pairs(self) -> int:
        return int(self.pair.max()) + 1 if len(self.pair) else 0


@dataclass(frozen=True)
class ClickEstimate:
    """Per pair: the relevance ``score``, its ``impressions`` and ``clicks``; per rank (from
    1, index 0 unused) the ``position`` figure (PBM's examination, COEC's rank CTR)."""

    score: np.ndarray
    impressions: np.ndarray
    clicks: np.ndarray
    position: np.ndarray
    model: str


def _rank_ctr(log: Impressions) -> np.ndarray:
    ranks = int(log.rank.max()) + 1 if len(log.rank) else 1
    shown = np.bincount(log.rank, minlength=ranks).astype(np.float64)
    clicks = np.bincount(log.rank, weights=log.clicked, minlength=ranks)
    return np.divide(clicks, shown, out=np.zeros(ranks), where=shown > 0)


def coec(log: Impressions) -> ClickEstimate:
    """Clicks over expected clicks per pair.

    Examples
    --------
    Rank 1 is clicked half the time and rank 2 a quarter: a document clicked once in
    two showings at rank 2 is clicked twice as often as expected there.

    >>> log = Impressions.of(pair=[0, 0, 1, 1, 1, 1, 2, 2], rank=[1, 1, 1, 1, 2, 2, 2, 2],
    ...                      clicked=[1, 1, 0, 0, 0, 1, 0, 0])
    >>> estimate = coec(log)
    >>> estimate.score.tolist()
    [2.0, 0.6666666666666666, 0.0]
    """
    ctr = _rank_ctr(log)
    n = log.pairs
    clicks = np.bincount(log.pair, weights=log.clicked, minlength=n)
    expected = np.bincount(log.pair, weights=ctr[log.rank], minlength=n)
    score = np.divide(clicks, expected, out=np.zeros(n), where=expected > 0)
    shown = np.bincount(log.pair, minlength=n)
    return ClickEstimate(score, shown, clicks.astype(np.int64), ctr, "coec")


def pbm(log: Impressions, *, iterations: int = 100, tolerance: float = 1e-9) -> ClickEstimate:
    """The position-based model's attractiveness per pair, fitted by EM.

    Examples
    --------
    Clicks drawn from known parameters come back close to them:

    >>> rng = np.random.default_rng(0)
    >>> alpha, gamma = np.array([0.9, 0.5, 0.1]), np.array([0.0, 1.0, 0.6, 0.3])
    >>> pair, rank = rng.integers(0, 3, 60_000), rng.integers(1, 4, 60_000)
    >>> clicked = rng.random(60_000) < alpha[pair] * gamma[rank]
    >>> estimate = pbm(Impressions.of(pair, rank, clicked))
    >>> np.round(estimate.score, 2).tolist(), np.round(estimate.position[1:], 2).tolist()
    ([0.91, 0.5, 0.1], [1.0, 0.6, 0.3])
    """
    n = log.pairs
    ranks = int(log.rank.max()) + 1 if len(log.rank) else 1
    shown_pair = np.bincount(log.pair, minlength=n).astype(np.float64)
    shown_rank = np.bincount(log.rank, minlength=ranks).astype(np.float64)
    alpha, gamma = np.full(n, 0.5), np.full(ranks, 0.5)
    clicked = log.clicked
    for _ in range(iterations):
        a, g = alpha[log.pair], gamma[log.rank]
        # A skip: P(attractive | no click) and P(examined | no click).
        rest = np.maximum(1 - a * g, 1e-12)
        attractive = np.where(clicked, 1.0, a * (1 - g) / rest)
        examined = np.where(clicked, 1.0, g * (1 - a) / rest)
        new_alpha = np.divide(np.bincount(log.pair, weights=attractive, minlength=n),
                              shown_pair, out=np.zeros(n), where=shown_pair > 0)  # fmt: skip
        new_gamma = np.divide(np.bincount(log.rank, weights=examined, minlength=ranks),
                              shown_rank, out=np.zeros(ranks), where=shown_rank > 0)  # fmt: skip
        # PBM is identified up to a common factor (alpha * c, gamma / c): rank 1 is
        # taken as always examined, as [3]_ does.
        top = new_gamma[1] if ranks > 1 and new_gamma[1] > 0 else 1.0
        new_alpha, new_gamma = np.clip(new_alpha * top, 0, 1), new_gamma / top
        change = max(np.abs(new_alpha - alpha).max(initial=0),
                     np.abs(new_gamma - gamma).max(initial=0))  # fmt: skip
        alpha, gamma = new_alpha, new_gamma
        if change < tolerance:
            break
    clicks = np.bincount(log.pair, weights=log.clicked, minlength=n).astype(np.int64)
    return ClickEstimate(alpha, shown_pair.astype(np.int64), clicks, gamma, "pbm")


def grades_of(
    estimate: ClickEstimate, scale: list[int], *, min_impressions: int = 10
) -> np.ndarray:
    """Each pair's grade on ``scale`` (ascending), or -1 for "can't tell" (fewer than
    ``min_impressions`` showings).

    The score is first put on [0, 1]: PBM's ``alpha`` as it is, COEC as
    ``coec / (1 + coec)`` (an average pair, COEC 1, sits in the middle); then [0, 1]
    is cut into as many equal bands as the scale has grades.

    Examples
    --------
    >>> estimate = ClickEstimate(np.array([0.05, 0.4, 0.99, 0.7]), np.array([50, 50, 50, 3]),
    ...                          np.zeros(4, int), np.zeros(2), "pbm")
    >>> grades_of(estimate, [0, 1, 2, 3]).tolist()
    [0, 1, 3, -1]
    """
    score = estimate.score if estimate.model == "pbm" else estimate.score / (1 + estimate.score)
    grades = np.asarray(sorted(scale), np.int64)
    band = np.minimum((np.clip(score, 0, 1) * len(grades)).astype(np.int64), len(grades) - 1)
    return np.where(estimate.impressions >= min_impressions, grades[band], -1)
