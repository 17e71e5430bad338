"""Online metrics from a search log: click-through, successful sessions, time to success.

Pure numpy, no Django and no I/O: the caller hands over one flat array per event
field (``SearchEvents``) and gets per-session outcomes (``session_outcomes``) or
totals grouped by day and/or query (``online_metrics``).

Definitions
-----------
impression
    A results page shown to a searcher: a session, a time, a query (an id, or -1
    when the log's text matched no query of the project) and whether the page was
    flagged as answering the query on its own.
click
    A click on a document of a results page. It belongs to the latest impression of
    the same session shown at or before it (an impression and a click at the same
    second: the impression comes first). Its dwell is the seconds until the searcher
    came back; ``inf`` stands for the end-of-session marker (the searcher never came
    back, so the dwell is longer than any threshold); ``nan`` for no dwell recorded.
click without an impression
    A click with no impression earlier in its session is counted in
    ``orphan_clicks`` and nowhere else: it has no results page, hence no query, and
    it neither raises the click-through rate nor makes a session successful.
duplicate clicks
    Several clicks on the same document of the same results page count once in the
    click-through rate (a double click or a return to the same result is not a new
    choice). Each of them may still make the session successful.
click-through rate
    Clicks (duplicates removed) / impressions. It can exceed 1, since a page may get
    several clicks.
successful session
    A session with a click of dwell >= ``success_dwell`` seconds (10 by default), or
    a results page flagged as answering the query (a zero-click success). Its first
    success is the earliest such click or answered page.
time to success
    Seconds from the session's first impression to its first success, and the
    number of queries (impressions) from the first one up to and including the page
    the success came from. Averaged over successful sessions only.
queries per session
    Impressions per session, averaged over sessions.
days
    UTC days, as whole days since 1970-01-01. A session belongs, with all its
    events, to the day of its first event, also when it spans midnight.
per query
    Impressions and clicks count under the query of their own results page; session
    measures (sessions, successes, time to success, queries per session) count under
    the query of the session's first impression. Query -1 collects unmatched texts.

A session with no impression at all (only clicks) is not a session in any measure;
its clicks are orphan clicks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IMPRESSION, CLICK = 0, 1
DAY_SECONDS = 86_400
UNMATCHED = -1

__all__ = [
    "CLICK",
    "IMPRESSION",
    "UNMATCHED",
    "OnlineTable",
    "SearchEvents",
    "SessionOutcomes",
    "online_metrics",
    "session_outcomes",
]


@dataclass(frozen=True)
class SearchEvents:
    """A search log as equally long flat arrays, one entry per event, in any order.

    Parameters
    ----------
    session : int array
        A code per session (any integers; equal codes are one session).
    time : float array
        Seconds since 1970-01-01 UTC.
    kind : int array
        ``IMPRESSION`` (0) or ``CLICK`` (1).
    query : int array
        The impression's query id, ``UNMATCHED`` (-1) if none; ignored for clicks.
    answered : bool array
        The impression's page answered the query; ignored for clicks.
    document : int array
        A code per clicked document; ignored for impressions.
    dwell : float array
        The click's dwell in seconds, ``inf`` for end of session, ``nan`` if unknown.
    """

    session: np.ndarray
    time: np.ndarray
    kind: np.ndarray
    query: np.ndarray
    answered: np.ndarray
    document: np.ndarray
    dwell: np.ndarray

    @classmethod
    def from_rows(cls, rows) -> SearchEvents:
        """Events from ``(session, time, kind, query, answered, document, dwell)`` tuples."""
        columns = list(zip(*rows, strict=True)) if rows else [()] * 7
        types = (np.int64, np.float64, np.int8, np.int64, bool, np.int64, np.float64)
        return cls(*(np.asarray(c, dtype=t) for c, t in zip(columns, types, strict=True)))

    def __len__(self) -> int:
        return len(self.session)


@dataclass(frozen=True)
class SessionOutcomes:
    """One entry per session with at least one impression, in session-code order.

    ``seconds_to_success`` and ``queries_to_success`` are nan for unsuccessful
    sessions; ``zero_click`` marks sessions whose first success is an answered page.
    """

    session: np.ndarray
    day: np.ndarray
    first_query: np.ndarray
    queries: np.ndarray
    successful: np.ndarray
    zero_click: np.ndarray
    seconds_to_success: np.ndarray
    queries_to_success: np.ndarray


@dataclass(frozen=True)
class OnlineTable:
    """Totals per group: ``day`` and/or ``query`` name the groups (None if not grouped by).

    Rates and means are nan where their denominator is 0.
    """

    day: np.ndarray | None
    query: np.ndarray | None
    impressions: np.ndarray
    clicks: np.ndarray
    orphan_clicks: np.ndarray
    sessions: np.ndarray
    successful_sessions: np.ndarray
    zero_click_successes: np.ndarray
    seconds_to_success: np.ndarray
    queries_to_success: np.ndarray
    queries_per_session: np.ndarray
    success_dwell: float

    @property
    def ctr(self) -> np.ndarray:
        return _ratio(self.clicks, self.impressions)

    @property
    def success_rate(self) -> np.ndarray:
        return _ratio(self.successful_sessions, self.sessions)

    def __len__(self) -> int:
        return len(self.impressions)


def _ratio(numerator, denominator) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.maximum(denominator, 1), np.nan)


class _Log:
    """The events sorted by session, time and kind, with what every measure needs."""

    def __init__(self, events: SearchEvents, success_dwell: float):
        if not np.isfinite(success_dwell) or success_dwell < 0:
            raise ValueError(f"success_dwell must be a finite number >= 0, not {success_dwell}.")
        order = np.lexsort((events.kind, events.time, events.session))
        self.session, self.time = events.session[order], events.time[order]
        self.query, self.answered = events.query[order], events.answered[order]
        self.document, self.dwell = events.document[order], events.dwell[order]
        kind = events.kind[order]
        n = len(order)
        self.n, index = n, np.arange(n)
        starts = np.r_[True, self.session[1:] != self.session[:-1]] if n else np.zeros(0, bool)
        self.first_row = np.flatnonzero(starts)
        self.row_session = np.cumsum(starts) - 1
        self.is_impression = kind == IMPRESSION
        latest = np.maximum.accumulate(np.where(self.is_impression, index, -1)) if n else index
        in_session = latest >= self.first_row[self.row_session] if n else np.zeros(0, bool)
        is_click = kind == CLICK
        self.attributed = is_click & in_session
        self.orphan = is_click & ~in_session
        # The impression each impression or attributed click belongs to (-1: none).
        self.page = np.where(self.is_impression | self.attributed, latest, -1)
        self.counted_click = self._first_click_per_page_and_document()
        success = (self.attributed & (self.dwell >= success_dwell)) | (
            self.is_impression & self.answered
        )
        self.first_success = self._first_per_session(success)
        self.first_impression = self._first_per_session(self.is_impression)
        self.session_day = (
            np.floor(self.time[self.first_row] / DAY_SECONDS).astype(np.int64)
            if n
            else np.zeros(0, np.int64)
        )

    def _first_per_session(self, mask: np.ndarray) -> np.ndarray:
        """Per session, the first row where ``mask`` holds, else ``n``."""
        if not self.n:
            return np.zeros(0, np.int64)
        return np.minimum.reduceat(np.where(mask, np.arange(self.n), self.n), self.first_row)

    def _first_click_per_page_and_document(self) -> np.ndarray:
        counted = np.zeros(self.n, bool)
        rows = np.flatnonzero(self.attributed)
        if rows.size:
            page, document = self.page[rows], self.document[rows]
            order = np.lexsort((rows, document, page))
            page, document = page[order], document[order]
            first = np.r_[True, (page[1:] != page[:-1]) | (document[1:] != document[:-1])]
            counted[rows[order[first]]] = True
        return counted


def session_outcomes(events: SearchEvents, *, success_dwell: float = 10.0) -> SessionOutcomes:
    """Each session's day, first query, queries, success and time to success.

    Parameters
    ----------
    events : SearchEvents
    success_dwell : float, default 10
        The dwell in seconds from which a click counts as a success.

    Returns
    -------
    SessionOutcomes
        Sessions without an impression are left out.

    Examples
    --------
    A short click (3 s), then a second query and a long click (45 s):

    >>> events = SearchEvents.from_rows([
    ...     (1, 0.0, IMPRESSION, 7, False, -1, np.nan),
    ...     (1, 5.0, CLICK, -1, False, 100, 3.0),
    ...     (1, 20.0, IMPRESSION, 8, False, -1, np.nan),
    ...     (1, 30.0, CLICK, -1, False, 200, 45.0),
    ... ])
    >>> outcome = session_outcomes(events)
    >>> bool(outcome.successful[0]), float(outcome.seconds_to_success[0])
    (True, 30.0)
    >>> float(outcome.queries_to_success[0])
    2.0
    """
    return _outcomes(_Log(events, success_dwell))


def _outcomes(log: _Log) -> SessionOutcomes:
    keep = log.first_impression < log.n
    first_impression, first_success = log.first_impression[keep], log.first_success[keep]
    successful = first_success < log.n
    success_row = np.where(successful, first_success, 0)
    seen = np.cumsum(log.is_impression)
    seconds = log.time[success_row] - log.time[first_impression]
    queries = seen[log.page[success_row]] - seen[first_impression] + 1
    counts = np.add.reduceat(log.is_impression, log.first_row) if log.n else np.zeros(0, int)
    return SessionOutcomes(
        session=log.session[log.first_row][keep],
        day=log.session_day[keep],
        first_query=log.query[first_impression],
        queries=counts[keep].astype(np.int64),
        successful=successful,
        zero_click=successful & log.is_impression[success_row],
        seconds_to_success=np.where(successful, seconds, np.nan),
        queries_to_success=np.where(successful, queries, np.nan).astype(np.float64),
    )


def online_metrics(
    events: SearchEvents, *, by: tuple[str, ...] = ("day",), success_dwell: float = 10.0
) -> OnlineTable:
    """Click-through, successful-session rate and time to success per day and/or query.

    Parameters
    ----------
    events : SearchEvents
    by : tuple of "day" and/or "query", default ("day",)
        The grouping; groups come out sorted (by day, then query).
    success_dwell : float, default 10
        The dwell in seconds from which a click counts as a success.

    Returns
    -------
    OnlineTable
        See the module docstring for every definition and edge case.

    Examples
    --------
    A session that stops after one page without a click (abandoned) and one whose
    page answered the query (a zero-click success), on the same day:

    >>> events = SearchEvents.from_rows([
    ...     (1, 100.0, IMPRESSION, 7, False, -1, np.nan),
    ...     (2, 200.0, IMPRESSION, 7, True, -1, np.nan),
    ... ])
    >>> table = online_metrics(events)
    >>> int(table.sessions[0]), int(table.successful_sessions[0]), float(table.ctr[0])
    (2, 1, 0.0)
    """
    if not set(by) <= {"day", "query"} or not by:
        raise ValueError(f'by must name "day" and/or "query", not {by!r}.')
    log = _Log(events, success_dwell)
    outcomes = _outcomes(log)
    row_day = log.session_day[log.row_session] if log.n else np.zeros(0, np.int64)
    row_query = np.where(log.page >= 0, log.query[np.maximum(log.page, 0)], UNMATCHED)
    grouping = _Grouping(by)
    groups = grouping.keys(
        (row_day[log.is_impression], row_query[log.is_impression]),
        (row_day[log.orphan], np.full(int(log.orphan.sum()), UNMATCHED)),
        (outcomes.day, outcomes.first_query),
    )
    count = grouping.counter(groups)
    impressions = count(row_day[log.is_impression], row_query[log.is_impression])
    clicks = count(row_day[log.counted_click], row_query[log.counted_click])
    orphans = count(row_day[log.orphan], np.full(int(log.orphan.sum()), UNMATCHED))
    per_session = (outcomes.day, outcomes.first_query)
    sessions = count(*per_session)
    won = outcomes.successful
    successful = count(*per_session, weights=won)
    seconds = count(*per_session, weights=np.where(won, outcomes.seconds_to_success, 0.0))
    steps = count(*per_session, weights=np.where(won, outcomes.queries_to_success, 0.0))
    return OnlineTable(
        day=groups[0] if "day" in by else None,
        query=groups[1] if "query" in by else None,
        impressions=impressions.astype(np.int64),
        clicks=clicks.astype(np.int64),
        orphan_clicks=orphans.astype(np.int64),
        sessions=sessions.astype(np.int64),
        successful_sessions=successful.astype(np.int64),
        zero_click_successes=count(*per_session, weights=outcomes.zero_click).astype(np.int64),
        seconds_to_success=_ratio(seconds, successful),
        queries_to_success=_ratio(steps, successful),
        queries_per_session=_ratio(count(*per_session, weights=outcomes.queries), sessions),
        success_dwell=float(success_dwell),
    )


class _Grouping:
    """Group keys from (day, query) pairs, keeping only the parts grouped by.

    A pair is packed into one int64, ``day * 2**32 + query + 1`` (query ids are
    below 2**31), which sorts as the pair does and is quick to search.
    """

    def __init__(self, by: tuple[str, ...]):
        self.by_day, self.by_query = "day" in by, "query" in by

    def _packed(self, day, query) -> np.ndarray:
        day = np.asarray(day, np.int64) if self.by_day else np.zeros(len(day), np.int64)
        query = np.asarray(query, np.int64) if self.by_query else np.zeros(len(query), np.int64)
        return (day << 32) + query + 1

    def keys(self, *parts) -> tuple[np.ndarray, np.ndarray]:
        packed = np.unique(np.concatenate([self._packed(*part) for part in parts]))
        return packed >> 32, (packed & 0xFFFFFFFF) - 1

    def counter(self, groups: tuple[np.ndarray, np.ndarray]):
        keys = (groups[0] << 32) + groups[1] + 1

        def count(day, query, weights=None) -> np.ndarray:
            index = np.searchsorted(keys, self._packed(day, query))
            return np.bincount(index, weights=weights, minlength=len(keys)).astype(np.float64)

        return count
