"""Reads that feed the numbers: PostgreSQL rows in, plain numpy arrays out.

Nothing here returns a QuerySet, so the numeric core stays free of Django. Large reads
use COPY in PostgreSQL's binary format, parsed by numpy in one call, because turning a
million rows into Python tuples costs many times what PostgreSQL spends finding them.
"""

import io
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import connection

from judgements.querysets import HUMAN_EVENT_SQL
from metrics.core.consensus import POLICIES, consensus
from metrics.core.segments import offsets_from_lengths, sorted_lookup

# Whether the trigger-kept tables hold the state as of %(as_of)s: no human event of the
# project is dated later (machine judges' events change none of them).
CURRENT_SQL = f"""NOT EXISTS (
      SELECT FROM judgements_judgement later
      JOIN judgements_query query ON query.id = later.query_id
      WHERE query.project_id = %(project)s AND later.created_at > %(as_of)s
        AND {HUMAN_EVENT_SQL.format(alias="later")})"""

# The present state: judgements_pairgrade (migration 0005) holds each pair's count of
# current grades and consensus under every policy after every event in the log. That is
# the state as of ``as_of`` exactly when no event of the project is dated after
# ``as_of``; the guard checks this in the same statement (one snapshot) and returns no
# row otherwise, so imports of events dated in the future fall back to the log. Rows
# come unordered: numpy sorts them in a fraction of what ORDER BY costs PostgreSQL.
STORED_GRADES_SQL = f"""
SELECT pair.query_id, pair.document_id, pair.graded, pair.{{policy}}
FROM judgements_pairgrade pair
WHERE pair.project_id = %(project)s
  AND pair.graded > 0
  AND (%(queries)s::bigint[] IS NULL OR pair.query_id = ANY(%(queries)s))
  AND {CURRENT_SQL}
"""
STORED_GRADES_COLUMNS = [
    ("query_id", ">i8"),
    ("document_id", ">i8"),
    ("graded", ">i2"),
    ("consensus", ">f8"),
]

CURRENT_GRADES_SQL = f"""
WITH latest AS (
    SELECT DISTINCT ON (j.query_id, j.document_id, j.rater_id)
           j.query_id, j.document_id, j.kind, j.grade
    FROM judgements_judgement j
    JOIN judgements_query q ON q.id = j.query_id
    WHERE q.project_id = %(project)s
      AND j.created_at <= %(as_of)s
      AND {HUMAN_EVENT_SQL.format(alias="j")}
      AND (%(queries)s::bigint[] IS NULL OR j.query_id = ANY(%(queries)s))
    ORDER BY j.query_id, j.document_id, j.rater_id, j.created_at DESC, j.id DESC
)
SELECT query_id, document_id, grade FROM latest
WHERE kind = 'grade'
ORDER BY query_id, document_id
"""

# A result list, packed (migration 0008): per query, one row holds the hits' documents
# (judgements_rankedhits) and, per consensus policy, one row the hits' grades and the
# query's judged grades (judgements_rankedgrades). Each column of the whole list comes
# back as one byte string, concatenated in query order, with each query's lengths
# beside it; numpy unpacks them without a Python loop. The first ``depth`` hits are a
# prefix of each row.
RANKED_DOCUMENTS_SQL = """
SELECT string_agg(int8send(query_id), ''::bytea ORDER BY query_id),
       string_agg(int4send(length(documents) / 8), ''::bytea ORDER BY query_id),
       string_agg(documents, ''::bytea ORDER BY query_id)
FROM (
    SELECT query_id, substring(documents FROM 1 FOR 8 * coalesce(%(depth)s, hits)) AS documents
    FROM judgements_rankedhits
    WHERE result_list_id = %(result_list)s AND hits > 0
      AND (%(queries)s::bigint[] IS NULL OR query_id = ANY(%(queries)s))
) AS ranked
"""

