"""Online metrics from a search log: click-through, successful sessions, time to success.

One definition, in SQL, for every engine that holds a log: PostgreSQL (the ingested
log), DuckDB (Parquet files read in place) and Spark (logs no single machine holds).
:func:`online_sql` renders it over a relation of events that the caller names;
the engine returns integer totals per group (``TOTALS``), and :func:`online_table`
turns them into rates and means here, in numpy. Integer sums are exact in every
engine, so the three give equal numbers by construction; only the divisions, done
once here, are floating point.

The events relation
-------------------
One row per impression or click, with the columns
``sid`` (the session, any type with equality), ``ts`` (bigint microseconds since
1970 UTC), ``kind`` (``IMPRESSION`` 0 or ``CLICK`` 1), ``qkey`` (the impression's
query key, NULL for clicks: a query id, or a text the caller maps to one),
``answered`` (boolean), ``doc`` (the clicked document), ``dwell`` (the click's
longest dwell in seconds, NULL if none), ``ended`` (the click has an
end-of-session marker: the searcher never came back) and ``tiebreak`` (a text
unique per event, such as its id, so that events of one session at the same
microsecond have one order in every engine).

Definitions
-----------
impression
    A results page shown to a searcher: a session, a time, a query and whether the
    page was flagged as answering the query on its own.
click
    A click on a document of a results page. It belongs to the latest impression of
    the same session shown at or before it (an impression and a click at the same
    microsecond: the impression comes first). Its dwell is the seconds until the
    searcher came back; the end-of-session marker counts as longer than any
    threshold; no dwell recorded is not a success.
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
    the query of the session's first impression. ``UNMATCHED`` (-1) collects
    impressions whose text matched no query, and orphan clicks.

A session with no impression at all (only clicks) is not a session in any measure;
its clicks are orphan clicks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

IMPRESSION, CLICK = 0, 1
UNMATCHED = -1
DAY_MICROS = 86_400 * 1_000_000
GROUPINGS = ("day", "query")
# What the engine returns per group, after the group's day and/or query key.
TOTALS = (
    "impressions", "clicks", "orphan_clicks", "sessions", "successful_sessions",
    "zero_click_successes", "success_micros", "success_queries", "session_queries",
)  # fmt: skip
# Text order differs between engines by collation; the tie-break must sort by code
# point everywhere (DuckDB and Spark compare strings byte-wise, as "C" does).
COLLATE = {"postgresql": ' COLLATE "C"', "duckdb": "", "spark": ""}

__all__ = [
    "CLICK", "COLLATE", "IMPRESSION", "TOTALS", "UNMATCHED", "OnlineTable",
    "online_sql", "online_table",
]  # fmt: skip

# One sort (the window), then two groupings: by session and page, then by session.
# A page's rows (its impression, then its clicks) all come before the next page's, so
# the first page with a success holds the session's first success.
_SQL = """
WITH ordered AS (
    SELECT sid, ts, kind, qkey, answered, doc, dwell, ended,
           sum(CASE WHEN kind = 0 THEN 1 ELSE 0 END) OVER w AS page,
           first_value(ts) OVER w AS first_ts
    FROM ({events}) events
    WINDOW w AS (PARTITION BY sid ORDER BY ts, kind, tiebreak{collate}
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
pages AS (
    SELECT sid, page,
           CAST(floor(min(first_ts) / {day}.0) AS BIGINT) AS log_day,
           max(CASE WHEN kind = 0 THEN qkey END) AS qkey,
           min(CASE WHEN kind = 0 THEN ts END) AS page_ts,
           count(DISTINCT CASE WHEN kind = 1 AND page > 0 THEN doc END) AS clicks,
           sum(CASE WHEN kind = 1 AND page = 0 THEN 1 ELSE 0 END) AS orphan_clicks,
           min(CASE WHEN (kind = 0 AND answered) OR (kind = 1 AND page > 0
                    AND (dwell >= {success_dwell} OR ended)) THEN ts END) AS success_ts,
           min(CASE WHEN kind = 0 AND answered THEN ts END) AS answered_ts
    FROM ordered GROUP BY sid, page
),
per_session AS (
    SELECT max(log_day) AS log_day,
           max(CASE WHEN page = 1 THEN qkey END) AS qkey,
           min(page_ts) AS first_page_ts,
           min(success_ts) AS success_ts,
           min(CASE WHEN success_ts IS NOT NULL THEN page END) AS success_page,
           min(CASE WHEN answered_ts = success_ts THEN page END) AS answered_page,
           max(page) AS queries
    FROM pages GROUP BY sid HAVING max(page) > 0
),
counted AS (
    SELECT log_day, qkey, CASE WHEN page > 0 THEN 1 ELSE 0 END AS impressions, clicks,
           orphan_clicks, 0 AS sessions, 0 AS successful_sessions, 0 AS zero_click_successes,
           0 AS success_micros, 0 AS success_queries, 0 AS session_queries
    FROM pages
    UNION ALL
    SELECT log_day, qkey, 0, 0, 0, 1,
           CASE WHEN success_ts IS NOT NULL THEN 1 ELSE 0 END,
           CASE WHEN answered_page = success_page THEN 1 ELSE 0 END,
           coalesce(success_ts - first_page_ts, 0), coalesce(success_page, 0), queries
    FROM per_session
)
SELECT {keys}, {sums}
FROM counted GROUP BY {keys}
"""


def online_sql(
    events: str, *, dialect: str, by: tuple[str, ...] = ("day",), success_dwell: float = 10.0
) -> str:
    """The online metrics' totals per group, as one SQL query over ``events``.

    Parameters
    ----------
    events : str
        A SELECT giving the events relation (see the module docstring).
    dialect : {"postgresql", "duckdb", "spark"}
    by : tuple of "day" and/or "query", default ("day",)
    success_dwell : float, default 10
        The dwell in seconds from which a click counts as a success.

    Returns
    -------
    str
        A query whose rows are ``log_day`` and/or ``qkey`` (as grouped ``by``), then the
        integer ``TOTALS``; orphan clicks come under a NULL ``qkey``.

    Examples
    --------
    >>> sql = online_sql("SELECT * FROM ev", dialect="duckdb", by=("day", "query"))
    >>> sql.splitlines()[-2].split(", ")[:3]
    ['SELECT log_day', 'qkey', 'CAST(sum(impressions) AS BIGINT) AS impressions']
    """
    if dialect not in COLLATE:
        raise ValueError(f"dialect must be one of {', '.join(COLLATE)}, not {dialect!r}.")
    _check(by, success_dwell)
    keys = ", ".join({"day": "log_day", "query": "qkey"}[part] for part in GROUPINGS if part in by)
    sums = ", ".join(f"CAST(sum({name}) AS BIGINT) AS {name}" for name in TOTALS)
    return _SQL.format(
        events=events, collate=COLLATE[dialect], day=DAY_MICROS,
        success_dwell=repr(float(success_dwell)), keys=keys, sums=sums,
    )  # fmt: skip


def _check(by: tuple[str, ...], success_dwell: float) -> None:
    if not by or not set(by) <= set(GROUPINGS):
        raise ValueError(f'by must name "day" and/or "query", not {by!r}.')
    if not math.isfinite(success_dwell) or success_dwell < 0:
        raise ValueError(f"success_dwell must be a finite number >= 0, not {success_dwell}.")


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


def online_table(
    rows, *, by: tuple[str, ...] = ("day",), success_dwell: float = 10.0, query_of=None
) -> OnlineTable:
    """The rates and means of the totals an engine returned for :func:`online_sql`.

    Parameters
    ----------
    rows : iterable of tuples
        The query's rows: ``day`` and/or ``qkey`` as grouped ``by``, then ``TOTALS``.
    by, success_dwell
        As given to :func:`online_sql`.
    query_of : callable, optional
        Maps a ``qkey`` to a query id, ``UNMATCHED`` when it names none (NULL always
        does). Keys mapping to one query are summed into one group. By default a key
        is the id itself.

    Returns
    -------
    OnlineTable
        Groups sorted by day, then query.

    Examples
    --------
    Two sessions on day 20000: one abandoned, one answered at once (zero-click):

    >>> table = online_table([(20000, 2, 0, 0, 2, 1, 1, 0, 1, 2)])
    >>> int(table.sessions[0]), float(table.success_rate[0]), float(table.ctr[0])
    (2, 0.5, 0.0)
    >>> float(table.seconds_to_success[0]), float(table.queries_per_session[0])
    (0.0, 1.0)
    """
    _check(by, success_dwell)
    grouped = [part for part in GROUPINGS if part in by]
    keyed: dict[tuple, np.ndarray] = {}
    for row in rows:
        key = list(row[: len(grouped)])
        if "query" in grouped:
            qkey = key[-1]
            key[-1] = UNMATCHED if qkey is None else int(query_of(qkey) if query_of else qkey)
        totals = np.asarray(row[len(grouped) :], np.int64)
        key = tuple(key)
        keyed[key] = keyed[key] + totals if key in keyed else totals
    order = sorted(keyed)
    sums = np.array([keyed[key] for key in order], np.int64).reshape(len(order), len(TOTALS))
    columns = dict(zip(TOTALS, sums.T, strict=True))
    keys = np.array(order, np.int64).reshape(len(order), len(grouped))
    won = columns["successful_sessions"]
    return OnlineTable(
        day=keys[:, grouped.index("day")] if "day" in grouped else None,
        query=keys[:, grouped.index("query")] if "query" in grouped else None,
        impressions=columns["impressions"],
        clicks=columns["clicks"],
        orphan_clicks=columns["orphan_clicks"],
        sessions=columns["sessions"],
        successful_sessions=won,
        zero_click_successes=columns["zero_click_successes"],
        seconds_to_success=_ratio(columns["success_micros"] / 1e6, won),
        queries_to_success=_ratio(columns["success_queries"], won),
        queries_per_session=_ratio(columns["session_queries"], columns["sessions"]),
        success_dwell=float(success_dwell),
    )
