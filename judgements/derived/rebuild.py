"""Bulk loads without per-statement triggers, and one set-based rebuild of what they touched.

The triggers of ``judgements/sql/`` recount the derived tables after every statement on
judgements, hits and pair grades. A bulk load writes millions of rows in a few
statements, often with indexes dropped (``judgements.bulk.indexes_deferred``), and the
triggers' per-pair index probes then fall off a cliff. Inside ``deferred()`` those
triggers do nothing (their WHEN reads ``judgements.defer_derived``, set with SET LOCAL
so that it ends with the transaction); ``rebuild()`` then calls the triggers' own
functions once, over every pair and query of the scope, with the indexes back.

The triggers on the pool (the tallies), on analysts' requests and on projects still
fire: the rebuild writes the pool in a few statements, and the tallies follow it.
"""

import time
from contextlib import contextmanager

from django.db import connection, transaction

SETTING = "judgements.defer_derived"

# The project's queries, or those of them listed in %(queries)s when it is not NULL.
SCOPE = """
    SELECT id FROM judgements_query
    WHERE project_id = %(project)s
      AND (%(queries)s::bigint[] IS NULL OR id = ANY(%(queries)s::bigint[]))
"""

PAIR_GRADES_SQL = f"""
WITH pairs AS (
    -- Machine judges' events are no rater's answer: their pairs get no row, as the
    -- insert trigger gives them none (judgements/sql/pair_grades.sql).
    SELECT DISTINCT query_id, document_id FROM judgements_judgement
    WHERE query_id IN ({SCOPE}) AND source <> 'machine'
    UNION
    SELECT query_id, document_id FROM judgements_pairgrade
    WHERE query_id IN ({SCOPE})
)
SELECT judgements_pair_grades_recount(
    coalesce(array_agg(query_id ORDER BY query_id, document_id), '{{}}'),
    coalesce(array_agg(document_id ORDER BY query_id, document_id), '{{}}'),
    true)
FROM pairs;
-- A row whose events are all gone (none can be: the log is append-only, and deleting
-- events goes with their pair's row) is dropped, as the oracle has none.
DELETE FROM judgements_pairgrade pair
WHERE pair.query_id IN ({SCOPE})
  AND NOT EXISTS (
      SELECT FROM judgements_judgement event
      WHERE event.query_id = pair.query_id AND event.document_id = pair.document_id
        AND event.source <> 'machine');
"""

SUMMARIES_SQL = f"""
SELECT judgements_grade_summaries_refresh(
    (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM ({SCOPE}) AS scoped),
    true,
    (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM judgements_resultlist
     WHERE project_id = %(project)s));
"""

QUEUE_SQL = f"""
WITH pairs AS (
    SELECT hit.query_id, hit.document_id FROM judgements_hit hit
    WHERE hit.query_id IN ({SCOPE})
      AND hit.rank <= (SELECT pool_depth FROM judgements_project WHERE id = %(project)s)
    UNION
    SELECT query_id, document_id FROM judgements_queuerequest
    WHERE query_id IN ({SCOPE})
    UNION
    SELECT query_id, document_id FROM judgements_queuepair
    WHERE query_id IN ({SCOPE})
)
SELECT judgements_queue_repool(
    coalesce(array_agg(query_id ORDER BY query_id, document_id), '{{}}'),
    coalesce(array_agg(document_id ORDER BY query_id, document_id), '{{}}'))
FROM pairs;
"""


@contextmanager
def deferred():
    """Skip the derived tables' triggers on judgements, hits and pair grades until the
    block ends (or the transaction does); follow with ``rebuild()`` in the same
    transaction. An exception leaves the setting to the rollback."""
    if not connection.in_atomic_block:
        raise RuntimeError("deferred() must run inside a transaction, with the rebuild")
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL {SETTING} = 'on'")
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL {SETTING} = 'off'")


PARTS = {"pair grades": PAIR_GRADES_SQL, "summaries": SUMMARIES_SQL, "pool": QUEUE_SQL}

# Queries per rebuild statement: their pairs' arrays stay small enough to plan quickly
# and to sort in memory, and each batch locks only its own rows.
BATCH_QUERIES = 2000


