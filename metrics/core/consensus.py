"""Consensus grade of a (query, document) pair from its raters' current grades.

Policies
--------
mean (default)
    The arithmetic mean: fractional consensus grades are normal.
median
    The middle grade; the mean of the two middle grades for an even count.
majority
    The most frequent grade; a tie goes to the lowest of the tied grades, so a
    split panel never inflates relevance.
quepid
    Quepid's rule: with fewer than 3 grades, the mean; otherwise the top 3
    grades if they are equal, else the minimum of the top 3. Both branches give
    the third-highest grade, which is how it is computed here.

Every function takes the grades of all pairs flat, pair after pair, with
offsets as in :mod:`metrics.core.segments`; a pair with no grade has no
consensus (NaN).

``REGISTERED`` is the one list of policies: the project setting's choices, the
metric names of :mod:`metrics.registry`, the forms' and the API's choices, the
labels on the pages and the packed rows of ``judgements.packed`` all derive from
it (read through ``policy_names()`` each time, so that a policy appended at run
time counts at once). No policy's rule exists anywhere else, SQL included: adding
a policy is one rule function and one ``Policy`` entry in ``REGISTERED``. A rule
takes the pairs' grades sorted within each pair, the offsets and the counts, and
returns one float per pair (NaN for a pair without grades).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from metrics.core.segments import FloatArray, Int64Array, check_offsets, segment_ids

PolicyName = Literal["mean", "median", "majority", "quepid"]


def consensus(
    grades: ArrayLike, offsets: ArrayLike, policy: str = "mean", *, ordered: bool = False
) -> FloatArray:
    """Consensus grade of each pair under ``policy``.

    Parameters
    ----------
    grades : array-like of float, shape (n_grades,)
        Every pair's current grades, pair after pair, in any order within a pair.
    offsets : array-like of int, shape (n_pairs + 1,)
        Pair ``p`` owns ``grades[offsets[p]:offsets[p + 1]]``.
    policy : str, default="mean"
        The name of a policy of ``REGISTERED``.
    ordered : bool, default=False
        True when each pair's grades already come lowest first: they are not sorted
        again (the result is the same).

    Returns
    -------
    consensus : ndarray of float, shape (n_pairs,)
        NaN for a pair without grades.

    Examples
    --------
    Three pairs: a split panel, a unanimous one and one with four raters:

    >>> grades = [1, 3,  2, 2, 2,  0, 1, 3, 3]
    >>> offsets = [0, 2, 5, 9]
    >>> consensus(grades, offsets, "mean").tolist()
    [2.0, 2.0, 1.75]
    >>> consensus(grades, offsets, "majority").tolist()
    [1.0, 2.0, 3.0]
    >>> consensus(grades, offsets, "quepid").tolist()
    [2.0, 2.0, 1.0]
    """
    return consensus_all(grades, offsets, [policy], ordered=ordered)[policy]


def consensus_all(
    grades: ArrayLike, offsets: ArrayLike, policies=None, *, ordered: bool = False
) -> dict[str, FloatArray]:
    """``consensus`` under each of ``policies`` (every registered one by default), by
    name: the grades are sorted once for all of them (not at all when ``ordered``).

    >>> sorted(consensus_all([1, 3], [0, 2]).items())[:2]
    [('majority', array([1.])), ('mean', array([2.]))]
    >>> consensus_all([0, 2, 3, 1], [0, 3, 4], ["median"], ordered=True)["median"].tolist()
    [2.0, 1.0]
    """
    names = policy_names() if policies is None else tuple(policies)
    rules = {entry.name: entry.rule for entry in REGISTERED}
    for name in names:
        if name not in rules:
            raise ValueError(f"policy must be one of {policy_names()}, not {name!r}")
    values = np.asarray(grades, dtype=np.float64)
    bounds = check_offsets(offsets, len(values))
    if not ordered:
        values = values[np.lexsort((values, segment_ids(bounds)))]
    counts = np.diff(bounds)
    return {name: rules[name](values, bounds, counts) for name in names}


def _mean(ordered: FloatArray, bounds: Int64Array, counts: Int64Array) -> FloatArray:
    sums = np.bincount(segment_ids(bounds), weights=ordered, minlength=len(counts))
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _median(ordered: FloatArray, bounds: Int64Array, counts: Int64Array) -> FloatArray:
    low = _pick(ordered, bounds[:-1] + (counts - 1) // 2, counts)
    high = _pick(ordered, bounds[:-1] + counts // 2, counts)
    return (low + high) / 2


def _majority(ordered: FloatArray, bounds: Int64Array, counts: Int64Array) -> FloatArray:
    result = np.full(len(counts), np.nan)
    if len(ordered) == 0:
        return result
    pairs = segment_ids(bounds)
    levels, level_of = np.unique(ordered, return_inverse=True)
    tally = np.zeros((len(counts), len(levels)), dtype=np.int64)
    np.add.at(tally, (pairs, level_of), 1)
    # argmax returns the first maximum, which is the lowest of tied grades.
    winners = levels[np.argmax(tally, axis=1)]
    return np.where(counts > 0, winners, result)


def _quepid(ordered: FloatArray, bounds: Int64Array, counts: Int64Array) -> FloatArray:
    third_highest = _pick(ordered, bounds[1:] - 3, counts - 2)
    return np.where(counts < 3, _mean(ordered, bounds, counts), third_highest)


def _pick(ordered: FloatArray, positions: Int64Array, valid: Int64Array) -> FloatArray:
    """``ordered[positions]`` where ``valid > 0``, NaN elsewhere (positions may be junk)."""
    ok = valid > 0
    safe = np.where(ok, positions, 0)
    picked = ordered[safe] if len(ordered) else np.zeros(len(positions))
    return np.where(ok, picked, np.nan)


Rule = Callable[[FloatArray, Int64Array, Int64Array], FloatArray]


@dataclass(frozen=True)
class Policy:
    """A consensus policy: its name (stored in settings and metric names, at most 16
    characters), its rule, its description for settings and its short label for pages."""

    name: str
    rule: Rule
    label: str
    short: str


REGISTERED: list[Policy] = [
    Policy("mean", _mean, "mean", "mean"),
    Policy("median", _median, "median", "median"),
    Policy("majority", _majority, "majority (ties to the lowest grade)", "majority"),
    Policy(
        "quepid",
        _quepid,
        "Quepid's rule (mean under 3 grades, else the lowest of the top 3)",
        "Quepid (third-highest)",
    ),
]


def policy_names() -> tuple[str, ...]:
    """The names of the registered policies, in order."""
    return tuple(entry.name for entry in REGISTERED)


def policy_choices() -> list[tuple[str, str]]:
    """(name, description) of each policy: a project setting's choices."""
    return [(entry.name, entry.label) for entry in REGISTERED]


def policy_labels() -> dict[str, str]:
    """Each policy's short label, for pages and chart captions."""
    return {entry.name: entry.short for entry in REGISTERED}


# The policies when this module was imported; policy_names() also sees later entries.
POLICIES: tuple[str, ...] = policy_names()
