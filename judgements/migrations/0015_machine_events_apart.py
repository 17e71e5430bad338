"""Machine judges' events stay out of every number humans' grades make (issue 17, phase A).

A machine judge (the machinejudges app) records its answers as judgement events of
source "machine". Until a project lets certified judges into the consensus (phase B),
those events must change nothing that human grades make: pair grades and their
consensus (judgements_pairgrade), the packed grades kept from them, and the queue's
slot counts (judgements_queuepair, its tallies). The rule is one predicate,
``source <> 'machine'``, in the two functions that find each rater's current answer
(judgements_pair_grades_counted of 0005, judgements_queue_recount of 0009), so that
a recount never counts a machine's answer, and in the two insert triggers that start
them, so that an insert of machine events alone touches no derived table (and takes
none of the locks human grading waits on). Python's copy of the rule is
``judgements.querysets.HUMAN_EVENT_SQL`` and ``JudgementQuerySet.human()``.

Each function is given whole, as the database holds it (pg_get_functiondef), forward
and back; nothing is patched by string replacement.
"""

from django.db import migrations, models

MACHINE_EVENTS_APART = """
CREATE OR REPLACE FUNCTION judgements_pair_grades_counted(
    pair_queries bigint[], pair_documents bigint[])
RETURNS TABLE (query_id bigint, document_id bigint, graded integer,
               lowest smallint, highest smallint, mean double precision, median double precision,
               majority double precision, quepid double precision)
LANGUAGE sql STABLE AS $$
    WITH touched AS (
        SELECT DISTINCT changed.query_id, changed.document_id
        FROM unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
    ),
    newest AS (
        -- Each human rater's newest event per touched pair: their current answer.
        SELECT DISTINCT ON (event.query_id, event.document_id, event.rater_id)
            event.query_id, event.document_id, event.kind, event.grade
        FROM judgements_judgement event
        JOIN touched USING (query_id, document_id)
        WHERE event.source <> 'machine'
        ORDER BY event.query_id, event.document_id, event.rater_id,
                 event.created_at DESC, event.id DESC
    ),
    aggregated AS (
        SELECT touched.query_id, touched.document_id,
               coalesce(array_agg(newest.grade ORDER BY newest.grade)
                        FILTER (WHERE newest.kind = 'grade'), '{}') AS grades,
               sum(newest.grade) FILTER (WHERE newest.kind = 'grade') AS total,
               mode() WITHIN GROUP (ORDER BY newest.grade)
                   FILTER (WHERE newest.kind = 'grade') AS most_frequent
        FROM touched
        LEFT JOIN newest USING (query_id, document_id)
        GROUP BY touched.query_id, touched.document_id
    )
    SELECT query_id, document_id, cardinality(grades), grades[1],
           grades[cardinality(grades)],
           judgements_consensus('mean', grades, total, most_frequent),
           judgements_consensus('median', grades, total, most_frequent),
           judgements_consensus('majority', grades, total, most_frequent),
           judgements_consensus('quepid', grades, total, most_frequent)
    FROM aggregated
$$;

CREATE OR REPLACE FUNCTION judgements_queue_recount(
    pair_queries bigint[], pair_documents bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- Lock the pool rows first, in a fixed order, so that concurrent writers of the same
    -- pair wait for each other and the count below (a new snapshot) sees every commit.
    PERFORM 1
    FROM judgements_queuepair pair
    JOIN unnest(pair_queries, pair_documents) AS touched (query_id, document_id)
        USING (query_id, document_id)
    ORDER BY pair.query_id, pair.document_id
    FOR UPDATE OF pair;

    WITH touched AS MATERIALIZED (
        SELECT DISTINCT pair.id, pair.query_id, pair.document_id, pair.project_id
        FROM judgements_queuepair pair
        JOIN unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
            USING (query_id, document_id)
    ),
    counted AS (
        SELECT touched.id, touched.project_id,
               count(newest.kind) FILTER (WHERE newest.kind = 'grade') AS grades,
               coalesce(
                   jsonb_object_agg(newest.rater_id, newest.day)
                       FILTER (WHERE newest.kind IN ('grade', 'cant_tell')),
                   '{}') AS answered,
               coalesce((
                   SELECT max(request.wanted) FROM judgements_queuerequest request
                   WHERE request.query_id = touched.query_id
                     AND request.document_id = touched.document_id), 0) AS wanted
        FROM touched
        LEFT JOIN LATERAL (
            -- Each human rater's newest event on this pair: their current answer.
            SELECT DISTINCT ON (event.rater_id)
                event.kind, event.rater_id, (event.created_at AT TIME ZONE 'UTC')::date AS day
            FROM judgements_judgement event
            WHERE event.query_id = touched.query_id AND event.document_id = touched.document_id
              AND event.source <> 'machine'
            ORDER BY event.rater_id, event.created_at DESC, event.id DESC
        ) AS newest ON true
        GROUP BY touched.id, touched.project_id, touched.query_id, touched.document_id
    ),
    target AS (
        SELECT counted.*,
               greatest(project.judges_per_pair, counted.wanted) - counted.grades AS needed
        FROM counted
        JOIN judgements_project project ON project.id = counted.project_id
    )
    UPDATE judgements_queuepair pair
    SET grades = target.grades, needed = target.needed, answered = target.answered,
        wanted = target.wanted
    FROM target
    WHERE pair.id = target.id
      AND (pair.grades, pair.needed, pair.answered, pair.wanted) IS DISTINCT FROM
          (target.grades, target.needed, target.answered, target.wanted);
END $$;

CREATE OR REPLACE FUNCTION judgements_pair_grades_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
BEGIN
    SELECT array_agg(query_id), array_agg(document_id) INTO pair_queries, pair_documents
    FROM (SELECT DISTINCT query_id, document_id FROM added_judgements
          WHERE source <> 'machine') AS added;
    IF pair_queries IS NOT NULL THEN
        PERFORM judgements_pair_grades_recount(pair_queries, pair_documents, true);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_judgements_added()
RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
BEGIN
    SELECT array_agg(query_id), array_agg(document_id) INTO pair_queries, pair_documents
    FROM (SELECT DISTINCT query_id, document_id FROM added_judgements
          WHERE source <> 'machine') AS added;
    IF pair_queries IS NOT NULL THEN
        PERFORM judgements_queue_recount(pair_queries, pair_documents);
    END IF;
    RETURN NULL;
END $$;
"""

