"""Bulk loads without per-statement triggers, and one set-based rebuild of a project.

The triggers of ``judgements/sql/`` recount the derived tables after every statement on
judgements, hits and pair grades, probing an index per pair touched: right for a grade
or an upload, a cliff for a load of millions of rows. Inside ``deferred()`` those
triggers do nothing (their WHEN reads ``judgements.defer_derived``, set with SET LOCAL
so that it ends with the transaction); ``rebuild()`` then recomputes the project's pair
grades and pool in a few whole-table statements (one sort of its log, hash joins), with
no per-pair probe, ON CONFLICT or row lock, and its packed summaries with the
triggers' own function over all its queries, which is set-based already.

That is only right while nobody else writes the project: a load's new project inside
its own transaction, or ``repair()``, which first locks the log, the hits, the requests
and the projects against writers (graders then wait for it, and none of their
statements can interleave). The triggers on the pool (the tallies), on analysts'
requests and on projects still fire.
"""

import time
from contextlib import contextmanager

from django.db import connection, transaction

SETTING = "judgements.defer_derived"

# Each rater's current answer on each pair of the project: the rule of
# judgements_current_answers() (judgements/sql/pair_grades.sql), newest event by
# created_at then id, machine judges' events left out, spelled over the whole project at
# once as one sort of its log instead of an index probe per pair.
# tests/judgements/test_rebuild.py holds the two to the same answers.
ANSWERS_SQL = """
CREATE TEMPORARY TABLE rebuild_answers ON COMMIT DROP AS
SELECT DISTINCT ON (event.query_id, event.document_id, event.rater_id)
       event.query_id, event.document_id, event.rater_id, event.kind, event.grade,
       event.created_at
FROM judgements_judgement event
WHERE event.query_id IN (SELECT id FROM judgements_query WHERE project_id = %(project)s)
  AND event.source <> 'machine'
ORDER BY event.query_id, event.document_id, event.rater_id, event.created_at DESC,
         event.id DESC;
ANALYZE rebuild_answers;
"""


def made_equal(table: str, counted: str, columns: tuple[str, ...], scope: str = "") -> str:
    """Statements that make the project's rows of ``table``, keyed by (query, document),
    equal to those of the temporary table ``counted``: rows it lacks deleted, stale ones
    updated, missing ones added in key order. With ``scope`` (a table of query_id and
    document_id), only the rows of its pairs are deleted."""
    values = ", ".join(f"counted.{column}" for column in columns)
    in_scope = (
        f"\n  AND (derived.query_id, derived.document_id) IN"
        f" (SELECT query_id, document_id FROM {scope})"
        if scope
        else ""
    )
    return f"""
DELETE FROM {table} derived
WHERE derived.project_id = %(project)s{in_scope}
  AND NOT EXISTS (
      SELECT FROM {counted} counted
      WHERE counted.query_id = derived.query_id AND counted.document_id = derived.document_id);
UPDATE {table} derived
SET {", ".join(f"{column} = counted.{column}" for column in columns)}
FROM {counted} counted
WHERE derived.project_id = %(project)s
  AND derived.query_id = counted.query_id AND derived.document_id = counted.document_id
  AND ({", ".join(f"derived.{column}" for column in columns)}) IS DISTINCT FROM ({values});
INSERT INTO {table} (project_id, query_id, document_id, {", ".join(columns)})
SELECT %(project)s, counted.query_id, counted.document_id, {values}
FROM {counted} counted
WHERE NOT EXISTS (
    SELECT FROM {table} derived
    WHERE derived.query_id = counted.query_id AND derived.document_id = counted.document_id)
ORDER BY counted.query_id, counted.document_id;
"""


# judgements_pair_grades_counted() over every pair with an event, then the project's
# rows made equal to it.
PAIR_GRADES_COUNTED_SQL = """
CREATE TEMPORARY TABLE rebuild_pair_grades ON COMMIT DROP AS
SELECT query_id, document_id, cardinality(grades) AS graded, grades[1] AS lowest,
       grades[cardinality(grades)] AS highest, grades, raters
FROM (
    SELECT query_id, document_id,
           coalesce(array_agg(grade ORDER BY grade, rater_id) FILTER (WHERE kind = 'grade'),
                    '{}') AS grades,
           coalesce(array_agg(rater_id ORDER BY grade, rater_id)
                        FILTER (WHERE kind = 'grade'), '{}') AS raters
    FROM rebuild_answers
    GROUP BY query_id, document_id
) AS aggregated;
"""
PAIR_GRADE_COLUMNS = ("graded", "lowest", "highest", "grades", "raters")
PAIR_GRADES_SQL = PAIR_GRADES_COUNTED_SQL + made_equal(
    "judgements_pairgrade", "rebuild_pair_grades", PAIR_GRADE_COLUMNS
)

