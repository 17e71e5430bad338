"""Reads that feed the numbers: PostgreSQL rows in, plain numpy arrays out.

Nothing here returns a QuerySet, so the numeric core stays free of Django. Large reads
use COPY in PostgreSQL's binary format, parsed by numpy in one call, because turning a
million rows into Python tuples costs many times what PostgreSQL spends finding them.
"""

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import connection

from judgements import packed
from judgements.block_layout import BLOCK_HEADER, decoded, query_major
from judgements.packed import PACKED_CURRENT_SQL, packed_fill
from metrics.core.consensus import consensus, policy_names
from metrics.core.segments import offsets_from_lengths, sorted_lookup
from metrics.models import MetricPoint
from metrics.pgcopy import copy_fields, copy_row, copy_rows, joined_chunks, ordered_chunks
from metrics.sources import HUMAN, Freshness, Grades, Source

# The present state: judgements_pairgrade (judgements/sql/pair_grades.sql) holds each
# pair's current grades after every event in the log, one row per grade here: the
# state as of a moment when no event is dated later (metrics.sources decides). Rows
# come unordered: numpy sorts them in a fraction of what ORDER BY costs PostgreSQL.
STORED_GRADES_SQL = """
SELECT pair.query_id, pair.document_id, grade
FROM judgements_pairgrade pair, unnest(pair.grades) AS grade
WHERE pair.project_id = %(project)s
  AND pair.graded > 0
  AND (%(queries)s::bigint[] IS NULL OR pair.query_id = ANY(%(queries)s))
"""
STORED_GRADES_COLUMNS = [("query_id", ">i8"), ("document_id", ">i8"), ("grade", ">i2")]

# A result list, packed (migration 0008): per query, one row holds the hits' documents
# (judgements_rankedhits) and, per consensus policy, one row the hits' grades and the
# query's judged grades (judgements_rankedgrades). Each column of the whole list comes
# back as one byte string, concatenated in query order, with each query's lengths
# beside it; numpy unpacks them without a Python loop. The first ``depth`` hits are a
# prefix of each row. The rows are sorted once, cut to their prefix, for all three
# aggregates (PostgreSQL sees its input sorted as they ask): sorted by each aggregate,
# whole rows of a hundred hits spilled to disk, in three processes, 57 ms instead of 22.
# A list's documents per query, in chunks of query ids as STORED_RANKED_SQL reads the
# grades (see there), each chunk by its own range of ranked_hits_unique: one statement
# over the whole list let the planner scan every list's rows whenever the list was a
# fifth of the table or more (36 ms instead of 10 for 10,000 queries beside 38,000
# other rows), because the rows a list's index range points to look scattered.
RANKED_DOCUMENTS_SQL = """
WITH span AS (
    SELECT min(query_id) AS low, max(query_id) AS high,
           greatest(%(chunk)s, (max(query_id) - min(query_id)) / 1024 + 1) AS width
    FROM judgements_rankedhits
    WHERE result_list_id = %(result_list)s
      AND (%(queries)s::bigint[] IS NULL OR query_id = ANY(%(queries)s))
), chunks AS (
    SELECT low + width * i AS first, low + width * (i + 1) AS next
    FROM span, generate_series(0, (high - low) / width) AS i
)
SELECT chunks.first, documents.*
FROM chunks
CROSS JOIN LATERAL (
    SELECT string_agg(int8send(query_id), ''::bytea ORDER BY query_id),
           string_agg(int4send(length(documents) / 8), ''::bytea ORDER BY query_id),
           string_agg(documents, ''::bytea ORDER BY query_id)
    FROM (
        SELECT query_id,
               substring(documents FROM 1 FOR 8 * coalesce(%(depth)s, hits)) AS documents
        FROM judgements_rankedhits
        WHERE result_list_id = %(result_list)s AND hits > 0
          AND query_id >= chunks.first AND query_id < chunks.next
          AND (%(queries)s::bigint[] IS NULL OR query_id = ANY(%(queries)s))
    ) AS chunk
) AS documents
"""