# The four functions as 0005, 0004 and 0009 left them.
EVERY_EVENT_COUNTED = """
CREATE OR REPLACE FUNCTION judgements_pair_grades_counted(
    pair_queries bigint[], pair_documents bigint[])
RETURNS TABLE (query_id bigint, document_id bigint, graded integer,
               lowest smallint, highest smallint, mean double precision, median double precision,
               majority double precision, quepid double precision)
LANGUAGE sql STABLE AS $$
    WITH touched AS (
        SELECT DISTINCT changed.query_id, changed.document_id
        FROM unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
    ),
    newest AS (
        -- Each rater's newest event per touched pair: their current answer.
        SELECT DISTINCT ON (event.query_id, event.document_id, event.rater_id)
            event.query_id, event.document_id, event.kind, event.grade
        FROM judgements_judgement event
        JOIN touched USING (query_id, document_id)
        ORDER BY event.query_id, event.document_id, event.rater_id,
                 event.created_at DESC, event.id DESC
    ),
    aggregated AS (
        SELECT touched.query_id, touched.document_id,
               coalesce(array_agg(newest.grade ORDER BY newest.grade)
                        FILTER (WHERE newest.kind = 'grade'), '{}') AS grades,
               sum(newest.grade) FILTER (WHERE newest.kind = 'grade') AS total,
               mode() WITHIN GROUP (ORDER BY newest.grade)
                   FILTER (WHERE newest.kind = 'grade') AS most_frequent
        FROM touched
        LEFT JOIN newest USING (query_id, document_id)
        GROUP BY touched.query_id, touched.document_id
    )
    SELECT query_id, document_id, cardinality(grades), grades[1],
           grades[cardinality(grades)],
           judgements_consensus('mean', grades, total, most_frequent),
           judgements_consensus('median', grades, total, most_frequent),
           judgements_consensus('majority', grades, total, most_frequent),
           judgements_consensus('quepid', grades, total, most_frequent)
    FROM aggregated
$$;

CREATE OR REPLACE FUNCTION judgements_queue_recount(
    pair_queries bigint[], pair_documents bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- Lock the pool rows first, in a fixed order, so that concurrent writers of the same
    -- pair wait for each other and the count below (a new snapshot) sees every commit.
    PERFORM 1
    FROM judgements_queuepair pair
    JOIN unnest(pair_queries, pair_documents) AS touched (query_id, document_id)
        USING (query_id, document_id)
    ORDER BY pair.query_id, pair.document_id
    FOR UPDATE OF pair;

    WITH touched AS MATERIALIZED (
        SELECT DISTINCT pair.id, pair.query_id, pair.document_id, pair.project_id
        FROM judgements_queuepair pair
        JOIN unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
            USING (query_id, document_id)
    ),
    counted AS (
        SELECT touched.id, touched.project_id,
               count(newest.kind) FILTER (WHERE newest.kind = 'grade') AS grades,
               coalesce(
                   jsonb_object_agg(newest.rater_id, newest.day)
                       FILTER (WHERE newest.kind IN ('grade', 'cant_tell')),
                   '{}') AS answered,
               coalesce((
                   SELECT max(request.wanted) FROM judgements_queuerequest request
                   WHERE request.query_id = touched.query_id
                     AND request.document_id = touched.document_id), 0) AS wanted
        FROM touched
        LEFT JOIN LATERAL (
            -- Each rater's newest event on this pair: their current answer.
            SELECT DISTINCT ON (event.rater_id)
                event.kind, event.rater_id, (event.created_at AT TIME ZONE 'UTC')::date AS day
            FROM judgements_judgement event
            WHERE event.query_id = touched.query_id AND event.document_id = touched.document_id
            ORDER BY event.rater_id, event.created_at DESC, event.id DESC
        ) AS newest ON true
        GROUP BY touched.id, touched.project_id, touched.query_id, touched.document_id
    ),
    target AS (
        SELECT counted.*,
               greatest(project.judges_per_pair, counted.wanted) - counted.grades AS needed
        FROM counted
        JOIN judgements_project project ON project.id = counted.project_id
    )
    UPDATE judgements_queuepair pair
    SET grades = target.grades, needed = target.needed, answered = target.answered,
        wanted = target.wanted
    FROM target
    WHERE pair.id = target.id
      AND (pair.grades, pair.needed, pair.answered, pair.wanted) IS DISTINCT FROM
          (target.grades, target.needed, target.answered, target.wanted);
END $$;

CREATE OR REPLACE FUNCTION judgements_pair_grades_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
BEGIN
    SELECT array_agg(query_id), array_agg(document_id) INTO pair_queries, pair_documents
    FROM (SELECT DISTINCT query_id, document_id FROM added_judgements) AS added;
    IF pair_queries IS NOT NULL THEN
        PERFORM judgements_pair_grades_recount(pair_queries, pair_documents, true);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_judgements_added()
RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
BEGIN
    SELECT array_agg(query_id), array_agg(document_id) INTO pair_queries, pair_documents
    FROM (SELECT DISTINCT query_id, document_id FROM added_judgements) AS added;
    IF pair_queries IS NOT NULL THEN
        PERFORM judgements_queue_recount(pair_queries, pair_documents);
    END IF;
    RETURN NULL;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0014_hashed_api_tokens"),
    ]

    operations = [
        migrations.AlterField(
            model_name="judgement",
            name="source",
            field=models.CharField(
                choices=[
                    ("web", "rating page"),
                    ("api", "API"),
                    ("import", "import"),
                    ("demo", "demo data"),
                    ("generated", "generated load"),
                    ("machine", "machine judge"),
                    ("overrule", "analyst's overrule of a machine grade"),
                ],
                default="web",
                max_length=16,
            ),
        ),
        # No machine event exists before this migration, so nothing needs recounting.
        migrations.RunSQL(MACHINE_EVENTS_APART, EVERY_EVENT_COUNTED),
    ]
