"""Reads of a result list's grades from the packed rows: the whole list (or some of its
queries) in one COPY, unpacked by numpy without a Python loop (``ResultListGrades``);
the queries whose packed rows wait for a fill, and any moment the packed rows do not
hold, laid out from their hits and the pairs' grades of ``metrics.selectors``."""

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from config.pgcopy import copy_fields, joined_chunks, unpacked
from judgements.packed import PACKED_CURRENT_SQL, STALE_IDS_SQL
from metrics.core.consensus import policy_names
from metrics.core.segments import offsets_from_lengths, sorted_lookup
from metrics.selectors import PairGrades, pair_keys, stored_pair_grades

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
    -- Evaluated once: referenced twice below, an inlined guard would run twice. The
    -- stale queries are read in the same statement as their rows (one snapshot).
    SELECT {PACKED_CURRENT_SQL} AS current, {STALE_IDS_SQL} AS stale
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
SELECT guard.current, guard.stale, chunks.first, grades.*
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
# Each query's fixed-width part of STORED_RANKED_SQL.
STORED_RANKED_HEADER = np.dtype(
    [("query_id", ">i8"), ("ranked", ">i4"), ("levels", ">i4"), ("graded", ">i4")]
)


@dataclass(frozen=True)
class ResultListGrades:
    """A result list laid out for ``metrics.core.ndcg_batch``."""

    query_ids: np.ndarray
    ranked_grades: np.ndarray
    offsets: np.ndarray
    judged_grades: np.ndarray
    judged_offsets: np.ndarray
    judgements: np.ndarray


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
    (``metrics.sources`` says when that is the moment asked for); the queries whose rows
    wait for a fill (``QueryGrades.stale``, read in the same statement) are laid out from
    the pair grades instead. Writes nothing. None when ``as_of`` no longer holds or the
    policy is not filled yet (``judgements.packed.PACKED_CURRENT_SQL``): the caller then
    lays the whole list out from the pair grades, the same numbers.

    The same arrays as the log gives, except that each query's judged grades come
    highest first instead of by document.
    """
    if policy not in policy_names():
        raise ValueError(f"policy must be one of {policy_names()}, not {policy!r}")
    params = {
        "project": project_id,
        "result_list": result_list_id,
        "as_of": as_of,
        "queries": query_ids,
        "depth": depth,
        "policy": policy,
        "chunk": CHUNK_QUERIES,
    }
    rows = copy_fields(STORED_RANKED_SQL, params)
    current, stale = rows[0][0], rows[0][1]
    if current is None or bytes(current) != b"\x01":
        return None
    header, ranked, levels, documents = joined_chunks(rows, key=2, width=7)
    queries = np.frombuffer(header or b"", dtype=STORED_RANKED_HEADER)
    grades = _packed_grades(queries, unpacked(ranked, ">f8"), levels, documents)
    stale = unpacked(stale, ">i8").astype(np.int64).tolist()
    if not stale:
        return grades
    pairs = stored_pair_grades(project_id, policy=policy, query_ids=stale)
    fresh = result_list_grades(result_list_id, pairs, depth=depth, query_ids=stale)
    return merged(without_queries(grades, stale), fresh)


def without_queries(grades: ResultListGrades, query_ids: list[int]) -> ResultListGrades:
    """``grades`` without the queries of ``query_ids`` (the others in the same order)."""
    keep = ~np.isin(grades.query_ids, np.asarray(query_ids, dtype=np.int64))
    hits, judged = np.diff(grades.offsets), np.diff(grades.judged_offsets)
    return ResultListGrades(
        query_ids=grades.query_ids[keep],
        ranked_grades=grades.ranked_grades[np.repeat(keep, hits)],
        offsets=offsets_from_lengths(hits[keep]),
        judged_grades=grades.judged_grades[np.repeat(keep, judged)],
        judged_offsets=offsets_from_lengths(judged[keep]),
        judgements=grades.judgements[keep],
    )


def merged(first: ResultListGrades, second: ResultListGrades) -> ResultListGrades:
    """The queries of ``first`` and ``second`` (no query in both) in one
    ``ResultListGrades``, in query order."""
    query_ids = np.concatenate([first.query_ids, second.query_ids])
    order = np.argsort(query_ids, kind="stable")
    hits = np.concatenate([np.diff(first.offsets), np.diff(second.offsets)])
    judged = np.concatenate([np.diff(first.judged_offsets), np.diff(second.judged_offsets)])
    ranked = np.concatenate([first.ranked_grades, second.ranked_grades])
    judged_grades = np.concatenate([first.judged_grades, second.judged_grades])
    return ResultListGrades(
        query_ids=query_ids[order],
        ranked_grades=ranked[_segments(hits, order)],
        offsets=offsets_from_lengths(hits[order]),
        judged_grades=judged_grades[_segments(judged, order)],
        judged_offsets=offsets_from_lengths(judged[order]),
        judgements=np.concatenate([first.judgements, second.judgements])[order],
    )


def _segments(lengths: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The indices that put segments of ``lengths`` (laid out one after another) in
    ``order``."""
    starts = offsets_from_lengths(lengths)[:-1]
    taken = lengths[order]
    within = np.arange(int(taken.sum())) - np.repeat(offsets_from_lengths(taken)[:-1], taken)
    return np.repeat(starts[order], taken) + within


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


def _unpack_queries(query_column, length_column) -> tuple[np.ndarray, np.ndarray]:
    query_ids = unpacked(query_column, ">i8").astype(np.int64)
    lengths = unpacked(length_column, ">i4").astype(np.int64)
    return query_ids, offsets_from_lengths(lengths)


def _lookup(pairs: PairGrades, keys: np.ndarray) -> np.ndarray:
    """Consensus grade for each key, NaN where the pair is unjudged."""
    return sorted_lookup(pairs.keys, pairs.grades, keys)
