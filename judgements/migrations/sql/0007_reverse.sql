-- Frozen: 0004's three queue functions that 0007 replaced, loaded when 0007 is reversed. Written once, never edited; the current text is judgements/sql/.

CREATE OR REPLACE FUNCTION judgements_queue_recount(pair_queries bigint[], pair_documents bigint[])
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

    WITH touched AS (
        SELECT DISTINCT pair.id, pair.query_id, pair.document_id, pair.project_id
        FROM judgements_queuepair pair
        JOIN unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
            USING (query_id, document_id)
    ),
    newest AS (
        -- Each rater's newest event per touched pair: their current answer.
        SELECT DISTINCT ON (event.query_id, event.document_id, event.rater_id)
            event.query_id, event.document_id, event.rater_id, event.kind,
            (event.created_at AT TIME ZONE 'UTC')::date AS day
        FROM judgements_judgement event
        JOIN touched USING (query_id, document_id)
        ORDER BY event.query_id, event.document_id, event.rater_id,
                 event.created_at DESC, event.id DESC
    ),
    counted AS (
        SELECT touched.id, touched.project_id,
               count(newest.kind) FILTER (WHERE newest.kind = 'grade') AS grades,
               coalesce(
                   jsonb_object_agg(newest.rater_id, newest.day)
                       FILTER (WHERE newest.kind IN ('grade', 'cant_tell')),
                   '{}') AS answered
        FROM touched
        LEFT JOIN newest USING (query_id, document_id)
        GROUP BY touched.id, touched.project_id
    )
    UPDATE judgements_queuepair pair
    SET grades = counted.grades,
        needed = project.judges_per_pair - counted.grades,
        answered = counted.answered
    FROM counted
    JOIN judgements_project project ON project.id = counted.project_id
    WHERE pair.id = counted.id
      AND (pair.grades, pair.needed, pair.answered) IS DISTINCT FROM
          (counted.grades, project.judges_per_pair - counted.grades, counted.answered);
END $$;
CREATE OR REPLACE FUNCTION judgements_queue_repool(pair_queries bigint[], pair_documents bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WITH touched AS (
        SELECT DISTINCT query_id, document_id
        FROM unnest(pair_queries, pair_documents) AS changed (query_id, document_id)
    ),
    pooled AS (
        -- The best rank of each touched pair within its project's pool depth.
        SELECT run.project_id, hit.query_id, hit.document_id, min(hit.rank) AS best_rank
        FROM touched
        JOIN judgements_hit hit USING (query_id, document_id)
        JOIN judgements_resultlist run ON run.id = hit.result_list_id
        JOIN judgements_project project ON project.id = run.project_id
        WHERE hit.rank <= project.pool_depth
        GROUP BY run.project_id, hit.query_id, hit.document_id
    ),
    left_pool AS (
        DELETE FROM judgements_queuepair pair
        USING touched
        WHERE pair.query_id = touched.query_id AND pair.document_id = touched.document_id
          AND NOT EXISTS (
              SELECT FROM pooled
              WHERE pooled.query_id = pair.query_id AND pooled.document_id = pair.document_id)
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
        (project_id, query_id, document_id, best_rank, grades, needed, answered)
    SELECT pooled.project_id, pooled.query_id, pooled.document_id, pooled.best_rank,
           0, project.judges_per_pair, '{}'::jsonb
    FROM pooled
    JOIN judgements_project project ON project.id = pooled.project_id
    ORDER BY pooled.query_id, pooled.document_id
    ON CONFLICT (query_id, document_id) DO UPDATE
    SET best_rank = EXCLUDED.best_rank
    WHERE judgements_queuepair.best_rank <> EXCLUDED.best_rank;

    -- A pair may have been judged before it joined the pool.
    PERFORM judgements_queue_recount(pair_queries, pair_documents);
END $$;
CREATE OR REPLACE FUNCTION judgements_queue_project_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pair_queries bigint[];
    pair_documents bigint[];
BEGIN
    IF NEW.judges_per_pair <> OLD.judges_per_pair THEN
        UPDATE judgements_queuepair SET needed = NEW.judges_per_pair - grades
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