# The grades, when the packed rows hold the state as of ``as_of`` (CURRENT_SQL, in the
# same statement: when it fails, no grade is read and the one row's first column says
# so). They come in chunks, one row per range of %(chunk)s consecutive query ids (wider
# when the ids span more than 1024 such ranges), each chunk read by its own index range
# and in query order, the rows themselves in any order (numbered by their first id): one
# row of megabytes costs PostgreSQL and libpq about twice what the same bytes in rows
# of ~100 kB cost, and sorting the rows in SQL would spill them to disk.
STORED_RANKED_SQL = f"""
WITH span AS (
    SELECT min(query_id) AS low, max(query_id) AS high,
           greatest(%(chunk)s, (max(query_id) - min(query_id)) / 1024 + 1) AS width
    FROM judgements_rankedgrades
    WHERE result_list_id = %(result_list)s AND policy = %(policy)s
      AND (%(queries)s::bigint[] IS NULL OR query_id = ANY(%(queries)s))
), chunks AS (
    SELECT low + width * i AS first, low + width * (i + 1) AS next
    FROM span, generate_series(0, (high - low) / width) AS i
)
SELECT guard.current, chunks.first, grades.*
FROM (SELECT ({CURRENT_SQL}) AS current) AS guard
LEFT JOIN chunks ON guard.current
LEFT JOIN LATERAL (
    SELECT string_agg(int8send(query_id) || int4send(length(ranked) / 8)
                      || int4send(length(ideal) / 8) || int4send(graded), ''::bytea
                      ORDER BY query_id),
           string_agg(ranked, ''::bytea ORDER BY query_id),
           string_agg(ideal, ''::bytea ORDER BY query_id),
           string_agg(ideal_documents, ''::bytea ORDER BY query_id)
    FROM (
        SELECT query_id, graded, ideal, ideal_documents,
               CASE WHEN %(depth)s::int IS NULL THEN ranked
                    ELSE substring(ranked FROM 1 FOR 8 * %(depth)s) END AS ranked
        FROM judgements_rankedgrades
        WHERE result_list_id = %(result_list)s AND policy = %(policy)s
          AND query_id >= chunks.first AND query_id < chunks.next
          AND (%(queries)s::bigint[] IS NULL OR query_id = ANY(%(queries)s))
    ) AS chunk
) AS grades ON true
"""
# Queries per row of the packed reads.
CHUNK_QUERIES = 128
# Each query's fixed-width part of STORED_RANKED_SQL.
STORED_RANKED_HEADER = np.dtype(
    [("query_id", ">i8"), ("ranked", ">i4"), ("levels", ">i4"), ("graded", ">i4")]
)


@dataclass(frozen=True)
class PairGrades:
    """Consensus grade of every judged (query, document) pair, sorted by pair."""

    query_ids: np.ndarray
    document_ids: np.ndarray
    grades: np.ndarray
    raters: np.ndarray

    @property
    def keys(self) -> np.ndarray:
        return pair_keys(self.query_ids, self.document_ids)


@dataclass(frozen=True)
class ResultListGrades:
    """A result list laid out for ``metrics.core.ndcg_batch``."""

    query_ids: np.ndarray
    ranked_grades: np.ndarray
    offsets: np.ndarray
    judged_grades: np.ndarray
    judged_offsets: np.ndarray
    judgements: np.ndarray


def pairs_of_query(pairs: PairGrades, query_id: int) -> PairGrades:
    """The pairs of one query (a contiguous run of the sorted pairs)."""
    lo, hi = np.searchsorted(pairs.query_ids, [query_id, query_id + 1])
    return PairGrades(
        *(
            column[lo:hi]
            for column in (pairs.query_ids, pairs.document_ids, pairs.grades, pairs.raters)
        )
    )


def pair_keys(query_ids: np.ndarray, document_ids: np.ndarray) -> np.ndarray:
    """One sortable int64 per pair (ids stay far below 2**31)."""
    return (query_ids.astype(np.int64) << 32) | document_ids.astype(np.int64)


