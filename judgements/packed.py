"""The packed per-policy rows NDCG reads (judgements_rankedgrades), filled in numpy.

Mark, then fill (as Zulip's analytics does): the triggers of
judgements/sql/grade_summaries.sql keep each query's hits (RankedHits) and totals
(QueryGrades) in SQL and set ``QueryGrades.stale`` on every change of its grades or
hits; ``packed_fill`` then writes the stale queries' RankedGrades under every policy of
``metrics.core.consensus`` from the pairs' current grades (PairGrade.grades), so that no
policy's rule exists in SQL. Readers call ``packed_fill`` before they read (the metrics
refresh the app runs after every write reads through it too), and ``packed_current``
is the one answer to "do the packed rows hold the state as of this moment for this
policy": in Python, or as ``PACKED_CURRENT_SQL`` inside the statement that reads them.

A policy added to metrics.core.consensus is filled the first time a fill runs: the
policies filled so far are the rows of PackedPolicy, and a missing one marks every
query stale (``policies_sync``).

The fill locks the stale queries' QueryGrades rows in query order, as the triggers do,
so a grade committed meanwhile either waits for the fill or is counted by it, and its
trigger's mark survives the fill.

Blocks, marked then filled too: a fill marks the RankedBlock rows of its queries'
blocks (``BLOCK_QUERIES`` consecutive query ids) stale, every list's and policy's, in
its transaction; a reader of a whole list writes the stale blocks of its list and
policy again from their RankedGrades rows (``blocks_refresh``) before it reads them, so
that a grade costs its fill no block and a block is written at most once per read,
for the list and policy read. Fills and block writers of one block take turns on the
block's advisory lock (fills after their QueryGrades rows; graders never take it), so
nothing else writes a block row while one holds it: a fill waits for it (or, a
reader's fill, leaves the queries of a held block stale), a block writer skips a held
block. A reader whose REPEATABLE READ snapshot is behind a fill of the block it would
write (the fill marked it after the snapshot began) writes nothing (PostgreSQL refuses
the update); a list with a stale block left is read from its RankedGrades rows.
"""

import io
import itertools
import struct

import numpy as np
from django.db import IntegrityError, OperationalError, connection, transaction

from judgements.block_layout import block_columns
from metrics.core.consensus import consensus_all, policy_names
from metrics.core.segments import offsets_from_lengths, sorted_lookup
from metrics.sources import NOTHING_AFTER_SQL

# Whether the packed rows of %(project)s (of its queries %(queries)s, or all when NULL)
# hold the state as of %(as_of)s under %(policy)s: no human event of the project is
# dated later (metrics.sources' rule: machine judges' events change no packed row),
# none of those queries waits for a fill, and the policy has been filled. One SQL
# expression, for the reads that guard themselves in the same statement (one snapshot).
PACKED_CURRENT_SQL = f"""(
    {NOTHING_AFTER_SQL.format(moment="%(as_of)s")}
    AND NOT EXISTS (
        SELECT FROM judgements_querygrades waiting
        WHERE waiting.stale AND waiting.project_id = %(project)s
          AND (%(queries)s::bigint[] IS NULL OR waiting.query_id = ANY(%(queries)s)))
    AND EXISTS (SELECT FROM judgements_packedpolicy WHERE name = %(policy)s))"""

STALE_SQL = """
SELECT summary.query_id FROM judgements_querygrades summary
WHERE summary.stale AND (%(project)s::bigint IS NULL OR summary.project_id = %(project)s)
  AND (%(queries)s::bigint[] IS NULL OR summary.query_id = ANY(%(queries)s))
ORDER BY summary.query_id
FOR UPDATE OF summary {skip}
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

# Queries per block of RankedBlock: query id // BLOCK_QUERIES. A list of 10,000 queries
# reads in 79 rows; a fill of one query writes 128 queries' rows again per list and policy.
BLOCK_QUERIES = 128
# The advisory lock of a block is (BLOCK_LOCK, block): one class of keys for these locks.
BLOCK_LOCK = 0x52424C4B
# The blocks given, joined from their RankedGrades rows: per list, policy and block, the
# queries' headers and columns in query order.
BLOCK_ROWS_SQL = """
SELECT ranked.result_list_id, ranked.policy, (ranked.query_id / %(width)s)::int4,
       string_agg(int8send(ranked.query_id) || int4send(length(ranked.ranked) / 8)
                  || int4send(length(ranked.ideal) / 8) || int4send(ranked.graded), ''::bytea
                  ORDER BY ranked.query_id),
       string_agg(ranked.ranked, ''::bytea ORDER BY ranked.query_id),
       string_agg(ranked.ideal, ''::bytea ORDER BY ranked.query_id),
       string_agg(ranked.ideal_documents, ''::bytea ORDER BY ranked.query_id)
