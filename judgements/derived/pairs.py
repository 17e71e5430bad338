"""A large insert into the log, with the pair grades, summaries and pool of the pairs it
touched refreshed once, set-based, instead of by the triggers of each statement.

The triggers of ``judgements/sql/`` read each touched pair's current answers through an
index probe and write its rows one by one: right for a grade, 45 µs a row for an import
of a million (measured: ``tests/bench/bench_export.py``). ``insert_counted`` writes
such an insert with the triggers deferred (``rebuild.deferred``) and then recounts the
pairs it names as ``rebuild.rebuild`` recounts a whole project: one sort of their events
for the current answers, then whole-table statements, restricted to those pairs.

Unlike ``rebuild.rebuild`` it is safe while raters grade the same project: it takes the
triggers' own row locks, in their order (pair grades, then packed summaries, then queue
pairs; docs/derived-state.md; a rater's grade locks its pool pair's row before them,
and so does an import of any size). The pairs' pair grades rows are locked before the insert,
so a rater who grades one of them meanwhile waits for the import and then counts it, or
the import waits for the rater and then counts the rater's grade; a pair that had no row
and gains one from a rater's grade before the import adds it is counted again with the
triggers' own function. As with the triggers, an event only changes its pair's counts:
which pairs the pool holds is kept by the hits' and requests' triggers.

A pair format's import (Quepid CSV, qrels, ...) gives one grade per pair, all of one
rater (the project's import rater) and all dated now: each pair's new current answers
are then its old ones with that rater's replaced, and the recount reads no other event
of the pairs (``graded_by``; ``DELTA_SQL``). Where that cannot be known (a pair staged
twice, which those formats refuse anyway, or an event of that rater dated after the
import's moment) the pairs are recounted from the log as above.
"""

import logging
import time
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import connection

from judgements import bulk
from judgements.derived import rebuild

logger = logging.getLogger(__name__)

# Below this many rows the insert is left to the triggers. Their cost grows with the
# rows; the recount's has a floor of a few seconds (one pass over the log's events of
# the pairs). Measured on generated-load (1M events, imports spread over its 10k
# queries, rolled back, load 3.6-3.9): 2,000 rows 1.4 s by the triggers / 5.6 s
# recounted; 10,000: 5.8 / 5.0 s; 50,000: 12.6 / 14.1 s; 200,000: 34.4 / 18.5 s.
REFRESH_ROWS = 50_000
# A pair format's import that can replace its rater's grade (DELTA_APPLIES_SQL) pays
# from fewer rows: replacing reads no event of the pairs, so it has no such floor.
# Measured on generated-load (rolled back, quiet machine, after a warm-up import, the
# two ways in turns, best of three): 1,000 rows 0.25 s by the triggers / 0.23 s
# replaced; 2,000: 0.37 / 0.32; 5,000: 0.93 / 0.90; 10,000: 1.62 / 1.46; 20,000:
# 2.23 / 1.82; 50,000: 3.48 / 2.59. Below 10,000 rows replacing saved at most 0.05 s,
# and the triggers' path, a grade's own, stays the one small imports take.
REPLACE_ROWS = 10_000

SCOPE_SQL = """
CREATE TEMPORARY TABLE refresh_scope ON COMMIT DROP AS
SELECT DISTINCT query_id, document_id FROM {staged};
ANALYZE refresh_scope;
"""

# A rater's grade locks its pool pair's row (judgements.queue.slots.pair_has_room), then
# the triggers lock its pair grades row, then packed summaries: an import takes the
# pool rows of its pairs first too, in (query, document) order, so that the two never
# wait on each other in a cycle.
QUEUE_LOCK_SQL = """
SELECT count(*) FROM (
    SELECT FROM judgements_queuepair pair
    JOIN refresh_scope scope USING (query_id, document_id)
    ORDER BY pair.query_id, pair.document_id
    FOR UPDATE OF pair
) AS locked;
"""
# As judgements_pair_grades_recount(): the pairs' rows locked in (query, document) order
# before their answers are read, so that a rater grading one of them meanwhile waits for
# the import, or the import for the rater (whose grade it then counts). Only the rows
# locked here are updated below. Their grades and raters are kept as locked (the newest,
# which nobody else can change until the import commits) for DELTA_SQL, which then
# reads no pair grades row again (2.2 against 2.5 s for 411,837 rows, generated-load).
PAIR_GRADES_LOCK_SQL = """
CREATE TEMPORARY TABLE refresh_locked ON COMMIT DROP AS
SELECT pair.id, pair.query_id, pair.document_id, pair.grades, pair.raters
FROM judgements_pairgrade pair
JOIN refresh_scope scope USING (query_id, document_id)
ORDER BY pair.query_id, pair.document_id
FOR UPDATE OF pair;
ANALYZE refresh_locked;
"""

