-- Frozen: pair_grades.sql as migration 0023 left it (a pair that has a row is counted
-- once, not also for the insert). Written once, never edited.

-- A rater's current answer, and judgements_pairgrade: per judged pair, its current grades
-- (sorted, with the rater of each in an aligned array), how many, the lowest and the
-- highest, so that "the grades now" is one indexed read instead of a DISTINCT ON over the
-- whole log. No consensus policy's rule lives in SQL: metrics.core.consensus turns these
-- arrays into consensus grades (judgements/packed.py for the packed rows). Kept by
-- statement triggers on judgements_judgement, fired ALWAYS so that bulk loads running
-- with session_replication_role = replica keep it current too.
--
-- Concurrency: a pair's row is inserted, or else locked, before its grades are counted
-- in a new statement (a new snapshot under READ COMMITTED), so two writers of the same
-- pair wait for each other and the second counts the first's events. Rows are written
-- and locked in (query, document) order, as the queue's rows are, and these triggers
-- fire before the queue's (trigger names sort "pair_" before "queue_").
-- Origin: migration 0005; arrays instead of per-policy columns since 0019; a pair that
-- has a row counted once, not also for the insert, since 0023.
-- Bulk loads skip these triggers (SET LOCAL judgements.defer_derived = on, the WHEN of
-- each trigger) and rebuild the project once, set-based, in judgements/derived/rebuild.py
-- (one sort of its log, no per-pair probe). Deferral: migration 0021.

-- The one rule for "a rater's current answer": each rater's newest event on a pair, by
-- created_at then id, read per pair through judgement_latest_idx. Machine judges' events
-- (source 'machine', judgements.machine) are no rater's answer: they enter no human
-- number (pair grades, queue slots), and their consensus is computed in numpy from the
-- log when a dashboard asks for machine or both grades. The ORM's twin is
-- Judgement.objects.current() (judgements/querysets.py). Machine rule: migration 0022.
CREATE OR REPLACE FUNCTION judgements_current_answers(pair_queries bigint[], pair_documents bigint[])
 RETURNS TABLE(query_id bigint, document_id bigint, rater_id integer, kind character varying, grade smallint, created_at timestamp with time zone)
 LANGUAGE sql
 STABLE
AS $$
    SELECT touched.query_id, touched.document_id, newest.rater_id, newest.kind, newest.grade,
           newest.created_at
    FROM (
        SELECT DISTINCT changed.query_id, changed.document_id
        FROM unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
    ) AS touched
    CROSS JOIN LATERAL (
        SELECT DISTINCT ON (event.rater_id)
            event.rater_id, event.kind, event.grade, event.created_at
        FROM judgements_judgement event
        WHERE event.query_id = touched.query_id AND event.document_id = touched.document_id
          AND event.source <> 'machine'
        ORDER BY event.rater_id, event.created_at DESC, event.id DESC
    ) AS newest
$$;

CREATE OR REPLACE FUNCTION judgements_pair_grades_counted(pair_queries bigint[], pair_documents bigint[])
 RETURNS TABLE(query_id bigint, document_id bigint, graded integer, lowest smallint, highest smallint, grades smallint[], raters integer[])
 LANGUAGE sql
 STABLE
AS $$
    WITH touched AS (
        SELECT DISTINCT changed.query_id, changed.document_id
        FROM unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
    ),
    aggregated AS (
        SELECT touched.query_id, touched.document_id,
               coalesce(array_agg(answer.grade ORDER BY answer.grade, answer.rater_id)
                        FILTER (WHERE answer.kind = 'grade'), '{}') AS grades,
               coalesce(array_agg(answer.rater_id ORDER BY answer.grade, answer.rater_id)
                        FILTER (WHERE answer.kind = 'grade'), '{}') AS raters
        FROM touched
        -- Per pair (an index probe each), as the queue's recount asks.
        LEFT JOIN LATERAL judgements_current_answers(
            ARRAY[touched.query_id], ARRAY[touched.document_id]) AS answer ON true
        GROUP BY touched.query_id, touched.document_id
    )
    SELECT query_id, document_id, cardinality(grades), grades[1],
           grades[cardinality(grades)], grades, raters
    FROM aggregated