def pair_grades(
    project_id: int, *, as_of: datetime, policy: str, query_ids: list[int] | None = None
) -> PairGrades:
    """Consensus of each pair from the raters' current grades as of ``as_of``.

    When no event of the project is dated after ``as_of`` (the usual case for "now" and
    for the current hour's bucket), the grades are read from the trigger-kept
    ``judgements_pairgrade``; otherwise (a past moment, or events dated in the future)
    the log is replayed up to ``as_of``. Both give the same arrays, bit for bit.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    stored = stored_pair_grades(project_id, as_of=as_of, policy=policy, query_ids=query_ids)
    if stored is not None:
        return stored
    return logged_pair_grades(project_id, as_of=as_of, policy=policy, query_ids=query_ids)


def stored_pair_grades(
    project_id: int, *, as_of: datetime, policy: str, query_ids: list[int] | None = None
) -> PairGrades | None:
    """``pair_grades`` from ``judgements_pairgrade``; None when it cannot answer for
    ``as_of`` (or holds no grade, which the log then answers as cheaply)."""
    params = {"project": project_id, "as_of": as_of, "queries": query_ids}
    sql = STORED_GRADES_SQL.format(policy=policy)
    rows = copy_rows(sql, params, STORED_GRADES_COLUMNS)
    if len(rows) == 0:
        return None
    queries = rows["query_id"].astype(np.int64)
    documents = rows["document_id"].astype(np.int64)
    order = np.argsort(pair_keys(queries, documents), kind="stable")
    return PairGrades(
        query_ids=queries[order],
        document_ids=documents[order],
        grades=rows["consensus"].astype(np.float64)[order],
        raters=rows["graded"].astype(np.int64)[order],
    )


def logged_pair_grades(
    project_id: int, *, as_of: datetime, policy: str, query_ids: list[int] | None = None
) -> PairGrades:
    """``pair_grades`` by replaying the judgement log up to ``as_of``."""
    params = {"project": project_id, "as_of": as_of, "queries": query_ids}
    return pairs_of_grades(_fetch(CURRENT_GRADES_SQL, params, columns=3), policy)


def pairs_of_grades(rows: np.ndarray, policy: str) -> PairGrades:
    """The consensus of each pair from rows of (query id, document id, grade), sorted by
    pair: each rater's current grade, one row each."""
    queries, documents, grades = rows[:, 0], rows[:, 1], rows[:, 2].astype(np.float64)
    # A pair starts where the key changes; with no rows there is no first pair either.
    starts = np.flatnonzero(
        np.r_[len(rows) > 0, (queries[1:] != queries[:-1]) | (documents[1:] != documents[:-1])]
    )
    offsets = np.r_[starts, len(grades)]
    return PairGrades(
        query_ids=queries[starts],
        document_ids=documents[starts],
        grades=consensus(grades, offsets, policy),
        raters=np.diff(offsets),
    )


# The queries with a current grade, from the trigger-kept judgements_querygrades when it
# holds the state as of %(as_of)s (the first column says whether it does).
JUDGED_QUERIES_SQL = f"""
SELECT ({CURRENT_SQL}),
       string_agg(int8send(grades.query_id), ''::bytea ORDER BY grades.query_id)
FROM judgements_querygrades grades
JOIN judgements_query query ON query.id = grades.query_id
WHERE query.project_id = %(project)s AND grades.judged > 0
"""


def judged_query_ids(project_id: int, *, as_of: datetime) -> np.ndarray:
    """Sorted ids of the project's queries with at least one current grade as of
    ``as_of``: the queries a mean over judged queries counts, and the queries of an
    exported qrels file. Read from ``judgements_querygrades`` when it holds as of
    ``as_of``, else replayed from the log."""
    current, column = copy_row(JUDGED_QUERIES_SQL, {"project": project_id, "as_of": as_of})
    if current is not None and bytes(current) == b"\x01":
        return unpacked(column, ">i8").astype(np.int64)
    pairs = logged_pair_grades(project_id, as_of=as_of, policy="mean")
    return np.unique(pairs.query_ids).astype(np.int64)


@dataclass(frozen=True)
class RankedDocuments:
    """A result list's documents, query after query (in id order), each in rank order."""

    query_ids: np.ndarray
    offsets: np.ndarray
    document_ids: np.ndarray