# The triggers' own function, over every query and result list of the project: it is
# set-based already (one aggregate over the hits, one over the pair grades). It adds
# missing rows with their project; rows that name another one are repaired first.
SUMMARIES_SQL = """
UPDATE judgements_querygrades summary SET project_id = query.project_id
FROM judgements_query query
WHERE query.project_id = %(project)s AND summary.query_id = query.id
  AND summary.project_id <> query.project_id;
SELECT judgements_grade_summaries_refresh(
    (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM judgements_query
     WHERE project_id = %(project)s),
    true,
    (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM judgements_resultlist
     WHERE project_id = %(project)s));
"""

# A pool pair's count of current grades and who answered it on which day, from its
# rows of rebuild_answers (joined as "answer"): judgements_queue_recount()'s rule.
POOL_COUNTS = """count(answer.kind) FILTER (WHERE answer.kind = 'grade') AS grades,
           coalesce(
               jsonb_object_agg(answer.rater_id, (answer.created_at AT TIME ZONE 'UTC')::date)
                   FILTER (WHERE answer.kind IN ('grade', 'cant_tell')),
               '{}') AS answered"""

# judgements_queue_repool() and judgements_queue_recount() over the whole project: the
# pairs in the top pool_depth hits of any list, or at any depth when an analyst asked
# for more grades, each with its best rank, its count of current grades, who answered
# it on which day and the most grades asked for.
QUEUE_SQL = """
CREATE TEMPORARY TABLE rebuild_pool ON COMMIT DROP AS
WITH requested AS (
    SELECT query_id, document_id, max(wanted) AS wanted
    FROM judgements_queuerequest
    WHERE project_id = %(project)s
    GROUP BY query_id, document_id
),
candidates AS (
    -- Filtered on rank as the hits are read, so that only the pool's few are grouped.
    SELECT hit.query_id, hit.document_id, hit.rank
    FROM judgements_hit hit
    JOIN judgements_resultlist run ON run.id = hit.result_list_id
    WHERE run.project_id = %(project)s
      AND hit.rank <= (SELECT pool_depth FROM judgements_project WHERE id = %(project)s)
    UNION ALL
    SELECT hit.query_id, hit.document_id, hit.rank
    FROM requested
    JOIN judgements_hit hit USING (query_id, document_id)
),
pooled AS (
    SELECT candidates.query_id, candidates.document_id, min(candidates.rank) AS best_rank,
           coalesce(max(requested.wanted), 0) AS wanted
    FROM candidates
    LEFT JOIN requested USING (query_id, document_id)
    GROUP BY candidates.query_id, candidates.document_id
),
counted AS (
    SELECT pooled.query_id, pooled.document_id,
           {POOL_COUNTS}
    FROM pooled
    LEFT JOIN rebuild_answers answer USING (query_id, document_id)
    GROUP BY pooled.query_id, pooled.document_id
)
SELECT pooled.query_id, pooled.document_id, pooled.best_rank, counted.grades,
       greatest(project.judges_per_pair, pooled.wanted) - counted.grades AS needed,
       counted.answered, pooled.wanted
FROM pooled
JOIN counted USING (query_id, document_id)
CROSS JOIN judgements_project project
WHERE project.id = %(project)s;
-- Leases on pairs that leave the pool go with them, as judgements_queue_repool() does.
DELETE FROM judgements_queuelease lease
USING judgements_queuepair pair
WHERE pair.project_id = %(project)s
  AND lease.query_id = pair.query_id AND lease.document_id = pair.document_id
  AND NOT EXISTS (
      SELECT FROM rebuild_pool pool
      WHERE pool.query_id = pair.query_id AND pool.document_id = pair.document_id);
""" + made_equal(
    "judgements_queuepair",
    "rebuild_pool",
    ("best_rank", "grades", "needed", "answered", "wanted"),
)
QUEUE_SQL = QUEUE_SQL.replace("{POOL_COUNTS}", POOL_COUNTS)

CLEAN_UP_SQL = "DROP TABLE rebuild_answers, rebuild_pair_grades, rebuild_pool;"


