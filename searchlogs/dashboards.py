"""The online metrics as the overview and query detail pages, the API and CSV show them."""

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import numpy as np
from django.core.cache import cache

from judgements.models import Project, Query
from metrics.core.online import UNMATCHED, OnlineTable
from searchlogs import engines, selectors
from searchlogs.parquet import ParquetLogError, parquet_log

EPOCH = date(1970, 1, 1)
CACHE_SECONDS = 24 * 3600
COLUMNS = (
    "impressions", "clicks", "ctr", "sessions", "successful_sessions", "success_rate",
    "zero_click_successes", "seconds_to_success", "queries_to_success",
    "queries_per_session", "orphan_clicks",
)  # fmt: skip


@dataclass(frozen=True)
class OnlineRow:
    """One group's figures; ``None`` where a rate or mean has no denominator."""

    day: date | None
    query_id: int | None
    values: dict

    def __getattr__(self, name):
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def as_dict(self) -> dict:
        return {"day": self.day, "query": self.query_id, **self.values}


@dataclass(frozen=True)
class OnlinePanel:
    rows: list[OnlineRow]
    success_dwell: float
    unmatched: int
    unmatched_texts: list[tuple[str, int]]
    problem: str = ""  # Why the project's Parquet log cannot be read, if it cannot.

    @property
    def chart(self) -> dict:
        """Daily click-through and success rates, x in epoch milliseconds (as the NDCG chart)."""
        return {
            "days": [_milliseconds(row.day) for row in self.rows],
            "ctr": [row.ctr for row in self.rows],
            "success_rate": [row.success_rate for row in self.rows],
        }


def table_rows(table: OnlineTable) -> list[OnlineRow]:
    columns = {name: getattr(table, name) for name in COLUMNS}
    rows = []
    for index in range(len(table)):
        values = {name: _plain(column[index]) for name, column in columns.items()}
        day = EPOCH + timedelta(days=int(table.day[index])) if table.day is not None else None
        query = int(table.query[index]) if table.query is not None else None
        rows.append(OnlineRow(day, None if query == UNMATCHED else query, values))
    return rows


def _plain(value):
    if isinstance(value, np.integer):
        return int(value)
    return None if np.isnan(value) else round(float(value), 6)


def _milliseconds(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def online_metrics_of(project: Project, *, by=("day",), success_dwell: float | None = None):
    """The project's online metrics grouped ``by`` day and/or query, as rows.

    From its Parquet files by DuckDB when it has a Parquet log (searchlogs.parquet),
    else from its ingested events by PostgreSQL: one SQL definition either way. The
    table is cached under the log's version (every stored batch raises it; events are
    never changed or deleted otherwise) or, for files, their names, sizes and times.
    """
    dwell = selectors.success_dwell_of(project) if success_dwell is None else success_dwell
    source = getattr(project, "parquet_log", None)
    version = _files_version(source) if source else selectors.log_version(project)
    key = f"searchlogs:online:{project.pk}:{version}:{'+'.join(by)}:{dwell!r}"
    table = cache.get(key)
    if table is None:
        if source:
            log = parquet_log(source.layout, source.events, source.queries)
            table = engines.duckdb_online(
                log, by=by, success_dwell=dwell, query_of=engines.query_matcher(project)
            )
        else:
            table = engines.postgres_online(project, by=by, success_dwell=dwell)
        cache.set(key, table, CACHE_SECONDS)
    return table_rows(table), dwell


def _files_version(source) -> str:
    """A digest of the files' names, sizes and modification times (any change shows)."""
    import hashlib
    import os

    log = parquet_log(source.layout, source.events, source.queries)
    stats = [(path, os.stat(path).st_size, os.stat(path).st_mtime_ns)
             for path in (*log.files, *log.query_files)]  # fmt: skip
    return hashlib.sha256(repr(stats).encode()).hexdigest()[:16]


def online_overview(project: Project, *, success_dwell: float | None = None) -> OnlinePanel:
    """Daily figures over the whole log, and what did not match a query."""
    try:
        rows, dwell = online_metrics_of(project, success_dwell=success_dwell)
    except ParquetLogError as error:
        return OnlinePanel([], selectors.success_dwell_of(project), 0, [], str(error))
    key = f"searchlogs:unmatched:{project.pk}:{selectors.log_version(project)}"
    unmatched, texts = cache.get_or_set(
        key, lambda: selectors.unmatched_queries(project), CACHE_SECONDS
    )
    return OnlinePanel(rows, dwell, unmatched, texts)


def online_for_query(project: Project, query: Query) -> OnlinePanel:
    """Daily figures of one query (see metrics.core.online for what counts under it)."""
    try:
        rows, dwell = online_metrics_of(project, by=("day", "query"))
    except ParquetLogError as error:
        return OnlinePanel([], selectors.success_dwell_of(project), 0, [], str(error))
    return OnlinePanel([row for row in rows if row.query_id == query.pk], dwell, 0, [])