# The grades, packed (when they hold the moment asked for: metrics.sources decides).
# They come in chunks, one row per range of %(chunk)s consecutive query ids (wider
# when the ids span more than 1024 such ranges), each chunk read by its own index range
# and in query order, the rows themselves in any order (numbered by their first id): one
# row of megabytes costs PostgreSQL and libpq about twice what the same bytes in rows
# of ~100 kB cost, and sorting the rows in SQL would spill them to disk.
STORED_RANKED_SQL = f"""
WITH guard AS MATERIALIZED (
    -- Evaluated once: referenced twice below, an inlined guard would run twice.
    SELECT {PACKED_CURRENT_SQL} AS current
), span AS (
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
FROM guard
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
# A whole list, packed: its blocks (judgements_rankedblock), one row each in any order
# (numbered by their block), the hits' codes up to rank %(depth)s being one prefix of
# each block's (judgements.block_layout), and the codes' grades; rows of tens of
# kilobytes, which PostgreSQL and libpq hand over faster than one row of megabytes. Or
# only its blocks %(first_block)s to %(last_block)s (many queries of a list:
# block_span). The same guard; no block gives one row of NULLs. A block marked stale by
# a fill is written again first (judgements.packed.blocks_refresh), or the list read
# per query.
STORED_BLOCKS_SQL = f"""
WITH guard AS MATERIALIZED (
    SELECT {PACKED_CURRENT_SQL} AS current
)
SELECT guard.current, int4send(block.block), block.header,
       CASE WHEN %(depth)s::int IS NULL THEN block.ranked
            ELSE substring(block.ranked FROM 1 FOR block.width * coalesce(
                block.rank_ends[least(%(depth)s, cardinality(block.rank_ends))], 0))
       END,
       block.judged, block.grades, int2send(block.width), block.stale
FROM guard
LEFT JOIN judgements_rankedblock block
    ON guard.current AND block.result_list_id = %(result_list)s AND block.policy = %(policy)s
   AND (%(first_block)s::int IS NULL OR block.block BETWEEN %(first_block)s AND %(last_block)s)
