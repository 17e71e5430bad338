-- Frozen: pair_grades.sql and queue.sql as migration 0022 left them (machine judges'
-- events are no rater's current answer). Written once, never edited.

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
-- Origin: migration 0005; arrays instead of per-policy columns since 0019.
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
        -- Pairs without a row get one, counted now. A writer racing on the same new pair
        -- waits here for this insert and then recounts below, after this commits.
        WITH added AS (
            INSERT INTO judgements_pairgrade AS pair
                (project_id, query_id, document_id, graded, lowest, highest, grades, raters)
            SELECT query.project_id, counted.query_id, counted.document_id, counted.graded,
                   counted.lowest, counted.highest, counted.grades, counted.raters
            FROM judgements_pair_grades_counted(pair_queries, pair_documents) counted
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
-- The rating queue's pool (judgements_queuepair): the pairs in the top pool_depth hits of
-- any result list of a project, or asked for by an analyst (judgements_queuerequest),
-- with each pair's count of current grades and who answered it when. Statement triggers
-- on hits, judgements, requests and projects keep it in step, fired ALWAYS.
-- Origin: migrations 0004 (pool), 0007 (requests) and 0009 (linear in the pairs touched).
-- Bulk loads skip these triggers (SET LOCAL judgements.defer_derived = on, the WHEN of
-- each trigger) and rebuild the project once, set-based, in judgements/derived/rebuild.py
-- (one sort of its log, no per-pair probe). Deferral: migration 0021.
-- Machine judges' events take no rater's slot (judgements_current_answers leaves them
-- out): migration 0022.

CREATE OR REPLACE FUNCTION judgements_queue_recount(pair_queries bigint[], pair_documents bigint[])
 RETURNS void
 LANGUAGE plpgsql
AS $$
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
                   jsonb_object_agg(newest.rater_id, (newest.created_at AT TIME ZONE 'UTC')::date)
                       FILTER (WHERE newest.kind IN ('grade', 'cant_tell')),
                   '{}') AS answered,
               coalesce((
                   SELECT max(request.wanted) FROM judgements_queuerequest request
                   WHERE request.query_id = touched.query_id
                     AND request.document_id = touched.document_id), 0) AS wanted
        FROM touched
        -- Each rater's current answer on the pair (judgements/sql/pair_grades.sql), asked
        -- per pair: an index probe each, where a join with the whole arrays' answers may
        -- be planned as a nested loop over them (their row counts are unknown).
        LEFT JOIN LATERAL judgements_current_answers(
            ARRAY[touched.query_id], ARRAY[touched.document_id]) AS newest ON true
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

CREATE OR REPLACE FUNCTION judgements_queue_repool(pair_queries bigint[], pair_documents bigint[])
 RETURNS void
 LANGUAGE plpgsql
AS $$
BEGIN
    WITH touched AS (
        SELECT DISTINCT query_id, document_id
        FROM unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
    ),
    pooled AS (
        -- The best rank of each touched pair within its project's pool depth, or at any
        -- depth for a pair an analyst asked more grades for.
        SELECT run.project_id, hit.query_id, hit.document_id, min(hit.rank) AS best_rank
        FROM touched
        JOIN judgements_hit hit USING (query_id, document_id)
        JOIN judgements_resultlist run ON run.id = hit.result_list_id
        JOIN judgements_project project ON project.id = run.project_id
        WHERE hit.rank <= project.pool_depth
           OR EXISTS (SELECT FROM judgements_queuerequest request
                      WHERE request.query_id = hit.query_id
                        AND request.document_id = hit.document_id)
        GROUP BY run.project_id, hit.query_id, hit.document_id
    ),
    left_pool AS (
        DELETE FROM judgements_queuepair pair
        USING touched
        WHERE pair.query_id = touched.query_id AND pair.document_id = touched.document_id
          AND NOT EXISTS (
              SELECT FROM judgements_hit hit
              JOIN judgements_resultlist run ON run.id = hit.result_list_id
              JOIN judgements_project project ON project.id = run.project_id
              WHERE hit.query_id = pair.query_id AND hit.document_id = pair.document_id
                AND (hit.rank <= project.pool_depth
                     OR EXISTS (SELECT FROM judgements_queuerequest request
                                WHERE request.query_id = hit.query_id
                                  AND request.document_id = hit.document_id)))
        RETURNING pair.query_id, pair.document_id
    ),
    released AS (
        -- Leases on pairs that left the pool go too, so that deleting a project's hits
        -- leaves nothing behind that refers to its queries.
        DELETE FROM judgements_queuelease lease
        USING left_pool
        WHERE lease.query_id = left_pool.query_id AND lease.document_id = left_pool.document_id
    )
    INSERT INTO judgements_queuepair
        (project_id, query_id, document_id, best_rank, grades, needed, answered, wanted)
    SELECT pooled.project_id, pooled.query_id, pooled.document_id, pooled.best_rank,
           0, project.judges_per_pair, '{}'::jsonb, 0
    FROM pooled
    JOIN judgements_project project ON project.id = pooled.project_id
    ORDER BY pooled.query_id, pooled.document_id
    ON CONFLICT (query_id, document_id) DO UPDATE
    SET best_rank = EXCLUDED.best_rank
    WHERE judgements_queuepair.best_rank <> EXCLUDED.best_rank;

    -- A pair may have been judged before it joined the pool.
    PERFORM judgements_queue_recount(pair_queries, pair_documents);
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_hits_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
BEGIN
    -- One aggregate pass keeps the two arrays in the same row order.
    SELECT array_agg(query_id), array_agg(document_id) INTO pair_queries, pair_documents
    FROM changed_hits
    WHERE rank <= (SELECT max(pool_depth) FROM judgements_project);
    IF pair_queries IS NOT NULL THEN
        PERFORM judgements_queue_repool(pair_queries, pair_documents);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_hits_moved()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
BEGIN
    SELECT array_agg(query_id), array_agg(document_id) INTO pair_queries, pair_documents
    FROM (SELECT query_id, document_id FROM old_hits
          UNION SELECT query_id, document_id FROM new_hits) AS moved;
    IF pair_queries IS NOT NULL THEN
        PERFORM judgements_queue_repool(pair_queries, pair_documents);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_judgements_added()
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
        PERFORM judgements_queue_recount(pair_queries, pair_documents);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_requests_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
BEGIN
    SELECT array_agg(query_id), array_agg(document_id) INTO pair_queries, pair_documents
    FROM (SELECT DISTINCT query_id, document_id FROM changed_requests) AS changed;
    IF pair_queries IS NOT NULL THEN
        PERFORM judgements_queue_repool(pair_queries, pair_documents);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_project_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
BEGIN
    IF NEW.judges_per_pair <> OLD.judges_per_pair THEN
        UPDATE judgements_queuepair
        SET needed = greatest(NEW.judges_per_pair, wanted) - grades
        WHERE project_id = NEW.id;
    END IF;
    IF NEW.pool_depth <> OLD.pool_depth THEN
        SELECT array_agg(hit.query_id), array_agg(hit.document_id)
        INTO pair_queries, pair_documents
        FROM judgements_hit hit
        JOIN judgements_resultlist run ON run.id = hit.result_list_id
        WHERE run.project_id = NEW.id
          AND hit.rank <= GREATEST(NEW.pool_depth, OLD.pool_depth);
        IF pair_queries IS NOT NULL THEN
            PERFORM judgements_queue_repool(pair_queries, pair_documents);
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER queue_hits_deleted
    AFTER DELETE ON judgements_hit
    REFERENCING OLD TABLE AS changed_hits
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_queue_hits_changed();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER queue_hits_deleted;

CREATE OR REPLACE TRIGGER queue_hits_inserted
    AFTER INSERT ON judgements_hit
    REFERENCING NEW TABLE AS changed_hits
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_queue_hits_changed();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER queue_hits_inserted;

CREATE OR REPLACE TRIGGER queue_hits_updated
    AFTER UPDATE ON judgements_hit
    REFERENCING OLD TABLE AS old_hits NEW TABLE AS new_hits
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_queue_hits_moved();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER queue_hits_updated;

CREATE OR REPLACE TRIGGER queue_judgements_added
    AFTER INSERT ON judgements_judgement
    REFERENCING NEW TABLE AS added_judgements
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_queue_judgements_added();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER queue_judgements_added;

CREATE OR REPLACE TRIGGER queue_project_changed
    AFTER UPDATE OF pool_depth, judges_per_pair ON judgements_project
    FOR EACH ROW
    WHEN (((old.pool_depth <> new.pool_depth) OR (old.judges_per_pair <> new.judges_per_pair)))
    EXECUTE FUNCTION judgements_queue_project_changed();
ALTER TABLE judgements_project ENABLE ALWAYS TRIGGER queue_project_changed;

CREATE OR REPLACE TRIGGER queue_requests_added
    AFTER INSERT ON judgements_queuerequest
    REFERENCING NEW TABLE AS changed_requests
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_queue_requests_changed();
ALTER TABLE judgements_queuerequest ENABLE ALWAYS TRIGGER queue_requests_added;

CREATE OR REPLACE TRIGGER queue_requests_removed
    AFTER DELETE ON judgements_queuerequest
    REFERENCING OLD TABLE AS changed_requests
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_queue_requests_changed();
ALTER TABLE judgements_queuerequest ENABLE ALWAYS TRIGGER queue_requests_removed;