FROM unnest(%(blocks)s::int4[]) AS chosen (block)
JOIN judgements_rankedgrades ranked
    ON ranked.result_list_id = %(result_list)s AND ranked.policy = %(policy)s
   AND ranked.query_id >= chosen.block::bigint * %(width)s
   AND ranked.query_id < (chosen.block::bigint + 1) * %(width)s
GROUP BY 1, 2, 3
"""
# The blocks of the queries %(queries)s, every list's and policy's, marked stale; those
# of a list and policy that had none are added, empty and stale. Blocks already stale
# are updated too: a reader writing one from a REPEATABLE READ snapshot taken before
# this fill then fails instead of writing the block without this fill's rows.
BLOCKS_MARK_SQL = """
UPDATE judgements_rankedblock SET stale = true
WHERE block = ANY(%(blocks)s::int4[])
  -- Through the lists' unique index, not a scan of every project's blocks.
  AND result_list_id IN (SELECT ranked.result_list_id FROM judgements_rankedgrades ranked
                         WHERE ranked.query_id = ANY(%(queries)s));
INSERT INTO judgements_rankedblock
    (result_list_id, policy, block, stale, header, rank_ends, grades, width, ranked, judged)
SELECT DISTINCT ranked.result_list_id, ranked.policy, (ranked.query_id / %(width)s)::int4,
       true, ''::bytea, '{}'::int4[], ''::bytea, 1, ''::bytea, ''::bytea