$$;

CREATE OR REPLACE FUNCTION judgements_pair_grades_recount(pair_queries bigint[], pair_documents bigint[], add_missing boolean)
 RETURNS void
 LANGUAGE plpgsql
AS $$
DECLARE
    added_queries bigint[] := '{}';
    added_documents bigint[] := '{}';
BEGIN
    IF add_missing THEN
        -- Pairs without a row get one, counted now (only they: the others are counted
        -- once, below). A writer racing on the same new pair waits here for this insert
        -- and then recounts below, after this commits.
        WITH missing AS (
            SELECT array_agg(changed.query_id) AS queries,
                   array_agg(changed.document_id) AS documents
            FROM unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
            WHERE NOT EXISTS (
                SELECT FROM judgements_pairgrade pair
                WHERE pair.query_id = changed.query_id
                  AND pair.document_id = changed.document_id)
        ),
        added AS (
            INSERT INTO judgements_pairgrade AS pair
                (project_id, query_id, document_id, graded, lowest, highest, grades, raters)
            SELECT query.project_id, counted.query_id, counted.document_id, counted.graded,
                   counted.lowest, counted.highest, counted.grades, counted.raters
            FROM missing
            CROSS JOIN LATERAL judgements_pair_grades_counted(missing.queries, missing.documents)
                AS counted
            JOIN judgements_query query ON query.id = counted.query_id
            ORDER BY counted.query_id, counted.document_id
            ON CONFLICT (query_id, document_id) DO NOTHING
            RETURNING pair.query_id, pair.document_id
        )
        SELECT coalesce(array_agg(added.query_id), '{}'),
               coalesce(array_agg(added.document_id), '{}')
        INTO added_queries, added_documents
        FROM added;
    END IF;

    -- The other pairs already had a row: lock them in a fixed order, then count.
    SELECT coalesce(array_agg(query_id), '{}'), coalesce(array_agg(document_id), '{}')
    INTO pair_queries, pair_documents
    FROM (
        SELECT query_id, document_id FROM unnest(pair_queries, pair_documents)
            AS changed (query_id, document_id)
        EXCEPT
        SELECT query_id, document_id FROM unnest(added_queries, added_documents)
            AS added (query_id, document_id)
    ) AS existing;
    IF cardinality(pair_queries) = 0 THEN
        RETURN;
    END IF;
    PERFORM 1
    FROM judgements_pairgrade pair
    JOIN unnest(pair_queries, pair_documents) AS existing (query_id, document_id)
        USING (query_id, document_id)
    ORDER BY pair.query_id, pair.document_id
    FOR UPDATE OF pair;

    UPDATE judgements_pairgrade pair
    SET graded = counted.graded, lowest = counted.lowest, highest = counted.highest,
        grades = counted.grades, raters = counted.raters
    FROM judgements_pair_grades_counted(pair_queries, pair_documents) counted
    WHERE pair.query_id = counted.query_id AND pair.document_id = counted.document_id
      AND (pair.graded, pair.grades, pair.raters)
          IS DISTINCT FROM (counted.graded, counted.grades, counted.raters);
END $$;

CREATE OR REPLACE FUNCTION judgements_pair_grades_added()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
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

CREATE OR REPLACE FUNCTION judgements_pair_grades_removed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
BEGIN
    SELECT array_agg(pair.query_id), array_agg(pair.document_id)
    INTO pair_queries, pair_documents
    FROM judgements_pairgrade pair
    WHERE (pair.query_id, pair.document_id) IN (
        SELECT query_id, document_id FROM removed_judgements);
    IF pair_queries IS NOT NULL THEN
        PERFORM judgements_pair_grades_recount(pair_queries, pair_documents, false);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER pair_grades_judgements_added
    AFTER INSERT ON judgements_judgement
    REFERENCING NEW TABLE AS added_judgements
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_pair_grades_added();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER pair_grades_judgements_added;

CREATE OR REPLACE TRIGGER pair_grades_judgements_removed
    AFTER DELETE ON judgements_judgement
    REFERENCING OLD TABLE AS removed_judgements
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_pair_grades_removed();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER pair_grades_judgements_removed;
