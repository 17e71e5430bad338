"""The packed per-policy rows NDCG reads (judgements_rankedgrades), filled in numpy.

Mark, then fill (as Zulip's analytics does): the triggers of
judgements/sql/grade_summaries.sql keep each query's hits (RankedHits) and totals
(QueryGrades) in SQL and set ``QueryGrades.stale`` on every change of its grades or
hits; ``packed_fill``, their one writer, then writes the stale queries' RankedGrades
under every policy of ``metrics.core.consensus`` from the pairs' current grades
(PairGrade.grades), so that no policy's rule exists in SQL. The metrics refresh task
fills after every write (``metrics.tasks.project_metrics_refresh``); readers never
fill: a query still marked stale is read from the pair grades instead
(``metrics.packed_reads``). ``PACKED_CURRENT_SQL`` is the reading statement's guard:
the rows hold the state as of the moment asked, but for the stale queries it lists.

A policy added to metrics.core.consensus is filled the first time a fill runs: the
policies filled so far are the rows of PackedPolicy, and a missing one marks every
query stale (``policies_sync``); until then a reader of that policy lays every list
out from the pair grades.

The fill locks the stale queries' QueryGrades rows in query order, as the triggers do,
so a grade committed meanwhile either waits for the fill or is counted by it, and its
trigger's mark survives the fill.
"""

import io
import itertools
import struct

import numpy as np
from django.db import connection, transaction

from config.pgcopy import copy_row, copy_rows
from judgements.derived.freshness import NOTHING_AFTER_SQL
from metrics.core.consensus import consensus_all, policy_names
from metrics.core.segments import offsets_from_lengths, pair_keys, sorted_lookup

# Whether the packed rows of %(project)s hold the state as of %(as_of)s under
# %(policy)s, but for the queries still marked stale (a reader reads those from the pair
# grades): no human event of the project is dated later (metrics.sources' rule: machine
# judges' events change no packed row), and the policy has been filled. One SQL
# expression, for the reads that guard themselves in the same statement (one snapshot).
PACKED_CURRENT_SQL = f"""(
    {NOTHING_AFTER_SQL.format(moment="%(as_of)s")}
    AND EXISTS (SELECT FROM judgements_packedpolicy WHERE name = %(policy)s))"""
# The project's queries (of %(queries)s, or all when NULL) whose packed rows wait for a
# fill, as one int8 array (big-endian, sorted), for the same reading statement.
STALE_IDS_SQL = """(
    SELECT string_agg(int8send(waiting.query_id), ''::bytea ORDER BY waiting.query_id)
    FROM judgements_querygrades waiting
    WHERE waiting.stale AND waiting.project_id = %(project)s
      AND (%(queries)s::bigint[] IS NULL OR waiting.query_id = ANY(%(queries)s)))"""

STALE_SQL = """
SELECT summary.query_id FROM judgements_querygrades summary
WHERE summary.stale AND (%(project)s::bigint IS NULL OR summary.project_id = %(project)s)
  AND (%(queries)s::bigint[] IS NULL OR summary.query_id = ANY(%(queries)s))
ORDER BY summary.query_id
FOR UPDATE OF summary
"""
GRADES_SQL = """
SELECT pair.query_id, pair.document_id, grade
FROM judgements_pairgrade pair, unnest(pair.grades) AS grade
WHERE pair.query_id = ANY(%(queries)s) AND pair.graded > 0
"""
HITS_SQL = """
SELECT string_agg(int8send(result_list_id) || int8send(query_id) || int4send(hits), ''::bytea
                  ORDER BY result_list_id, query_id),
       string_agg(documents, ''::bytea ORDER BY result_list_id, query_id)
FROM judgements_rankedhits
WHERE query_id = ANY(%(queries)s) AND hits > 0
"""
HIT_HEADER = np.dtype([("result_list_id", ">i8"), ("query_id", ">i8"), ("hits", ">i4")])
COPY_IN = (
    "COPY judgements_rankedgrades "
    "(result_list_id, query_id, policy, graded, ranked, ideal, ideal_documents) "
    "FROM STDIN (FORMAT binary)"
)
COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)


def policies_sync() -> None:
    """Record the registered policies as filled, marking every query stale first when
    one is new, so that the next fill writes its rows."""
    names = policy_names()
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(array_agg(name), '{}') FROM judgements_packedpolicy")
        if set(names) <= set(cursor.fetchone()[0]):
            return
        with transaction.atomic():
            cursor.execute("LOCK TABLE judgements_packedpolicy IN EXCLUSIVE MODE")
            cursor.execute(
                "INSERT INTO judgements_packedpolicy (name) SELECT unnest(%s::text[]) "
                "ON CONFLICT DO NOTHING RETURNING name",
                [list(names)],
            )
            if cursor.fetchall():
                cursor.execute("UPDATE judgements_querygrades SET stale = true")


