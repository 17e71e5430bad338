"""A search log kept as Parquet files, read where it lies: its layouts, their checks, and
the events relation of metrics.core.online over them, for DuckDB and for Spark.

Two layouts:

- ``ours``: one set of files whose columns are the fields of our JSON Lines format
  (searchlogs.parsing): ``type`` ("impression", "click" or "dwell"), ``id``,
  ``session``, ``time``, ``query``, ``answered``, ``document``, ``rank``, ``click``,
  ``seconds``, ``end_of_session`` (and ``results``, not needed here).
- ``ubi``: User Behavior Insights (UBI 1.3.0) as a warehouse keeps it, two sets of
  files with the columns of its two indexes: ``ubi_queries`` (``query_id``,
  ``user_query``, ``client_id``, ``timestamp``) and ``ubi_events`` (``action_name``,
  ``query_id``, ``session_id``, ``timestamp``, ``event_attributes`` as a struct of
  ``object.object_id``, ``position.ordinal`` and optionally ``dwell_time``).
  Every query record is a results page, every ``click`` event a click, read as the
  UBI import reads them (searchlogs.ubi): a page's session is the smallest
  ``session_id`` of the events naming its query, else its ``client_id``, else its
  query id; a click belongs to its query's session; its dwell is
  ``event_attributes.dwell_time``.

Times are Parquet timestamps with a zone (UTC-adjusted); a timestamp without one is
refused, as a JSON time without a zone is. Before any engine runs, every file's
schema is read (its footer only) and checked, and a DuckDB scan finds rows that
break the rules (a missing session or time, a click naming no query): any problem
stops the read, naming the file, the row and the column.
"""

import glob as globbing
import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

LAYOUTS = ("ours", "ubi")
CHECKED_SHOWN = 20


class ParquetLogError(Exception):
    """What is wrong with a Parquet log: ``problems`` as (file, row, column, message)."""

    def __init__(self, problems: list[tuple[str, int | None, str | None, str]]):
        self.problems = problems
        super().__init__("; ".join(_shown(problem) for problem in problems[:5]))


def _shown(problem) -> str:
    file, row, column, message = problem
    where = ", ".join(part for part in (file, row is not None and f"row {row}",
                                        column and f"column {column}") if part)  # fmt: skip
    return f"{where}: {message}"


def _text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _moment(kind: pa.DataType) -> bool:
    return pa.types.is_timestamp(kind) and kind.tz is not None


def _whole(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind)


