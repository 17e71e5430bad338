"""The online metrics computed where the log is, by one SQL definition (metrics.core.online).

- ``postgresql``: the events ingested into the project's table;
- ``duckdb``: Parquet files read in place, in this process (embedded);
- ``spark``: Parquet files read by Spark, in local mode or on the cluster ``master``
  names (``spark://host:7077``, ``yarn``, ...), for logs no single machine holds.

Each engine returns only the integer totals per group (a few per day and query);
``metrics.core.online.online_table`` turns them into the same rates and means.
"""

from django.db import connection, transaction

from judgements.models import Project
from metrics.core.online import OnlineTable, online_sql, online_table
from searchlogs.matching import normalised, query_keys
from searchlogs.models import SearchEvent
from searchlogs.parquet import ParquetLog, check_rows, events_relation

ENGINES = ("postgresql", "duckdb", "spark")
Kind = SearchEvent.Kind

# The ingested log as the events relation. A click's dwell is the longest of its dwell
# events (joined by the click's event id, which is unique in the project).
_POSTGRES_EVENTS = f"""
SELECT e.session_id COLLATE "C" AS sid, (extract(epoch FROM e.at) * 1000000)::bigint AS ts, e.kind,
       CASE WHEN e.kind = {Kind.IMPRESSION} THEN coalesce(e.query_id, -1) END AS qkey,
       e.answered, e.document COLLATE "C" AS doc, d.dwell, coalesce(d.ended, false) AS ended,
       e.event_id AS tiebreak
FROM searchlogs_searchevent e
LEFT JOIN (
    SELECT click_event_id, max(dwell_seconds) AS dwell, bool_or(end_of_session) AS ended
    FROM searchlogs_searchevent WHERE project_id = %(project)s AND kind = {Kind.DWELL}
    GROUP BY click_event_id
) d ON e.kind = {Kind.CLICK} AND d.click_event_id = e.event_id
WHERE e.project_id = %(project)s AND e.kind IN ({Kind.IMPRESSION}, {Kind.CLICK})
"""
# Its sorts in memory rather than in temporary files; and never a nested loop for the
# dwells' join: right after a large batch, before autovacuum's ANALYZE, the table's
# statistics still say it is small, and a nested loop over a million clicks takes
# minutes where a hash join takes a second.
_POSTGRES_SETTINGS = ("SET LOCAL work_mem = '256MB'", "SET LOCAL enable_nestloop = off")


def postgres_online(project: Project, *, by=("day",), success_dwell: float = 10.0):
    """The online metrics of the project's ingested log."""
    sql = online_sql(_POSTGRES_EVENTS, dialect="postgresql", by=by, success_dwell=success_dwell)
    with transaction.atomic(), connection.cursor() as cursor:
        for setting in _POSTGRES_SETTINGS:
            cursor.execute(setting)
        cursor.execute(sql, {"project": project.pk})
        rows = cursor.fetchall()
    return online_table(rows, by=by, success_dwell=success_dwell)


def duckdb_online(
    log: ParquetLog, *, by=("day",), success_dwell: float = 10.0, query_of=None
) -> OnlineTable:
    """The online metrics of Parquet files, read in place by DuckDB (rows checked first)."""
    import duckdb

    check_rows(log)
    sql = online_sql(
        events_relation(log, engine="duckdb"), dialect="duckdb", by=by,
        success_dwell=success_dwell,
    )  # fmt: skip
    rows = duckdb.connect().execute(sql).fetchall()
    return online_table(rows, by=by, success_dwell=success_dwell, query_of=query_of)


def spark_online(
    log: ParquetLog,
    *,
    by=("day",),
    success_dwell: float = 10.0,
    query_of=None,
    master: str = "local[*]",
    check: bool = True,
) -> OnlineTable:
    """The online metrics of Parquet files as one Spark SQL job on ``master``.

    ``check``: the rows are checked first (with DuckDB, so the files must be local).
    """
    from searchlogs.spark import spark_rows

    if check:
        check_rows(log)
    rows = spark_rows(log, by=by, success_dwell=success_dwell, master=master)
    return online_table(rows, by=by, success_dwell=success_dwell, query_of=query_of)


def query_matcher(project: Project):
    """A logged text -> the project's query id (searchlogs.matching), -1 for none."""
    keys = query_keys(project.queries.values_list("id", "text"))
    cache: dict[str, int] = {}

    def query_of(text: str) -> int:
        if text not in cache:
            cache[text] = keys.get(normalised(text), -1)
        return cache[text]

    return query_of
