-- What NDCG reads, packed (judgements_querygrades, judgements_rankedhits,
-- judgements_rankedgrades): per result list and query, one row with the hits' documents
-- in rank order (rankedhits), and per consensus policy one row with each hit's grade in
-- rank order and the query's judged grades highest first as levels (rankedgrades).
-- Triggers on judgements_pairgrade and judgements_hit keep the documents and each
-- query's totals, and mark the query stale (judgements_querygrades.stale); the
-- per-policy rows are then filled in numpy by judgements.packed, so that no consensus
-- policy's rule lives in SQL. Fired ALWAYS.
--
-- Concurrency: every writer first locks the query's judgements_querygrades row (added
-- first when a new pair or hit needs one) in query order, then recomputes in a new
-- statement, so a writer that waited counts what the other committed; the fill takes
-- the same locks. Hits' triggers sort before "queue_hits_" so that an import locks
-- summaries before the queue, as grading does. Origin: migration 0008; marking instead
-- of per-policy SQL since 0019.
-- Bulk loads skip these triggers (SET LOCAL judgements.defer_derived = on, the WHEN of
-- each trigger) and rebuild the project once, set-based, in judgements/derived/rebuild.py
-- (one sort of its log, no per-pair probe). Deferral: migration 0021.

CREATE OR REPLACE FUNCTION judgements_grade_summaries_refresh(changed_queries bigint[], add_missing boolean, changed_lists bigint[])
 RETURNS void
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
AS $$
BEGIN
    IF add_missing THEN
        INSERT INTO judgements_querygrades (query_id, project_id, graded, judged)
        SELECT query.id, query.project_id, 0, 0
        FROM judgements_query query
        WHERE query.id = ANY(changed_queries)
        ORDER BY query.id
        ON CONFLICT (query_id) DO NOTHING;
    END IF;
    SELECT coalesce(array_agg(locked.query_id), '{}') INTO changed_queries
    FROM (
        SELECT summary.query_id FROM judgements_querygrades summary
        WHERE summary.query_id = ANY(changed_queries)
        ORDER BY summary.query_id
        FOR UPDATE
    ) AS locked;
    IF cardinality(changed_queries) = 0 THEN
        RETURN;
    END IF;

    -- With changed_lists, those lists' hits of the queries changed; without, grades did.
    IF changed_lists IS NOT NULL THEN
        DELETE FROM judgements_rankedhits ranked
        WHERE ranked.query_id = ANY(changed_queries)
          AND ranked.result_list_id = ANY(changed_lists)
          AND NOT EXISTS (
              SELECT FROM judgements_hit hit
              WHERE hit.result_list_id = ranked.result_list_id
                AND hit.query_id = ranked.query_id);
        DELETE FROM judgements_rankedgrades ranked
        WHERE ranked.query_id = ANY(changed_queries)
          AND ranked.result_list_id = ANY(changed_lists)
          AND NOT EXISTS (
              SELECT FROM judgements_hit hit
              WHERE hit.result_list_id = ranked.result_list_id
                AND hit.query_id = ranked.query_id);
        -- One statement each: an insert's NOT EXISTS sees the rows as they were before
        -- it, which the update changes but never adds to.
        WITH counted AS (
            SELECT hit.result_list_id, hit.query_id, count(*)::integer AS hits,
                   string_agg(int8send(hit.document_id), ''::bytea ORDER BY hit.rank)
                       AS documents
            FROM judgements_hit hit
            WHERE hit.query_id = ANY(changed_queries)
              AND hit.result_list_id = ANY(changed_lists)
            GROUP BY hit.result_list_id, hit.query_id
        ),
        updated AS (
            UPDATE judgements_rankedhits ranked
            SET hits = counted.hits, documents = counted.documents
            FROM counted
            WHERE ranked.result_list_id = counted.result_list_id
              AND ranked.query_id = counted.query_id
              AND (ranked.hits, ranked.documents)
                  IS DISTINCT FROM (counted.hits, counted.documents)
        )
        INSERT INTO judgements_rankedhits (result_list_id, query_id, hits, documents)
        SELECT counted.result_list_id, counted.query_id, counted.hits, counted.documents
        FROM counted
        WHERE add_missing
          AND NOT EXISTS (
              SELECT FROM judgements_rankedhits ranked
              WHERE ranked.result_list_id = counted.result_list_id
                AND ranked.query_id = counted.query_id)
        ORDER BY counted.result_list_id, counted.query_id;
    END IF;

    -- The totals are counted here; the packed grades under each consensus policy are
    -- only marked stale, and judgements.packed fills them in numpy (metrics.core.consensus)
    -- before they are read, holding this row's lock as these writers do.
    WITH totals AS (
        SELECT locked.query_id,
               coalesce(sum(pair.graded), 0)::integer AS graded,
               count(pair.query_id)::integer AS judged
        FROM unnest(changed_queries) AS locked (query_id)
        LEFT JOIN judgements_pairgrade pair
            ON pair.query_id = locked.query_id AND pair.graded > 0
        GROUP BY locked.query_id
    )
    UPDATE judgements_querygrades summary
    SET graded = totals.graded, judged = totals.judged, stale = true
    FROM totals
    WHERE summary.query_id = totals.query_id
      AND (summary.graded, summary.judged, summary.stale)
          IS DISTINCT FROM (totals.graded, totals.judged, true);
END $$;

CREATE OR REPLACE FUNCTION judgements_grade_summaries_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
DECLARE
    changed_queries bigint[];
    changed_lists bigint[];
    hits boolean := TG_TABLE_NAME = 'judgements_hit';
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT query_id) INTO changed_queries FROM new_rows;
        IF hits THEN
            SELECT array_agg(DISTINCT result_list_id) INTO changed_lists FROM new_rows;
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT query_id) INTO changed_queries FROM old_rows;
        IF hits THEN
            SELECT array_agg(DISTINCT result_list_id) INTO changed_lists FROM old_rows;
        END IF;
    ELSE
        SELECT array_agg(query_id) INTO changed_queries
        FROM (SELECT query_id FROM old_rows UNION SELECT query_id FROM new_rows) AS both_sides;
        IF hits THEN
            SELECT array_agg(result_list_id) INTO changed_lists
            FROM (SELECT result_list_id FROM old_rows
                  UNION SELECT result_list_id FROM new_rows) AS both_sides;
        END IF;
    END IF;
    IF changed_queries IS NOT NULL THEN
        PERFORM judgements_grade_summaries_refresh(
            changed_queries, TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND hits), changed_lists);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER grade_summaries_hit_delete
    AFTER DELETE ON judgements_hit
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER grade_summaries_hit_delete;

CREATE OR REPLACE TRIGGER grade_summaries_hit_insert
    AFTER INSERT ON judgements_hit
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER grade_summaries_hit_insert;

CREATE OR REPLACE TRIGGER grade_summaries_hit_update
    AFTER UPDATE ON judgements_hit
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER grade_summaries_hit_update;

CREATE OR REPLACE TRIGGER grade_summaries_pairgrade_delete
    AFTER DELETE ON judgements_pairgrade
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_pairgrade ENABLE ALWAYS TRIGGER grade_summaries_pairgrade_delete;

CREATE OR REPLACE TRIGGER grade_summaries_pairgrade_insert
    AFTER INSERT ON judgements_pairgrade
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_pairgrade ENABLE ALWAYS TRIGGER grade_summaries_pairgrade_insert;

CREATE OR REPLACE TRIGGER grade_summaries_pairgrade_update
    AFTER UPDATE ON judgements_pairgrade
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_pairgrade ENABLE ALWAYS TRIGGER grade_summaries_pairgrade_update;