def ranked_documents(
    result_list_id: int, *, depth: int | None, query_ids: list[int] | None = None
) -> RankedDocuments:
    """The documents of each query's first ``depth`` hits (in rank order, whatever the
    rank numbers), for the queries with at least one hit (or those of ``query_ids``)."""
    params = {"result_list": result_list_id, "queries": query_ids, "depth": depth}
    query_column, length_column, document_column = copy_row(RANKED_DOCUMENTS_SQL, params)
    query_ids, offsets = _unpack_queries(query_column, length_column)
    return RankedDocuments(query_ids, offsets, unpacked(document_column, ">i8"))


def result_list_grades(
    result_list_id: int,
    pairs: PairGrades,
    *,
    depth: int | None,
    query_ids: list[int] | None = None,
) -> ResultListGrades:
    """Grades of a result list's hits (NaN if unjudged) and each query's judged grades.

    Queries are those with at least one hit in the result list, in id order, as
    trec_eval evaluates the queries of the run. ``depth`` limits the hits read to each
    query's first ``depth`` and ``query_ids`` the queries.
    """
    return graded(ranked_documents(result_list_id, depth=depth, query_ids=query_ids), pairs)


def graded(hits: RankedDocuments, pairs: PairGrades) -> ResultListGrades:
    """``hits`` laid out for ``ndcg_batch`` with the consensus grades of ``pairs``."""
    hit_queries = np.repeat(hits.query_ids, np.diff(hits.offsets))
    ranked = _lookup(pairs, pair_keys(hit_queries, hits.document_ids))
    # Each query's judged pairs are one contiguous run of the sorted pairs.
    lo = np.searchsorted(pairs.query_ids, hits.query_ids, side="left")
    hi = np.searchsorted(pairs.query_ids, hits.query_ids, side="right")
    judged_offsets = offsets_from_lengths(hi - lo)
    take = np.repeat(lo - judged_offsets[:-1], hi - lo) + np.arange(judged_offsets[-1])
    raters_so_far = np.r_[0, np.cumsum(pairs.raters)]
    return ResultListGrades(
        query_ids=hits.query_ids,
        ranked_grades=ranked,
        offsets=hits.offsets,
        judged_grades=pairs.grades[take],
        judged_offsets=judged_offsets,
        judgements=raters_so_far[hi] - raters_so_far[lo],
    )