def _number(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


def _text_or_whole(kind: pa.DataType) -> bool:
    return _text(kind) or _whole(kind)


_WANTED = {
    "text": (_text, "a string"),
    "moment": (_moment, "a timestamp with a time zone (UTC)"),
    "flag": (pa.types.is_boolean, "a boolean"),
    "whole": (_whole, "an integer"),
    "number": (_number, "a number"),
    "id": (_text_or_whole, "a string or an integer"),
}
# Column -> (what it must be, required). Nested columns are dotted paths.
OURS = {
    "type": ("text", True), "id": ("text", True), "session": ("text", True),
    "time": ("moment", True), "query": ("text", True), "answered": ("flag", True),
    "document": ("text", True), "click": ("text", True), "seconds": ("number", True),
    "end_of_session": ("flag", True), "rank": ("whole", False),
}  # fmt: skip
UBI_QUERIES = {
    "query_id": ("text", True), "user_query": ("text", True), "client_id": ("text", False),
    "timestamp": ("moment", True),
}  # fmt: skip
UBI_EVENTS = {
    "action_name": ("text", True), "query_id": ("text", True), "session_id": ("text", False),
    "timestamp": ("moment", True), "event_attributes.object.object_id": ("id", True),
    "event_attributes.position.ordinal": ("whole", False),
    "event_attributes.dwell_time": ("number", False),
}  # fmt: skip


@dataclass(frozen=True)
class ParquetLog:
    """Where a log's files are: ``events`` (and, for UBI, ``queries``) as a folder or a
    glob; ``files`` and ``query_files`` are what they matched, checked."""

    layout: str
    files: tuple[str, ...]
    query_files: tuple[str, ...] = ()
    # Which optional columns the files have (the relation reads only those).
    present: frozenset[str] = frozenset()


def parquet_log(layout: str, events: str, queries: str = "") -> ParquetLog:
    """The log at ``events`` (and ``queries``), every file's schema checked.

    Raises ``ParquetLogError`` naming each file and column that is missing or of the
    wrong type, or the glob that matched nothing.
    """
    if layout not in LAYOUTS:
        raise ParquetLogError([(None, None, "layout", f"{layout!r} is not one of {LAYOUTS}.")])
    if layout == "ubi" and not queries:
        message = "A UBI log needs its ubi_queries files as well as its ubi_events files."
        raise ParquetLogError([(events, None, None, message)])
    problems: list = []
    files = _matched(events, problems)
    query_files = _matched(queries, problems) if layout == "ubi" else []
    present: set[str] = set()
    wanted = OURS if layout == "ours" else UBI_EVENTS
    for path in files:
        present |= _checked(path, wanted, problems)
    for path in query_files:
        present |= _checked(path, UBI_QUERIES, problems)
    if problems:
        raise ParquetLogError(problems)
    return ParquetLog(layout, tuple(files), tuple(query_files), frozenset(present))


def _matched(where: str, problems: list) -> list[str]:
    pattern = os.path.join(where, "**", "*.parquet") if os.path.isdir(where) else where
    files = sorted(globbing.glob(pattern, recursive=True))
    if not files:
        problems.append((where, None, None, "No Parquet file matches this path or glob."))
    return files


def _checked(path: str, wanted: dict, problems: list) -> set[str]:
    """The optional columns ``path`` has; its problems added to ``problems``."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as error:
        problems.append((path, None, None, f"Not a readable Parquet file: {error}"))
        return set()
    present = set()
    for column, (kind, required) in wanted.items():
        found = _column_type(schema, column.split("."))
        check, described = _WANTED[kind]
        if found is None:
            if required:
                problems.append((path, None, column, "is missing."))
        elif not check(found):
            problems.append((path, None, column, f"is {found}, not {described}."))
        else:
            present.add(column)
    return present


def _column_type(schema: pa.Schema, path: list[str]) -> pa.DataType | None:
    index = schema.get_field_index(path[0])
    if index < 0:
        return None
    kind = schema.field(index).type
    for name in path[1:]:
        if not pa.types.is_struct(kind) or kind.get_field_index(name) < 0:
            return None
        kind = kind.field(kind.get_field_index(name)).type
    return kind


# The files as a table, and a timestamp as microseconds, in each engine's words.
_FILES = {
    "duckdb": lambda files: "read_parquet([{}], union_by_name = true)".format(
        ", ".join(_quoted(path) for path in files)
    ),
    "spark": lambda files: "parquet.`{}`".format(",".join(files)),
}
_MICROS = {"duckdb": "epoch_us({})", "spark": "unix_micros({})"}
_TEXT = {"duckdb": "VARCHAR", "spark": "STRING"}


def _quoted(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def events_relation(log: ParquetLog, *, engine: str, tables: dict[str, str] | None = None):
    """The events relation of metrics.core.online over ``log`` for ``engine``.

    ``tables`` may name a view per file set (``events``, ``queries``) that the engine
    already has (Spark reads several files best through one view); otherwise the
    files are read by path.
    """
    tables = tables or {}
    events = tables.get("events") or _FILES[engine](log.files)
    micros = _MICROS[engine]
    if log.layout == "ours":
        return _OURS_SQL.format(files=events, micros=micros.format("e.time"))
    queries = tables.get("queries") or _FILES[engine](log.query_files)
    dwell = (
        "CAST(e.event_attributes.dwell_time AS DOUBLE)"
        if "event_attributes.dwell_time" in log.present
        else "CAST(NULL AS DOUBLE)"
    )
    ordinal = (
        "CAST(e.event_attributes.position.ordinal AS BIGINT)"
        if "event_attributes.position.ordinal" in log.present
        else "CAST(NULL AS BIGINT)"
    )
    session = "e.session_id" if "session_id" in log.present else "CAST(NULL AS {})"
    client = "q.client_id" if "client_id" in log.present else "CAST(NULL AS {})"
    return _UBI_SQL.format(
        events=events, queries=queries, dwell=dwell, ordinal=ordinal, text=_TEXT[engine],
        session=session.format(_TEXT[engine]), client=client.format(_TEXT[engine]),
        query_micros=micros.format("q.timestamp"), event_micros=micros.format("e.timestamp"),
    )  # fmt: skip


_OURS_SQL = """
SELECT e.session AS sid, {micros} AS ts, CASE WHEN e.type = 'impression' THEN 0 ELSE 1 END AS kind,
       CASE WHEN e.type = 'impression' THEN e.query END AS qkey,
       coalesce(e.answered, false) AS answered, e.document AS doc, d.dwell,
       coalesce(d.ended, false) AS ended, e.id AS tiebreak
FROM {files} e
LEFT JOIN (
    SELECT click, max(CAST(seconds AS DOUBLE)) AS dwell,
           max(coalesce(end_of_session, false)) AS ended
    FROM {files} WHERE type = 'dwell' GROUP BY click
) d ON e.type = 'click' AND d.click = e.id
WHERE e.type IN ('impression', 'click')
"""

# A click's tie-break is its event id as searchlogs.ubi.click_id makes it.
_UBI_SQL = """
SELECT coalesce(s.sid, {client}, q.query_id) AS sid, {query_micros} AS ts, 0 AS kind,
       q.user_query AS qkey, false AS answered, CAST(NULL AS {text}) AS doc,
       CAST(NULL AS DOUBLE) AS dwell, false AS ended, q.query_id AS tiebreak
FROM {queries} q
LEFT JOIN (
    SELECT query_id, min({session}) AS sid FROM {events} e GROUP BY query_id
) s ON s.query_id = q.query_id
UNION ALL
SELECT DISTINCT coalesce(s.sid, {client}, q.query_id), c.ts, 1, CAST(NULL AS {text}), false,
       c.doc, c.dwell, false,
       md5(concat_ws(' ', c.query_id, CAST(c.ts AS {text}), c.doc,
                     coalesce(CAST(c.ordinal AS {text}), '')))
FROM (
    SELECT e.query_id, {event_micros} AS ts,
           CAST(e.event_attributes.object.object_id AS {text}) AS doc,
           {ordinal} AS ordinal, {dwell} AS dwell
    FROM {events} e WHERE e.action_name = 'click'
) c
JOIN {queries} q ON q.query_id = c.query_id
LEFT JOIN (
    SELECT query_id, min({session}) AS sid FROM {events} e GROUP BY query_id
) s ON s.query_id = c.query_id
"""


# The rows no engine may read: (column, what is wrong, the condition), per file set.
_ROW_RULES = {
    "ours": [
        ("type", "is not impression, click or dwell.",
         "type IS NULL OR type NOT IN ('impression', 'click', 'dwell')"),
        ("id", "is empty.", "id IS NULL OR id = ''"),
        ("session", "is empty.", "session IS NULL OR session = ''"),
        ("time", "is empty.", "time IS NULL"),
        ("query", "is empty on an impression.", "type = 'impression' AND query IS NULL"),
        ("document", "is empty on a click.", "type = 'click' AND document IS NULL"),
        ("click", "is empty on a dwell.", "type = 'dwell' AND click IS NULL"),
        ("seconds", "is missing (or give end_of_session: true) or below 0.",
         "type = 'dwell' AND NOT coalesce(end_of_session, false)"
         " AND (seconds IS NULL OR seconds < 0)"),
    ],
    "ubi_queries": [
        ("query_id", "is empty.", "query_id IS NULL OR query_id = ''"),
        ("user_query", "is empty.", "user_query IS NULL"),
        ("timestamp", "is empty.", "timestamp IS NULL"),
    ],
    "ubi_events": [
        ("timestamp", "is empty.", "timestamp IS NULL"),
        ("query_id", "is empty on a click.", "action_name = 'click' AND query_id IS NULL"),
        ("event_attributes.object.object_id", "is empty on a click.",
         "action_name = 'click' AND event_attributes.object.object_id IS NULL"),
    ],
}  # fmt: skip


def check_rows(log: ParquetLog) -> None:
    """Raise ``ParquetLogError`` naming the first rows (file, row from 1, column) that break
    the layout's rules, with DuckDB; and, for UBI, clicks naming no query record and
    query ids used twice."""
    import duckdb

    connection = duckdb.connect()
    sets = [("ours", log.files)] if log.layout == "ours" else [
        ("ubi_queries", log.query_files), ("ubi_events", log.files)]  # fmt: skip
    problems = []
    for name, files in sets:
        source = (f"read_parquet([{', '.join(map(_quoted, files))}], union_by_name = true,"
                  " filename = true, file_row_number = true)")  # fmt: skip
        for column, message, condition in _ROW_RULES[name]:
            problems += _found(connection, source, condition, column, message)
        if name == "ubi_queries":
            problems += _found(
                connection,
                source,
                "count(*) OVER (PARTITION BY query_id) > 1",
                "query_id",
                "is used by another query record too.",
                window=True,
            )
    if log.layout == "ubi":
        queries = _FILES["duckdb"](log.query_files)
        source = (f"read_parquet([{', '.join(map(_quoted, log.files))}], union_by_name = true,"
                  " filename = true, file_row_number = true)")  # fmt: skip
        condition = (f"action_name = 'click' AND query_id IS NOT NULL AND query_id NOT IN"
                     f" (SELECT query_id FROM {queries} WHERE query_id IS NOT NULL)")  # fmt: skip
        problems += _found(connection, source, condition, "query_id", "names no query record.")
    if problems:
        raise ParquetLogError(problems[:CHECKED_SHOWN])


def _found(connection, source, condition, column, message, *, window=False) -> list:
    if window:
        sql = (f"SELECT filename, file_row_number FROM (SELECT filename, file_row_number,"
               f" {condition} AS bad FROM {source}) WHERE bad"
               f" ORDER BY filename, file_row_number LIMIT {CHECKED_SHOWN}")  # fmt: skip
    else:
        sql = (f"SELECT filename, file_row_number FROM {source} WHERE {condition}"
               f" ORDER BY filename, file_row_number LIMIT {CHECKED_SHOWN}")  # fmt: skip
    rows = connection.execute(sql).fetchall()
    return [(file, row + 1, column, message) for file, row in rows]