@transaction.atomic
def packed_fill(project_id: int | None = None, query_ids=None) -> int:
    """Write the RankedGrades of the project's stale queries (every project's without
    ``project_id``; only those of ``query_ids`` when given) under every registered
    policy; returns how many queries. The one writer of RankedGrades: the metrics
    refresh task, a bulk load's rebuild and ``derived_state --rebuild`` call it, never a
    reader. A query whose row a writer holds is waited for."""
    policies_sync()
    with connection.cursor() as cursor:
        cursor.execute(STALE_SQL, {"project": project_id, "queries": query_ids})
        queries = [row[0] for row in cursor.fetchall()]
    if not queries:
        return 0
    rows = _rows(queries)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM judgements_rankedgrades WHERE query_id = ANY(%s)", [queries])
        cursor.cursor.copy_expert(COPY_IN, io.BytesIO(rows))
        cursor.execute(
            "UPDATE judgements_querygrades SET stale = false WHERE query_id = ANY(%s)", [queries]
        )
    return len(queries)


def _rows(queries: list[int]) -> bytes:
    """The RankedGrades rows of ``queries`` in COPY's binary format."""
    params = {"queries": queries}
    grades = copy_rows(
        GRADES_SQL, params, [("query_id", ">i8"), ("document_id", ">i8"), ("grade", ">i2")]
    )
    keys = pair_keys(grades["query_id"].astype(np.int64), grades["document_id"].astype(np.int64))
    values = grades["grade"].astype(np.float64)
    order = np.lexsort((values, keys))
    keys, values = keys[order], values[order]
    starts = np.flatnonzero(np.r_[len(keys) > 0, keys[1:] != keys[:-1]])
    offsets = np.r_[starts, len(keys)]
    pair_key = keys[starts]
    pair_query = pair_key >> 32
    by_policy = consensus_all(values, offsets)
    # Each query's totals: current grades over its pairs, in the order of its id.
    query_ids, first_pair = np.unique(pair_query, return_index=True)
    graded = np.add.reduceat(np.diff(offsets), first_pair) if len(first_pair) else first_pair

    header, documents = copy_row(HITS_SQL, params)
    hits = np.frombuffer(header or b"", dtype=HIT_HEADER)
    hit_offsets = offsets_from_lengths(hits["hits"].astype(np.int64))
    hit_documents = np.frombuffer(documents or b"", dtype=">i8").astype(np.int64)
    hit_queries = np.repeat(hits["query_id"].astype(np.int64), np.diff(hit_offsets))
    hit_keys = pair_keys(hit_queries, hit_documents)

    # Each hit row's query totals (0 for a query without a current grade).
    row_graded = sorted_lookup(
        query_ids, graded.astype(np.float64), hits["query_id"].astype(np.int64)
    )
    row_graded = np.nan_to_num(row_graded).astype(np.int64).tolist()

    out = [COPY_HEADER]
    for policy, consensus in by_policy.items():
        ranked = sorted_lookup(pair_key, consensus, hit_keys).astype(">f8")
        ideal = _levels(pair_query, consensus)
        name = policy.encode()
        for row, (list_id, query_id, _) in enumerate(hits.tolist()):
            levels, counts = ideal.get(query_id, (b"", b""))
            ranked_bytes = ranked[hit_offsets[row] : hit_offsets[row + 1]].tobytes()
            out.append(
                struct.pack(">hiqiqi", 7, 8, list_id, 8, query_id, len(name))
                + name
                + struct.pack(">ii", 4, row_graded[row])
                + struct.pack(">i", len(ranked_bytes))
                + ranked_bytes
                + struct.pack(">i", len(levels))
                + levels
                + struct.pack(">i", len(counts))
                + counts
            )
    out.append(struct.pack(">h", -1))
    return b"".join(out)


def _levels(pair_query: np.ndarray, consensus: np.ndarray) -> dict[int, tuple[bytes, bytes]]:
    """Each query's judged grades as levels: every distinct grade highest first (float64)
    and how many of its pairs have it (int32), both big-endian."""
    if len(pair_query) == 0:
        return {}
    order = np.lexsort((-consensus, pair_query))
    queries, grades = pair_query[order], consensus[order]
    starts = np.flatnonzero(
        np.r_[True, (queries[1:] != queries[:-1]) | (grades[1:] != grades[:-1])]
    )
    counts = np.diff(np.r_[starts, len(grades)]).astype(">i4")
    level_query, level_grade = queries[starts], grades[starts].astype(">f8")
    query_starts = np.flatnonzero(np.r_[True, level_query[1:] != level_query[:-1]])
    bounds = np.r_[query_starts, len(level_query)]
    return {
        int(level_query[begin]): (
            level_grade[begin:end].tobytes(),
            counts[begin:end].tobytes(),
        )
        for begin, end in itertools.pairwise(bounds.tolist())
    }