# rebuild.ANSWERS_SQL's rule (judgements_current_answers()) over the scope's pairs.
ANSWERS_SQL = """
CREATE TEMPORARY TABLE rebuild_answers ON COMMIT DROP AS
SELECT DISTINCT ON (event.query_id, event.document_id, event.rater_id)
       event.query_id, event.document_id, event.rater_id, event.kind, event.grade,
       event.created_at
FROM judgements_judgement event
JOIN refresh_scope scope USING (query_id, document_id)
WHERE event.source <> 'machine'
ORDER BY event.query_id, event.document_id, event.rater_id, event.created_at DESC,
         event.id DESC;
ANALYZE rebuild_answers;
"""

# The packed summaries of the scope's queries, as a pair grades statement's trigger
# refreshes them (judgements_grade_summaries_changed()).
SUMMARIES_SQL = """
SELECT judgements_grade_summaries_refresh(
    (SELECT coalesce(array_agg(DISTINCT query_id), '{}') FROM refresh_scope), true, NULL);
"""

# The packed log of the scope's queries, as the events statement's trigger refreshes it
# (judgements_query_log_changed()).
QUERY_LOG_SQL = """
SELECT judgements_query_log_refresh(
    (SELECT coalesce(array_agg(DISTINCT query_id), '{}') FROM refresh_scope), true);
"""

# As judgements_queue_recount(), over the scope's pool rows (locked first).
QUEUE_SQL = """
WITH counted AS (
    SELECT pair.id, pair.query_id, pair.document_id,
           {POOL_COUNTS}
    FROM judgements_queuepair pair
    JOIN refresh_scope scope USING (query_id, document_id)
    LEFT JOIN rebuild_answers answer USING (query_id, document_id)
    GROUP BY pair.id, pair.query_id, pair.document_id
),
requested AS (
    SELECT request.query_id, request.document_id, max(request.wanted) AS wanted
    FROM judgements_queuerequest request
    JOIN refresh_scope scope USING (query_id, document_id)
    GROUP BY request.query_id, request.document_id
),
target AS (
    SELECT counted.id, counted.grades, counted.answered,
           coalesce(requested.wanted, 0) AS wanted,
           greatest(project.judges_per_pair, coalesce(requested.wanted, 0))
               - counted.grades AS needed
    FROM counted
    LEFT JOIN requested USING (query_id, document_id)
    CROSS JOIN judgements_project project
    WHERE project.id = %(project)s
)
UPDATE judgements_queuepair pair
SET grades = target.grades, needed = target.needed, answered = target.answered,
    wanted = target.wanted
FROM target
WHERE pair.id = target.id
  AND (pair.grades, pair.needed, pair.answered, pair.wanted) IS DISTINCT FROM
      (target.grades, target.needed, target.answered, target.wanted);
"""
QUEUE_SQL = QUEUE_SQL.replace("{POOL_COUNTS}", rebuild.POOL_COUNTS)


def _added_sql(missing: str) -> str:
    """The statement that adds the pair grades rows of ``missing`` (a SELECT of whole
    rows of pairs that had none when the import locked its pairs), in key order, and
    names the pairs that lost the race: a rater's trigger may add one of them first (it
    counted without this import's events, which it could not see), and
    judgements_pair_grades_recount() then locks and counts those again."""
    return f"""
WITH missing AS MATERIALIZED ({missing}),
added AS (
    INSERT INTO judgements_pairgrade
        (project_id, query_id, document_id, graded, lowest, highest, grades, raters)
    SELECT %(project)s, query_id, document_id, graded, lowest, highest, grades, raters
    FROM missing
    ORDER BY query_id, document_id
    ON CONFLICT (query_id, document_id) DO NOTHING
    RETURNING query_id, document_id
)
-- Compared only when some pair was not added (counting them costs no sort).
SELECT coalesce(array_agg(missing.query_id), '{{}}'),
       coalesce(array_agg(missing.document_id), '{{}}')
FROM missing
WHERE (SELECT count(*) FROM added) < (SELECT count(*) FROM missing)
  AND NOT EXISTS (
      SELECT FROM added
      WHERE added.query_id = missing.query_id AND added.document_id = missing.document_id);
"""


# rebuild's count of the scope's pair grades; the rows locked above updated, then the
# pairs that had none added.
PAIR_GRADES_SQL = (
    rebuild.PAIR_GRADES_COUNTED_SQL
    + """
UPDATE judgements_pairgrade pair
SET graded = counted.graded, lowest = counted.lowest, highest = counted.highest,
    grades = counted.grades, raters = counted.raters
FROM refresh_locked locked
JOIN rebuild_pair_grades counted USING (query_id, document_id)
WHERE pair.id = locked.id
  AND (pair.graded, pair.grades, pair.raters)
      IS DISTINCT FROM (counted.graded, counted.grades, counted.raters);"""
    + _added_sql("""
    SELECT counted.* FROM rebuild_pair_grades counted
    WHERE NOT EXISTS (
        SELECT FROM refresh_locked locked
        WHERE locked.query_id = counted.query_id AND locked.document_id = counted.document_id)
""")
)
RECOUNT_SQL = "SELECT judgements_pair_grades_recount(%s, %s, false)"