@contextmanager
def deferred():
    """Skip the derived tables' triggers on judgements, hits and pair grades until the
    block ends (or the transaction does); follow with ``rebuild()`` in the same
    transaction. A block inside another leaves them skipped when it ends. An exception
    leaves the setting to the rollback."""
    if not connection.in_atomic_block:
        raise RuntimeError("deferred() must run inside a transaction, with the rebuild")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT current_setting('{SETTING}', true)")
        (before,) = cursor.fetchone()
        cursor.execute(f"SET LOCAL {SETTING} = 'on'")
    yield
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config(%s, %s, true)", [SETTING, before or "off"])


def is_deferred() -> bool:
    """Whether the derived tables' triggers are skipped now (inside ``deferred()``)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT current_setting('{SETTING}', true)")
        return cursor.fetchone()[0] == "on"


# The triggers' own function over every query of the project (judgements/sql/query_log.sql).
QUERY_LOG_SQL = """
SELECT judgements_query_log_refresh(
    (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM judgements_query
     WHERE project_id = %(project)s),
    true);
"""

# In the triggers' order: the log's current answers, the pair grades that read them, the
# summaries that read the pair grades, the packed log, then the pool.
PARTS = {
    "current answers": ANSWERS_SQL,
    "pair grades": PAIR_GRADES_SQL,
    "summaries": SUMMARIES_SQL,
    "query log": QUERY_LOG_SQL,
    "pool": QUEUE_SQL,
}


def rebuild(project_id: int) -> dict[str, float]:
    """Recompute the pair grades, packed summaries, packed log and pool of a project nobody else is
    writing (see the module's docstring) from its log, hits and requests.

    Returns the seconds each part took.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s, true), current_setting('work_mem')", [SETTING])
        before, work_mem = cursor.fetchone()
        # The triggers that follow pair grades run once below, not per statement; the
        # sorts and hashes of a million-event project stay in memory.
        cursor.execute(f"SET LOCAL {SETTING} = 'on'")
        cursor.execute("SET LOCAL work_mem = '256MB'")
        seconds = {}
        for part, statement in PARTS.items():
            started = time.perf_counter()
            cursor.execute(statement, {"project": project_id})
            seconds[part] = time.perf_counter() - started
        cursor.execute(CLEAN_UP_SQL)
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

# Each query's newest human event (judgements/sql/query_activity.sql), from the log.
ACTIVITY_SQL = """
DELETE FROM judgements_queryactivity
WHERE project_id = %(project)s
   OR query_id IN (SELECT id FROM judgements_query WHERE project_id = %(project)s);
INSERT INTO judgements_queryactivity (query_id, project_id, newest)
SELECT event.query_id, %(project)s, max(event.created_at)
FROM judgements_judgement event
WHERE event.query_id IN (SELECT id FROM judgements_query WHERE project_id = %(project)s)
  AND event.source <> 'machine'
GROUP BY event.query_id
ORDER BY event.query_id;
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


# Stale marks of the project's queries that name another project, and marks that name
# the project for another project's query, named right.
MARK_PROJECTS_SQL = """
UPDATE metrics_stalequery mark SET project_id = query.project_id
FROM judgements_query query
WHERE mark.query_id = query.id AND mark.project_id <> query.project_id
  AND (query.project_id = %(project)s OR mark.project_id = %(project)s)
"""


@transaction.atomic
def repair(project_id: int) -> None:
    """``rebuild()`` the whole project, then count its tallies again from the pool, its
    queries' newest events from the log, copy its newest stored metric points again and
    recount the revisions of its queries not marked stale: every derived table
    ``derived_state --check`` compares."""
    from judgements.packed import packed_fill
    from metrics.models import StaleQuery
    from metrics.revisions import revisions_recount

    with connection.cursor() as cursor:
        # Graders, uploads, analysts' requests and settings changes wait for the repair
        # (rebuild() is right only while nobody writes what it reads).
        cursor.execute(
            "LOCK TABLE judgements_judgement, judgements_hit, judgements_queuerequest,"
            " judgements_project IN SHARE MODE"
        )
    rebuild(project_id)
    packed_fill(project_id)
    with connection.cursor() as cursor:
        cursor.execute(TALLIES_SQL, {"project": project_id})
        cursor.execute(ACTIVITY_SQL, {"project": project_id})
        cursor.execute(LATEST_POINTS_SQL, {"project": project_id})
        cursor.execute("SELECT id FROM judgements_query WHERE project_id = %s", [project_id])
        queries = {query for (query,) in cursor.fetchall()}
        cursor.execute(MARK_PROJECTS_SQL, {"project": project_id})
    stale = StaleQuery.objects.filter(project_id=project_id).values_list("pk", flat=True)
    revisions_recount(query_ids=queries - set(stale))