"""
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


def pair_keys(query_ids: np.ndarray, document_ids: np.ndarray) -> np.ndarray:
    """One sortable int64 per pair (ids stay far below 2**31)."""
    return (query_ids.astype(np.int64) << 32) | document_ids.astype(np.int64)


def pair_grades(
    project_id: int, *, fresh: Freshness, policy: str, query_ids: list[int] | None = None
) -> PairGrades:
    """Consensus of each pair from the raters' current grades as of ``fresh.moment``.

    Read from the trigger-kept ``judgements_pairgrade`` where ``fresh`` (the answer of
    ``metrics.sources.freshness``) says it holds that moment, else (a past moment, or
    events dated in the future) replayed from the log up to it. Both give the same
    arrays, bit for bit.
    """
    if policy not in policy_names():
        raise ValueError(f"policy must be one of {policy_names()}, not {policy!r}")
    if fresh.pairs == Source.PAIRS:
        return stored_pair_grades(project_id, policy=policy, query_ids=query_ids)
    return logged_pair_grades(
        project_id, as_of=fresh.moment, policy=policy, query_ids=query_ids, grades=fresh.grades
    )


def stored_pair_grades(
    project_id: int, *, policy: str, query_ids: list[int] | None = None
) -> PairGrades:
    """``pair_grades`` from ``judgements_pairgrade``: the state after every event."""
    params = {"project": project_id, "queries": query_ids}
    rows = copy_rows(STORED_GRADES_SQL, params, STORED_GRADES_COLUMNS)
    return _consensus_of(
        rows["query_id"].astype(np.int64),
        rows["document_id"].astype(np.int64),
        rows["grade"].astype(np.float64),
        policy,
    )


def logged_pair_grades(
    project_id: int,
    *,
    as_of: datetime,
    policy: str,
    query_ids: list[int] | None = None,
    grades: Grades = HUMAN,
) -> PairGrades:
    """``pair_grades`` by replaying the judgement log up to ``as_of``, from the current
    grades of ``grades``' raters (the human raters' unless told otherwise): the events
    read in one binary COPY and each rater's current answer found in numpy
    (``metrics.core.replay``, the rule of ``Judgement.objects.current()``), which takes
    about half the time of that rule's DISTINCT ON in SQL and its rows in Python. The
    human raters' grades come from the packed log instead (``judgements.log_blocks``,
    the same rule over spans written from the log), where its blocks can be written."""
    from judgements import log_blocks
    from metrics import log_replay

    if not grades.humans and not grades.judges:
        rows = np.empty((0, 3), dtype=np.int64)  # Nobody's grades: no judged pair.
        return _consensus_of(rows[:, 0], rows[:, 1], rows[:, 2].astype(np.float64), policy)
    many = query_ids is None or len(query_ids) >= log_blocks.BLOCK_QUERIES
    if grades.human_only and many:
        # The packed log holds the human events; unless a block of it cannot be written
        # now, it gives the same grades without reading the log. A few queries' events
        # (one query's working) cost less to read than a block to write again.
        found = log_blocks.spans(project_id, query_ids=query_ids)
        if found is not None:
            return log_replay.spans_pair_grades(found, as_of, policy)
    log = log_replay.sorted_log(project_id, until=as_of, grades=grades, query_ids=query_ids)
    return log_replay.replayed_pair_grades(log, as_of, policy)


def _consensus_of(queries, documents, grades, policy: str) -> PairGrades:
    """``PairGrades`` of one row per current grade, in any order."""
    order = np.lexsort((grades, pair_keys(queries, documents)))
    queries, documents, grades = queries[order], documents[order], grades[order]
    # A pair starts where the key changes; with no rows there is no first pair either.
    starts = np.flatnonzero(
        np.r_[len(grades) > 0, (queries[1:] != queries[:-1]) | (documents[1:] != documents[:-1])]
    )
    offsets = np.r_[starts, len(grades)]
    return PairGrades(
        query_ids=queries[starts],
        document_ids=documents[starts],
        grades=consensus(grades, offsets, policy),
        raters=np.diff(offsets),
    )


# The queries with a current grade, from the trigger-kept judgements_querygrades.
JUDGED_QUERIES_SQL = """
SELECT string_agg(int8send(grades.query_id), ''::bytea ORDER BY grades.query_id)
FROM judgements_querygrades grades
JOIN judgements_query query ON query.id = grades.query_id
WHERE query.project_id = %(project)s AND grades.judged > 0
"""


def judged_query_ids(project_id: int, *, fresh: Freshness) -> np.ndarray:
    """Sorted ids of the project's queries with at least one current grade as of
    ``fresh.moment``: the queries a mean over judged queries counts, and the queries
    of an exported qrels file. Read from ``judgements_querygrades`` where ``fresh``
    says the pair grades hold, else replayed from the log."""
    if fresh.pairs == Source.PAIRS:
        [column] = copy_row(JUDGED_QUERIES_SQL, {"project": project_id})
        return unpacked(column, ">i8").astype(np.int64)
    pairs = logged_pair_grades(project_id, as_of=fresh.moment, policy="mean", grades=fresh.grades)
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
    params = {
        "result_list": result_list_id,
        "queries": query_ids,
        "depth": depth,
        "chunk": CHUNK_QUERIES,
    }
    rows = copy_fields(RANKED_DOCUMENTS_SQL, params)
    query_column, length_column, document_column = joined_chunks(rows, key=0, width=4)
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
    """``result_list_grades`` from the packed rows, the state after every event
    (``metrics.sources`` says when that is the moment asked for). The stale ones are
    filled first (``judgements.packed``), without waiting for a writer; None when a
    writer holds one of them, or ``as_of`` no longer holds, in the same statement
    (``judgements.packed.PACKED_CURRENT_SQL``): the caller then lays the list out from
    the pair grades, the same numbers.

    The same arrays as the log gives, except that each query's judged grades come
    highest first instead of by document. Many ``query_ids`` close together are read
    as the blocks that hold them (``block_span``), the other queries dropped after.
    """
    if policy not in policy_names():
        raise ValueError(f"policy must be one of {policy_names()}, not {policy!r}")
    span = block_span(query_ids)
    params = {
        "project": project_id,
        "result_list": result_list_id,
        "as_of": as_of,
        "queries": query_ids,
        "depth": depth,
        "policy": policy,
        "chunk": CHUNK_QUERIES,
        "first_block": span[0] if span else None,
        "last_block": span[1] if span else None,
    }
    blocks = query_ids is None or span is not None
    rows = _packed_rows(params, blocks=blocks)
    if rows is None:
        # Stale queries (or a policy not filled yet): filled, unless a writer holds them.
        packed_fill(project_id, query_ids, wait=False)
        rows = _packed_rows(params, blocks=blocks)
    if rows is not None and blocks and any(row[-1] == b"\x01" for row in rows):
        # Blocks that fills marked: written again for this list and policy, unless
        # another transaction holds one; else the list is read query by query. Only a
        # whole list's read writes them (a refresh of some queries takes no block's
        # lock); a recompute's chunk writes its own first (metrics.recompute).
        blocks = query_ids is None and packed.blocks_refresh(result_list_id, policy)
        rows = _packed_rows(params, blocks=blocks)
    if rows is None:
        return None
    if blocks:
        grades = _blocks_grades(rows, depth)
        return grades if query_ids is None else only_queries(grades, query_ids)
    header, ranked, levels, documents = joined_chunks(rows, key=1, width=6)
    queries = np.frombuffer(header or b"", dtype=STORED_RANKED_HEADER)
    return _packed_grades(queries, unpacked(ranked, ">f8"), levels, documents)


def block_span(query_ids: list[int] | None) -> tuple[int, int] | None:
    """The first and last block (``judgements.packed.BLOCK_QUERIES`` ids each) of
    ``query_ids`` when those blocks hold at most about twice as many ids, so that
    reading them whole costs less than reading the queries' own rows (a recompute's
    chunk of 12,500 queries: 0.08 against 0.46 s); None otherwise.

    >>> block_span(list(range(1000, 1300))), block_span(list(range(0, 100_000, 100)))
    ((7, 10), None)
    """
    if query_ids is None or len(query_ids) < packed.BLOCK_QUERIES:
        return None
    first, last = min(query_ids) // packed.BLOCK_QUERIES, max(query_ids) // packed.BLOCK_QUERIES
    if (last - first - 1) * packed.BLOCK_QUERIES > 2 * len(query_ids):
        return None
    return first, last


def only_queries(grades: ResultListGrades, query_ids: list[int]) -> ResultListGrades:
    """``grades`` of the queries of ``query_ids`` alone (in the same order)."""
    keep = np.isin(grades.query_ids, np.asarray(query_ids, dtype=np.int64))
    hits, judged = np.diff(grades.offsets), np.diff(grades.judged_offsets)
    return ResultListGrades(
        query_ids=grades.query_ids[keep],
        ranked_grades=grades.ranked_grades[np.repeat(keep, hits)],
        offsets=offsets_from_lengths(hits[keep]),
        judged_grades=grades.judged_grades[np.repeat(keep, judged)],
        judged_offsets=offsets_from_lengths(judged[keep]),
        judgements=grades.judgements[keep],
    )


def _packed_rows(params: dict, *, blocks: bool):
    """The rows of the packed read (the list's blocks, or its rows in chunks of query
    ids), or None when the guard says they do not hold."""
    rows = copy_fields(STORED_BLOCKS_SQL if blocks else STORED_RANKED_SQL, params)
    current = rows[0][0]
    return rows if current is not None and bytes(current) == b"\x01" else None


def _blocks_grades(rows, depth: int | None) -> ResultListGrades:
    """``ResultListGrades`` of a list's blocks (the rows of STORED_BLOCKS_SQL): their
    codes decoded by their grades, the hits' back in query order."""
    rows = ordered_chunks(rows, key=1)
    queries = np.frombuffer(b"".join(row[2] for row in rows), dtype=BLOCK_HEADER)
    hits = queries["hits"].astype(np.int64)
    read = hits if depth is None else np.minimum(hits, depth)
    blocks = queries["query_id"].astype(np.int64) // packed.BLOCK_QUERIES
    widths = [int.from_bytes(row[6], "big") for row in rows]
    grades = unpacked(b"".join(row[5] for row in rows), ">f8")
    # Where each block's grades start among all the blocks' grades.
    starts = offsets_from_lengths(np.array([len(row[5]) // 8 for row in rows], dtype=np.intp))
    by_rank = decoded(grades, starts[:-1], [row[3] for row in rows], widths)
    return ResultListGrades(
        query_ids=queries["query_id"].astype(np.int64),
        ranked_grades=query_major(by_rank, read, blocks),
        offsets=offsets_from_lengths(read),
        judged_grades=decoded(grades, starts[:-1], [row[4] for row in rows], widths),
        judged_offsets=offsets_from_lengths(queries["judged"].astype(np.int64)),
        judgements=queries["graded"].astype(np.int64),
    )


def _packed_grades(queries, ranked, levels, documents) -> ResultListGrades:
    """``ResultListGrades`` of the queries' RankedGrades rows (STORED_RANKED_SQL)."""
    # The ideal comes as levels: each distinct grade, highest first, and its count.
    counts = unpacked(documents, ">i4")
    judged_so_far = offsets_from_lengths(counts)
    level_offsets = offsets_from_lengths(queries["levels"].astype(np.int64))
    return ResultListGrades(
        query_ids=queries["query_id"].astype(np.int64),
        ranked_grades=ranked,
        offsets=offsets_from_lengths(queries["ranked"].astype(np.int64)),
        judged_grades=repeated(unpacked(levels, ">f8"), counts),
        judged_offsets=judged_so_far[level_offsets],
        judgements=queries["graded"].astype(np.int64),
    )


def repeated(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``np.repeat(values, counts)`` for counts of at least 1, as one gather: each
    output's index is a running count of the runs started before it. Half the time of
    ``np.repeat``, which copies each run in a loop of its own (0.55 against 0.78 ms
    for the 498,603 judged grades of a 10,000-query list in 103,118 levels).

    >>> repeated(np.array([3.0, 1.5, 0.0]), np.array([2, 1, 3])).tolist()
    [3.0, 3.0, 1.5, 0.0, 0.0, 0.0]
    """
    if len(counts) == 0:
        return values[:0].copy()
    index = np.zeros(int(counts.sum()), dtype=np.intp)
    index[np.cumsum(counts[:-1])] = 1
    np.cumsum(index, out=index)
    return values.take(index)


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


# Each query's latest point of a list and metric, and whether it is newer than the
# moment asked for (one read: the rows are needed anyway, and a test of the newest
# as_of alone scans them too, 0.1 s at 100k queries).
LATEST_VALUES_SQL = """
SELECT query_id, value, judged, retrieved, judgements, zero_idcg,
       (as_of > %(as_of)s)::int4 AS newer
FROM metrics_latestmetricpoint
WHERE result_list_id = %(result_list)s AND metric = %(metric)s
"""
# The columns of latest_values, as they are returned.
LATEST_COLUMNS = {
    "query_id": np.int64,
    "value": np.float64,
    "judged": np.int64,
    "retrieved": np.int64,
    "judgements": np.int64,
    "zero_idcg": np.int64,
}
LATEST_VALUES = [
    ("query_id", ">i8"),
    ("value", ">f8"),
    ("judged", ">i4"),
    ("retrieved", ">i4"),
    ("judgements", ">i4"),
    ("zero_idcg", ">i4"),
    ("newer", ">i4"),
]


def latest_values(result_list, spec, *, as_of) -> tuple[dict[str, np.ndarray], bool]:
    """Each query's latest point as of ``as_of``: LATEST_COLUMNS (arrays in query
    order), and whether they are LatestMetricPoint's rows.

    When no point of the list is newer than ``as_of`` (a refresh, or a rebuild
    moving forward), the latest points are LatestMetricPoint's rows; otherwise
    (rebuilding a past bucket) they are found in the series itself.
    """
    params = {"result_list": result_list.pk, "metric": spec.name, "as_of": as_of}
    rows = copy_rows(LATEST_VALUES_SQL, params, LATEST_VALUES)
    latest = not rows["newer"].any()
    if latest:
        rows = rows[np.argsort(rows["query_id"], kind="stable")]
        found = [rows[name] for name in LATEST_COLUMNS]
    else:
        points = MetricPoint.objects.filter(
            result_list=result_list, metric=spec.name, query__isnull=False, as_of__lte=as_of
        )
        points = points.order_by("query_id", "-as_of").distinct("query_id")
        found = list(zip(*points.values_list(*LATEST_COLUMNS), strict=True))
    found = found or [()] * len(LATEST_COLUMNS)
    columns = zip(LATEST_COLUMNS.items(), found, strict=True)
    return {name: np.asarray(values, dtype=kind) for (name, kind), values in columns}, latest