# Whether a pair format's import can take its pairs' new current answers as their old
# ones with the rater's replaced: one staged row per pair, and no event of the rater dated
# after the import's moment (which would stay that rater's current answer).
DELTA_APPLIES_SQL = """
SELECT (SELECT count(*) FROM refresh_scope) = %(rows)s
   AND NOT EXISTS (SELECT FROM judgements_judgement event
                   WHERE event.rater_id = %(rater)s AND event.created_at > %(moment)s)
"""
# The locked pair grades rows (refresh_locked) with the rater's grade replaced by the
# staged one, in the (grade, rater) order of judgements_pair_grades_counted(); then the
# pairs that had no row (no human event, so the staged grade is their only one) added.
# {staged} is the staging table's name.
DELTA_SQL = """
UPDATE judgements_pairgrade pair
SET grades = counted.grades, raters = counted.raters, graded = cardinality(counted.grades),
    lowest = counted.grades[1], highest = counted.grades[cardinality(counted.grades)]
FROM (
    SELECT locked.id,
           array_agg(answer.grade ORDER BY answer.grade, answer.rater) AS grades,
           array_agg(answer.rater ORDER BY answer.grade, answer.rater) AS raters
    FROM refresh_locked locked
    JOIN {staged} staged
        ON staged.query_id = locked.query_id AND staged.document_id = locked.document_id
    CROSS JOIN LATERAL (
        SELECT kept.grade, kept.rater
        FROM unnest(locked.grades, locked.raters) AS kept (grade, rater)
        WHERE kept.rater <> %(rater)s
        UNION ALL
        SELECT staged.grade, %(rater)s::int
    ) AS answer
    GROUP BY locked.id
) AS counted
WHERE pair.id = counted.id;""" + _added_sql("""
    SELECT staged.query_id, staged.document_id, 1 AS graded, staged.grade AS lowest,
           staged.grade AS highest, ARRAY[staged.grade] AS grades,
           ARRAY[%(rater)s::int] AS raters
    FROM {staged} staged
    WHERE NOT EXISTS (
        SELECT FROM refresh_locked locked
        WHERE locked.query_id = staged.query_id AND locked.document_id = staged.document_id)
""")
# The scope's pool rows (locked first) with the pair grades' new count and the rater's
# answer dated the import's day: judgements_queue_recount()'s rule, since the rater's
# grade is the only answer that changed.
DELTA_QUEUE_SQL = """
UPDATE judgements_queuepair pair
SET grades = counted.graded,
    needed = greatest(project.judges_per_pair, pair.wanted) - counted.graded,
    answered = pair.answered
        || jsonb_build_object(%(rater)s::text, (%(moment)s AT TIME ZONE 'UTC')::date)
FROM judgements_pairgrade counted
JOIN refresh_scope scope USING (query_id, document_id)
CROSS JOIN judgements_project project
WHERE project.id = %(project)s
  AND pair.query_id = counted.query_id AND pair.document_id = counted.document_id;
"""
DELTA_CLEAN_UP_SQL = "DROP TABLE refresh_scope, refresh_locked;"

CLEAN_UP_SQL = "DROP TABLE refresh_scope, refresh_locked, rebuild_answers, rebuild_pair_grades;"


def insert_counted(project_id: int, staged: str, insert, rows: int, graded_by=None) -> int:
    """Run ``insert()``, which appends ``rows`` events on the pairs of the table ``staged``
    (query_id and document_id columns) and returns how many it added, with the pool rows
    of those pairs locked first; a large insert with the derived tables' triggers
    deferred, its pairs then refreshed at once. Inside ``rebuild.deferred()`` the
    insert is left to the caller's rebuild. Call inside the insert's transaction.

    ``graded_by`` (rater id, moment) says that every event is a grade of that rater
    dated that moment, the grade in ``staged``'s grade column (a pair format's import):
    the refresh then replaces that rater's answer (see the module's docstring)."""
    if rebuild.is_deferred():
        return insert()
    with connection.cursor() as cursor:
        with step("pairs named"):
            cursor.execute(SCOPE_SQL.format(staged=staged))
        with step("pool rows locked"):
            cursor.execute(QUEUE_LOCK_SQL)
        if _left_to_the_triggers(cursor, rows, graded_by):
            inserted = insert()
            cursor.execute("DROP TABLE refresh_scope")
            return inserted
    return _insert_refreshed(project_id, staged, insert, rows, graded_by)