FROM judgements_rankedgrades ranked
WHERE ranked.query_id = ANY(%(queries)s)
ON CONFLICT (result_list_id, policy, block) DO NOTHING;
"""
BLOCK_COPY_IN = (
    "COPY judgements_rankedblock "
    "(result_list_id, policy, block, header, rank_ends, grades, width, ranked, judged, stale) "
    "FROM STDIN (FORMAT binary)"
)


def packed_current(project_id: int, *, as_of, policy: str, query_ids=None) -> bool:
    """Whether the packed rows of the project (of ``query_ids`` only, when given) hold
    the state as of ``as_of`` under ``policy`` (``PACKED_CURRENT_SQL``); call
    ``packed_fill`` first to make them so."""
    params = {"project": project_id, "as_of": as_of, "policy": policy, "queries": query_ids}
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {PACKED_CURRENT_SQL}", params)
        return cursor.fetchone()[0]


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


def packed_fill(project_id: int | None = None, query_ids=None, *, wait: bool = True) -> int:
    """Write the RankedGrades of the project's stale queries (every project's without
    ``project_id``; only those of ``query_ids`` when given) under every registered
    policy, and mark their blocks stale; returns how many queries.

    A query whose row a writer holds is waited for, or with ``wait=False`` left stale
    (for the writer's own refresh to fill). Readers inside a longer transaction pass
    ``wait=False``: they may hold locks a writer waits for (the metrics refresh holds
    the stale marks a grading request adds to), and must not wait for that writer;
    nor fail: a row their snapshot cannot lock or write (another fill changed it since
    the snapshot began) leaves their queries stale, and 0 is returned.
    """
    policies_sync()
    if wait:
        with transaction.atomic():
            return _fill(project_id, query_ids, wait=True)
    try:
        with transaction.atomic():
            return _fill(project_id, query_ids, wait=False)
    except (OperationalError, IntegrityError):
        # A serialization failure or a block inserted meanwhile: rolled back to before
        # the fill, so the queries stay stale and the reader lays the list out itself.
        return 0


def _fill(project_id: int | None, query_ids, *, wait: bool) -> int:
    with connection.cursor() as cursor:
        skip = "" if wait else "SKIP LOCKED"
        cursor.execute(STALE_SQL.format(skip=skip), {"project": project_id, "queries": query_ids})
        queries = [row[0] for row in cursor.fetchall()]
    queries = _blocks_lock(queries, wait=wait)
    if not queries:
        return 0
    rows = _rows(queries)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM judgements_rankedgrades WHERE query_id = ANY(%s)", [queries])
        cursor.cursor.copy_expert(COPY_IN, io.BytesIO(rows))
        cursor.execute(
            "UPDATE judgements_querygrades SET stale = false WHERE query_id = ANY(%s)", [queries]
        )
    blocks = sorted({query // BLOCK_QUERIES for query in queries})
    with connection.cursor() as cursor:
        cursor.execute(
            BLOCKS_MARK_SQL, {"blocks": blocks, "queries": queries, "width": BLOCK_QUERIES}
        )
    return len(queries)


def _blocks_lock(queries: list[int], *, wait: bool) -> list[int]:
    """Take the advisory locks of the queries' blocks (in block order); returns the
    queries whose block is locked: all of them, or with ``wait=False`` those of the
    blocks no other transaction holds."""
    blocks = sorted({query // BLOCK_QUERIES for query in queries})
    if not blocks:
        return queries
    with connection.cursor() as cursor:
        if wait:
            # unnest gives the sorted array's elements in order: the locks are taken so.
            cursor.execute(
                "SELECT count(pg_advisory_xact_lock(%s, block)) FROM unnest(%s::int4[]) block",
                [BLOCK_LOCK, blocks],
            )
            return queries
        cursor.execute(
            "SELECT block FROM unnest(%s::int4[]) block"
            " WHERE NOT pg_try_advisory_xact_lock(%s, block)",
            [blocks, BLOCK_LOCK],
        )
        held = {row[0] for row in cursor.fetchall()}
    return [query for query in queries if query // BLOCK_QUERIES not in held]


def blocks_refresh(result_list_id: int, policy: str, span: tuple[int, int] | None = None) -> bool:
    """Write the stale blocks of a list under a policy (those from ``span[0]`` to
    ``span[1]`` if given) again from their RankedGrades rows, those no other
    transaction holds; returns whether none is left stale.

    For readers: it never waits, and a block its REPEATABLE READ snapshot cannot write
    (a fill marked it since the snapshot began) rolls every block back to stale. The
    chunks of a recompute each write their own blocks (``span``), side by side.
    """
    first, last = span or (None, None)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT block FROM judgements_rankedblock"
            " WHERE result_list_id = %s AND policy = %s AND stale"
            " AND (%s::int IS NULL OR block BETWEEN %s AND %s) ORDER BY block",
            [result_list_id, policy, first, first, last],
        )
        stale = [row[0] for row in cursor.fetchall()]
    if not stale:
        return True
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT block FROM unnest(%s::int4[]) block"
                " WHERE pg_try_advisory_xact_lock(%s, block)",
                [stale, BLOCK_LOCK],
            )
            locked = [row[0] for row in cursor.fetchall()]
            blocks_write(result_list_id, policy, locked)
    except (OperationalError, IntegrityError):
        return False
    return len(locked) == len(stale)


def blocks_write(result_list_id: int, policy: str, blocks: list[int]) -> None:
    """Write the RankedBlock rows of a list under a policy for ``blocks`` (block
    numbers whose advisory locks this transaction holds) again from their RankedGrades
    rows; a block left without a row goes."""
    from metrics.pgcopy import copy_fields

    if not blocks:
        return
    params = {
        "blocks": blocks,
        "width": BLOCK_QUERIES,
        "result_list": result_list_id,
        "policy": policy,
    }
    rows = copy_fields(BLOCK_ROWS_SQL, params)
    out = [COPY_HEADER]
    for list_id, policy_name, block, *joined in rows:
        fields = [bytes(list_id), bytes(policy_name), bytes(block), *block_columns(*joined)]
        fields.append(b"\x00")  # not stale
        out.append(struct.pack(">h", len(fields)))
        out.extend(struct.pack(">i", len(field)) + field for field in fields)
    out.append(struct.pack(">h", -1))
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM judgements_rankedblock"
            " WHERE result_list_id = %s AND policy = %s AND block = ANY(%s::int4[])",
            [result_list_id, policy, blocks],
        )
        cursor.cursor.copy_expert(BLOCK_COPY_IN, io.BytesIO(b"".join(out)))


def _rows(queries: list[int]) -> bytes:
    """The RankedGrades rows of ``queries`` in COPY's binary format."""
    from metrics.selectors import copy_row, copy_rows, pair_keys

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