def stored_result_list_grades(
    result_list_id: int,
    project_id: int,
    *,
    as_of: datetime,
    policy: str,
    depth: int | None,
    query_ids: list[int] | None = None,
) -> ResultListGrades | None:
    """``result_list_grades`` from the packed rows of migration 0008, or None when they do
    not hold the state as of ``as_of`` (an event of the project is dated later).

    The same arrays as the log gives, except that each query's judged grades come
    highest first instead of by document.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    params = {
        "project": project_id,
        "result_list": result_list_id,
        "as_of": as_of,
        "queries": query_ids,
        "depth": depth,
        "policy": policy,
    }
    rows = copy_fields(STORED_RANKED_SQL, {**params, "chunk": CHUNK_QUERIES})
    current = rows[0][0]
    if current is None or bytes(current) != b"\x01":
        return None
    header, ranked, levels, documents = joined_chunks(rows, key=1)
    queries = np.frombuffer(header or b"", dtype=STORED_RANKED_HEADER)
    # The ideal comes as levels: each distinct grade, highest first, and its count.
    counts = unpacked(documents, ">i4")
    judged_so_far = np.r_[0, np.cumsum(counts)]
    level_offsets = offsets_from_lengths(queries["levels"].astype(np.int64))
    return ResultListGrades(
        query_ids=queries["query_id"].astype(np.int64),
        ranked_grades=unpacked(ranked, ">f8"),
        offsets=offsets_from_lengths(queries["ranked"].astype(np.int64)),
        judged_grades=np.repeat(unpacked(levels, ">f8"), counts),
        judged_offsets=judged_so_far[level_offsets],
        judgements=queries["graded"].astype(np.int64),
    )


def unpacked(column: bytes | None, kind: str) -> np.ndarray:
    """A packed column as a native numpy array (empty for SQL NULL: no rows)."""
    return np.frombuffer(column or b"", dtype=kind).astype(kind[1:])


def _unpack_queries(query_column, length_column) -> tuple[np.ndarray, np.ndarray]:
    query_ids = unpacked(query_column, ">i8").astype(np.int64)
    lengths = unpacked(length_column, ">i4").astype(np.int64)
    return query_ids, offsets_from_lengths(lengths)


def _lookup(pairs: PairGrades, keys: np.ndarray) -> np.ndarray:
    """Consensus grade for each key, NaN where the pair is unjudged."""
    return sorted_lookup(pairs.keys, pairs.grades, keys)


def _fetch(sql: str, params: dict, *, columns: int) -> np.ndarray:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        return np.empty((0, columns), dtype=np.int64)
    return np.array(rows, dtype=np.int64)


# COPY's binary format: a signature, flags, a header extension, then per row a 16-bit
# field count and per field a 32-bit length (-1 for NULL) and the big-endian value.
COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


def copy_rows(sql: str, params: dict | list, columns: list[tuple[str, str]]) -> np.ndarray:
    """Rows of ``sql`` as a numpy structured array with ``columns`` (name, big-endian dtype).

    The query must return exactly these fixed-width, non-NULL columns.
    """
    fields = [("fields", ">i2")]
    for name, kind in columns:
        fields += [(f"{name}_length", ">i4"), (name, kind)]
    row_type = np.dtype(fields)
    data, start = _copy_binary(sql, params)
    body = data[start : len(data) - 2]  # The last two bytes mark the end.
    rows = np.frombuffer(body, dtype=row_type)
    for name, kind in columns:
        if np.any(rows[f"{name}_length"] != np.dtype(kind).itemsize):
            raise ValueError(f"COPY returned NULL or a wider value in column {name}")
    return rows


def copy_row(sql: str, params: dict) -> list[memoryview | None]:
    """The fields of the one row ``sql`` returns (None for NULL): bytea arrives as its
    bytes, without the hex text encoding of a plain fetch."""
    rows = copy_fields(sql, params)
    if len(rows) != 1:
        raise ValueError(f"COPY returned {len(rows)} rows, not one")
    return rows[0]


def copy_fields(sql: str, params: dict) -> list[list[memoryview | None]]:
    """The fields of each row ``sql`` returns (None for NULL), as ``copy_row``'s; for the
    few rows of packed columns, read field by field."""
    data, position = _copy_binary(sql, params)

    def integer(at: int, size: int) -> int:
        return int.from_bytes(data[at : at + size], "big", signed=True)

    rows = []
    while (count := integer(position, 2)) != -1:
        position += 2
        fields = []
        for _ in range(count):
            length, position = integer(position, 4), position + 4
            fields.append(None if length < 0 else data[position : position + length])
            position += max(length, 0)
        rows.append(fields)
    return rows


def joined_chunks(rows: list[list[memoryview | None]], key: int) -> list[bytes]:
    """The columns after column ``key`` of rows that each hold a chunk of packed columns,
    each column joined in the order of ``key`` (a bigint: the chunk's first query id).
    A row whose key is NULL holds no chunk and is left out."""
    chunks = [row for row in rows if row[key] is not None]
    chunks.sort(key=lambda row: int.from_bytes(row[key], "big", signed=True))
    width = len(rows[0]) if rows else key + 1
    return [
        b"".join(row[column] for row in chunks if row[column] is not None)
        for column in range(key + 1, width)
    ]


def _copy_binary(sql: str, params: dict | list) -> tuple[memoryview, int]:
    """``sql``'s rows in COPY's binary format, and where the first row starts."""
    buffer = io.BytesIO()
    with connection.cursor() as cursor:
        statement = cursor.cursor.mogrify(sql, params).decode()
        cursor.cursor.copy_expert(f"COPY ({statement}) TO STDOUT (FORMAT binary)", buffer)
    data = buffer.getbuffer()
    if bytes(data[: len(COPY_SIGNATURE)]) != COPY_SIGNATURE:
        raise ValueError("COPY did not return PostgreSQL's binary format")
    extension = int.from_bytes(data[15:19], "big")
    return data, 19 + extension