# Each step of a large import as it is named while it runs (a job's page shows it, after
# "Writing to the database: "), by the name it is logged with when it has run.
STEPS = {
    "pairs named": "naming the pairs",
    "pool rows locked": "locking their rating pool rows",
    "pair grades rows locked": "locking their grades",
    "events inserted": "inserting the judgements",
    "current answers read": "reading every rater's current answers",
    "pair grades counted": "counting each pair's grades",
    "pairs a rater added meanwhile recounted": "counting again the pairs a rater graded meanwhile",
    "summaries refreshed": "counting each query's grades",
    "packed log refreshed": "packing each query's events",
    "pool counted": "counting the rating pool",
}
# Told each step's stage as it starts, inside ``stages_told``.
step_started: ContextVar[Callable[[str], None] | None] = ContextVar("step_started", default=None)


@contextmanager
def stages_told(listener: Callable[[str], None]):
    """In the block, call ``listener`` with each step's stage as it starts ("Writing to
    the database: counting each pair's grades"): a million rows spend some twenty
    seconds in these steps, past the file's end (a job's page and import_judgements
    show them)."""
    told = step_started.set(listener)
    try:
        yield
    finally:
        step_started.reset(told)


@contextmanager
def step(name: str):
    """Log how long the block took at INFO, the step's name and seconds as the record's
    ``step`` and ``seconds`` (a large import's phases: what its time went on); tell
    ``stages_told``'s listener, if any, first."""
    listener = step_started.get()
    if listener is not None:
        # A step missing from STEPS is named as logged, not a failed import.
        listener(f"Writing to the database: {STEPS.get(name, name)}")
    started = time.perf_counter()
    yield
    seconds = time.perf_counter() - started
    logger.info("%s in %.2f s", name, seconds, extra={"step": name, "seconds": seconds})


def _left_to_the_triggers(cursor, rows: int, graded_by) -> bool:
    """Whether an insert of ``rows`` is too small for the set-based refresh to pay: below
    REFRESH_ROWS, unless it can replace its rater's grade and has REPLACE_ROWS. Asked
    before the pair grades rows are locked, so ``_insert_refreshed`` asks again after:
    if an event of the rater dated later came in between, the pairs are counted again
    from the log, slower but the same rows."""
    if rows >= REFRESH_ROWS:
        return False
    return rows < REPLACE_ROWS or not _can_replace(cursor, rows, graded_by)


def _can_replace(cursor, rows: int, graded_by) -> bool:
    """DELTA_APPLIES_SQL's answer for an insert ``graded_by`` one rater at one moment
    (False for any other insert)."""
    if graded_by is None:
        return False
    rater, moment = graded_by
    cursor.execute(DELTA_APPLIES_SQL, {"rater": rater, "moment": moment, "rows": rows})
    [replacing] = cursor.fetchone()
    return replacing


def _insert_refreshed(project_id: int, staged: str, insert, rows: int, graded_by) -> int:
    parameters = {"project": project_id}
    with rebuild.deferred(), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('work_mem')")
        (work_mem,) = cursor.fetchone()
        cursor.execute("SET LOCAL work_mem = '256MB'")
        with step("pair grades rows locked"):
            cursor.execute(PAIR_GRADES_LOCK_SQL)
        replacing = _can_replace(cursor, rows, graded_by)
        with step("events inserted"):
            inserted = insert()
        if replacing:
            parameters |= {"rater": graded_by[0], "moment": graded_by[1]}
            counted = DELTA_SQL.replace("{staged}", staged)
            queue = DELTA_QUEUE_SQL
        else:
            with step("current answers read"):
                cursor.execute(ANSWERS_SQL)
            counted, queue = PAIR_GRADES_SQL, QUEUE_SQL
        # The new rows' foreign keys are the events' own, which the insert locked (see
        # judgements.staging); checking each at COMMIT would cost seconds a million.
        skipped = bulk.skip_foreign_key_checks()
        with step("pair grades counted"):
            cursor.execute(counted, parameters)
            queries, documents = cursor.fetchone()
        if skipped:
            cursor.execute("SET LOCAL session_replication_role = origin")
        if queries:
            with step("pairs a rater added meanwhile recounted"):
                cursor.execute(RECOUNT_SQL, [queries, documents])
        with step("summaries refreshed"):
            cursor.execute(SUMMARIES_SQL, parameters)
        with step("packed log refreshed"):
            cursor.execute(QUERY_LOG_SQL, parameters)
        with step("pool counted"):
            cursor.execute(queue, parameters)
        cursor.execute(DELTA_CLEAN_UP_SQL if replacing else CLEAN_UP_SQL)
        cursor.execute("SELECT set_config('work_mem', %s, true)", [work_mem])
    return inserted
