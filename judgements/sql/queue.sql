-- The rating queue's pool (judgements_queuepair): the pairs in the top pool_depth hits of
-- any result list of a project, or asked for by an analyst (judgements_queuerequest),
-- with each pair's count of current grades and who answered it when. Statement triggers
-- on hits, judgements, requests and projects keep it in step, fired ALWAYS.
-- Origin: migrations 0004 (pool), 0007 (requests) and 0009 (linear in the pairs touched).
-- Bulk loads skip these triggers (SET LOCAL judgements.defer_derived = on, the WHEN of
-- each trigger) and rebuild the project once, set-based, in judgements/derived/rebuild.py
-- (one sort of its log, no per-pair probe). Deferral: migration 0021.
-- Machine judges' events take no rater's slot (judgements_current_answers leaves them
-- out): migration 0022. One upsert adds pairs (judgements_queue_pool_upsert), and a hit
-- recounts only the pairs it brings into the pool: 0039.

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

CREATE OR REPLACE FUNCTION judgements_queue_pool_upsert(
    pair_projects bigint[], pair_queries bigint[], pair_documents bigint[],
    pair_ranks integer[], improve_only boolean)
 RETURNS void
 LANGUAGE plpgsql
AS $$
DECLARE
    new_queries bigint[];
    new_documents bigint[];
BEGIN
    -- The one statement that adds pairs to the pool: each pair with its best rank
    -- (``improve_only``: the rank given replaces a worse one only, as new hits can only
    -- improve it), locked in (query, document) order. The pairs that joined are
    -- recounted, since they may have been judged before; a pair in the pool already keeps
    -- its counts, which follow the answers and requests, not the hits.
    WITH upserted AS (
        INSERT INTO judgements_queuepair
            (project_id, query_id, document_id, best_rank, grades, needed, answered, wanted)
        SELECT pooled.project_id, pooled.query_id, pooled.document_id, pooled.best_rank,
               0, project.judges_per_pair, '{}'::jsonb, 0
        FROM unnest(pair_projects, pair_queries, pair_documents, pair_ranks)
            AS pooled (project_id, query_id, document_id, best_rank)
        JOIN judgements_project project ON project.id = pooled.project_id
        ORDER BY pooled.query_id, pooled.document_id
        ON CONFLICT (query_id, document_id) DO UPDATE
        SET best_rank = EXCLUDED.best_rank
        WHERE judgements_queuepair.best_rank > EXCLUDED.best_rank
           OR (NOT improve_only AND judgements_queuepair.best_rank <> EXCLUDED.best_rank)
        -- xmax is 0 on a row this statement inserted, not on one it updated.
        RETURNING query_id, document_id, xmax = 0 AS inserted
    )
    SELECT array_agg(query_id) FILTER (WHERE inserted),
           array_agg(document_id) FILTER (WHERE inserted)
    INTO new_queries, new_documents
    FROM upserted;
    IF new_queries IS NOT NULL THEN
        PERFORM judgements_queue_recount(new_queries, new_documents);
    END IF;
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_repool(pair_queries bigint[], pair_documents bigint[])
 RETURNS void
 LANGUAGE plpgsql
AS $$
DECLARE
    pool_projects bigint[];
    pool_queries bigint[];
    pool_documents bigint[];
    pool_ranks integer[];
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
    SELECT array_agg(project_id), array_agg(query_id), array_agg(document_id),
           array_agg(best_rank)
    INTO pool_projects, pool_queries, pool_documents, pool_ranks
    FROM pooled;
    IF pool_queries IS NOT NULL THEN
        PERFORM judgements_queue_pool_upsert(
            pool_projects, pool_queries, pool_documents, pool_ranks, false);
    END IF;
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_hits_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
    pool_projects bigint[];
    pool_ranks integer[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- New hits only add to the pool: a pair joins it, or its best rank improves, so
        -- the new hits alone say how (no other list's hits are read again).
        SELECT array_agg(project_id), array_agg(query_id), array_agg(document_id),
               array_agg(best_rank)
        INTO pool_projects, pair_queries, pair_documents, pool_ranks
        FROM (
            SELECT run.project_id, hit.query_id, hit.document_id, min(hit.rank) AS best_rank
            FROM changed_hits hit
            JOIN judgements_resultlist run ON run.id = hit.result_list_id
            JOIN judgements_project project ON project.id = run.project_id
            WHERE hit.rank <= project.pool_depth
               OR EXISTS (SELECT FROM judgements_queuerequest request
                          WHERE request.query_id = hit.query_id
                            AND request.document_id = hit.document_id)
            GROUP BY run.project_id, hit.query_id, hit.document_id
        ) AS pooled;
        IF pair_queries IS NOT NULL THEN
            PERFORM judgements_queue_pool_upsert(
                pool_projects, pair_queries, pair_documents, pool_ranks, true);
        END IF;
        RETURN NULL;
    END IF;
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
        -- A request changes what its pair wants, in the pool already or not.
        PERFORM judgements_queue_recount(pair_queries, pair_documents);
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