def rebuild(project_id: int, query_ids=None) -> dict[str, float]:
    """Recompute the pair grades, packed summaries and pool of ``query_ids`` (all the
    project's queries when None) from the log, the hits and the requests.

    The same functions the triggers run, over batches of queries in id order, each in
    the triggers' order (pair grades, then the summaries that read them, then the pool),
    so they lock rows in the order grading does. Returns the seconds each part took.
    """
    if query_ids is None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM judgements_query WHERE project_id = %s ORDER BY id", [project_id]
            )
            query_ids = [query for (query,) in cursor.fetchall()]
    query_ids = sorted(query_ids)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s, true), current_setting('work_mem')", [SETTING])
        before, work_mem = cursor.fetchone()
        # The triggers that follow pair grades run once below, not per statement.
        cursor.execute(f"SET LOCAL {SETTING} = 'on'")
        cursor.execute("SET LOCAL work_mem = '64MB'")
        seconds = dict.fromkeys(PARTS, 0.0)
        for start in range(0, len(query_ids), BATCH_QUERIES):
            params = {"project": project_id, "queries": query_ids[start : start + BATCH_QUERIES]}
            for part, statement in PARTS.items():
                started = time.perf_counter()
                cursor.execute(statement, params)
                seconds[part] += time.perf_counter() - started
        cursor.execute(
            "SELECT set_config(%s, %s, true), set_config('work_mem', %s, true)",
            [SETTING, before or "off", work_mem],
        )
    return seconds


TALLIES_SQL = """
LOCK TABLE judgements_queuepooltally, judgements_queueratertally IN SHARE ROW EXCLUSIVE MODE;
DELETE FROM judgements_queuepooltally WHERE project_id = %(project)s;
INSERT INTO judgements_queuepooltally (project_id, open_pairs)
SELECT project_id, count(*) FROM judgements_queuepair
WHERE project_id = %(project)s AND needed > 0
GROUP BY project_id;
DELETE FROM judgements_queueratertally WHERE project_id = %(project)s;
INSERT INTO judgements_queueratertally
    (project_id, rater_id, answered, answered_open, day, answered_on_day)
SELECT pair.project_id, rater.id::bigint, count(*), count(*) FILTER (WHERE pair.needed > 0),
       (now() AT TIME ZONE 'UTC')::date,
       count(*) FILTER (WHERE rater.day::date = (now() AT TIME ZONE 'UTC')::date)
FROM judgements_queuepair pair
CROSS JOIN LATERAL jsonb_each_text(pair.answered) AS rater (id, day)
WHERE pair.project_id = %(project)s
GROUP BY pair.project_id, rater.id::bigint
ORDER BY pair.project_id, rater.id::bigint;
"""

LATEST_POINTS_SQL = """
DELETE FROM metrics_latestmetricpoint
WHERE result_list_id IN (SELECT id FROM judgements_resultlist WHERE project_id = %(project)s);
INSERT INTO metrics_latestmetricpoint
    (result_list_id, query_id, metric, as_of, value, dcg, idcg, judged, retrieved,
     judgements, zero_idcg)
SELECT DISTINCT ON (result_list_id, metric, query_id)
       result_list_id, query_id, metric, as_of, value, dcg, idcg, judged, retrieved,
       judgements, zero_idcg
FROM metrics_metricpoint
WHERE query_id IS NOT NULL
  AND result_list_id IN (SELECT id FROM judgements_resultlist WHERE project_id = %(project)s)
ORDER BY result_list_id, metric, query_id, as_of DESC, id DESC;
"""


@transaction.atomic
def repair(project_id: int) -> None:
    """``rebuild()`` the whole project, then count its tallies again from the pool, copy
    its newest stored metric points again and recount the revisions of its queries
    not marked stale: every derived table ``derived_state --check`` compares."""
    from judgements.packed import packed_fill
    from metrics.models import StaleQuery
    from metrics.revisions import revisions_recount

    rebuild(project_id)
    packed_fill(project_id)
    with connection.cursor() as cursor:
        cursor.execute(TALLIES_SQL, {"project": project_id})
        cursor.execute(LATEST_POINTS_SQL, {"project": project_id})
        cursor.execute("SELECT id FROM judgements_query WHERE project_id = %s", [project_id])
        queries = {query for (query,) in cursor.fetchall()}
    stale = StaleQuery.objects.filter(query__project_id=project_id).values_list("pk", flat=True)
    revisions_recount(query_ids=queries - set(stale))
