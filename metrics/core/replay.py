"""Raters' current grades at any moment of an append-only judgement log.

A rater's current grade of a pair is their latest event on it (by time, then id)
up to the moment: a grade counts, a can't-tell answer or a retraction leaves them
without one. Sorting the log once by (pair, rater, time, id) makes every moment a
single pass: the events up to the moment are a prefix of each (pair, rater) run,
and the current one is the last event of that prefix.
"""

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from metrics.core.consensus import consensus
from metrics.core.segments import FloatArray, Int64Array


@dataclass(frozen=True)
class SortedLog:
    """Judgement events sorted by pair, rater, time and id (see :func:`log_sort`)."""

    pair_keys: Int64Array
    times: Int64Array
    grades: FloatArray
    is_grade: np.ndarray
    run_last: np.ndarray


@dataclass(frozen=True)
class CurrentGrades:
    """Each judged pair's consensus as of one moment, sorted by pair key."""

    pair_keys: Int64Array
    consensus: FloatArray
    raters: Int64Array


def log_sort(
    pair_keys: ArrayLike,
    raters: ArrayLike,
    times: ArrayLike,
    ids: ArrayLike,
    grades: ArrayLike,
    is_grade: ArrayLike,
) -> SortedLog:
    """Sort one project's judgement events for :func:`current_grades`.

    Parameters
    ----------
    pair_keys : array-like of int, shape (n_events,)
        One sortable integer per (query, document) pair.
    raters, ids : array-like of int, shape (n_events,)
        The event's rater and its id, which breaks ties between equal times.
    times : array-like of int, shape (n_events,)
        When the event was recorded, in any integer unit (e.g. microseconds).
    grades : array-like of int, shape (n_events,)
        The grade given; any value for events that are not grades.
    is_grade : array-like of bool, shape (n_events,)
        False for can't-tell answers and retractions.

    Returns
    -------
    log : SortedLog
    """
    keys = np.asarray(pair_keys, dtype=np.int64)
    who = np.asarray(raters, dtype=np.int64)
    when = np.asarray(times, dtype=np.int64)
    order = np.lexsort((np.asarray(ids, dtype=np.int64), when, who, keys))
    keys, who, when = keys[order], who[order], when[order]
    # The last event of each (pair, rater) run: the next event has another pair or rater.
    run_last = np.ones(len(keys), dtype=bool)
    run_last[:-1] = (keys[1:] != keys[:-1]) | (who[1:] != who[:-1])
    return SortedLog(
        pair_keys=keys,
        times=when,
        grades=np.asarray(grades, dtype=np.int64)[order].astype(np.float64),
        is_grade=np.asarray(is_grade, dtype=bool)[order],
        run_last=run_last,
    )


def current_grades(log: SortedLog, moment: int, policy: str) -> CurrentGrades:
    """Consensus under ``policy`` of every pair with a current grade at ``moment``.

    Events dated after ``moment`` are ignored (one dated exactly at it counts).
    ``raters`` counts each pair's current grades.

    Examples
    --------
    One pair: rater 1 grades 3 then retracts, rater 2 grades 1 then 2.

    >>> keys, raters, times, ids = [7, 7, 7, 7], [1, 1, 2, 2], [10, 30, 10, 20], [1, 4, 2, 3]
    >>> log = log_sort(keys, raters, times, ids, [3, 0, 1, 2], [True, False, True, True])
    >>> grades = current_grades(log, 20, "mean")
    >>> grades.consensus.tolist(), grades.raters.tolist()
    ([2.5], [2])
    >>> current_grades(log, 30, "mean").consensus.tolist()
    [2.0]
    >>> len(current_grades(log, 5, "mean").pair_keys)
    0
    """
    seen = log.times <= moment
    # Times rise along a run, so the events seen are a prefix of it: an event is
    # current when it is seen and the next one of its run is not.
    next_unseen = np.ones(len(seen), dtype=bool)
    next_unseen[:-1] = ~seen[1:]
    current = seen & (log.run_last | next_unseen) & log.is_grade
    keys = log.pair_keys[current]
    starts = np.flatnonzero(np.r_[len(keys) > 0, keys[1:] != keys[:-1]])
    offsets = np.r_[starts, len(keys)].astype(np.int64)
    return CurrentGrades(
        pair_keys=keys[starts],
        consensus=consensus(log.grades[current], offsets, policy),
        raters=np.diff(offsets),
    )
