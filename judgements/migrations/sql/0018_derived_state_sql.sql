-- Frozen: every function and trigger as judgements/sql/ held them at migration 0018.
-- Written once, never edited; the current text is judgements/sql/.

-- The judgement log is append-only: an UPDATE of an event is refused, whatever code
-- sends it (a BEFORE trigger; DELETE stays possible so that a query, a document or a
-- project can go with its events). Origin: migration 0002.

CREATE OR REPLACE FUNCTION judgements_refuse_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'judgements are append-only: add a new event instead of updating %',
        OLD.id USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE OR REPLACE TRIGGER judgement_append_only
    BEFORE UPDATE ON judgements_judgement
    FOR EACH ROW
    EXECUTE FUNCTION judgements_refuse_update();

-- judgements_pairgrade: per judged pair, how many current grades it has, the lowest and
-- highest, and the consensus under each policy, so that "the grades now" is one indexed
-- read instead of a DISTINCT ON over the whole log. Kept by statement triggers on
-- judgements_judgement, fired ALWAYS so that bulk loads running with
-- session_replication_role = replica keep it current too.
--
-- Concurrency: a pair's row is inserted, or else locked, before its grades are counted
-- in a new statement (a new snapshot under READ COMMITTED), so two writers of the same
-- pair wait for each other and the second counts the first's events. Rows are written
-- and locked in (query, document) order, as the queue's rows are, and these triggers
-- fire before the queue's (trigger names sort "pair_" before "queue_").
-- Origin: migration 0005.

CREATE OR REPLACE FUNCTION judgements_consensus(policy text, sorted_grades smallint[], total bigint, most_frequent smallint)
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN policy NOT IN ('mean', 'median', 'majority', 'quepid')
            THEN ('unknown consensus policy: ' || policy)::double precision
        WHEN coalesce(cardinality(sorted_grades), 0) = 0 THEN NULL
        -- Quepid's rule is the mean under 3 grades, else the third-highest grade.
        WHEN policy = 'mean' OR (policy = 'quepid' AND cardinality(sorted_grades) < 3)
            THEN total::double precision / cardinality(sorted_grades)
        WHEN policy = 'median'
            THEN (sorted_grades[(cardinality(sorted_grades) + 1) / 2]::integer
                  + sorted_grades[cardinality(sorted_grades) / 2 + 1])::double precision / 2
        WHEN policy = 'quepid'
            THEN sorted_grades[cardinality(sorted_grades) - 2]::double precision
        ELSE most_frequent::double precision
    END
$$;

CREATE OR REPLACE FUNCTION judgements_pair_grades_counted(pair_queries bigint[], pair_documents bigint[])
 RETURNS TABLE(query_id bigint, document_id bigint, graded integer, lowest smallint, highest smallint, mean double precision, median double precision, majority double precision, quepid double precision)
 LANGUAGE sql
 STABLE
AS $$
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
                (project_id, query_id, document_id, graded, lowest, highest,
                 mean, median, majority, quepid)
            SELECT query.project_id, counted.query_id, counted.document_id, counted.graded,
                   counted.lowest, counted.highest, counted.mean, counted.median,
                   counted.majority, counted.quepid
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
        mean = counted.mean, median = counted.median, majority = counted.majority,
        quepid = counted.quepid
    FROM judgements_pair_grades_counted(pair_queries, pair_documents) counted
    WHERE pair.query_id = counted.query_id AND pair.document_id = counted.document_id
      AND (pair.graded, pair.lowest, pair.highest, pair.mean, pair.median, pair.majority,
           pair.quepid)
          IS DISTINCT FROM (counted.graded, counted.lowest, counted.highest, counted.mean,
                            counted.median, counted.majority, counted.quepid);
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
    FROM (SELECT DISTINCT query_id, document_id FROM added_judgements) AS added;
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
    EXECUTE FUNCTION judgements_pair_grades_added();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER pair_grades_judgements_added;

CREATE OR REPLACE TRIGGER pair_grades_judgements_removed
    AFTER DELETE ON judgements_judgement
    REFERENCING OLD TABLE AS removed_judgements
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_pair_grades_removed();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER pair_grades_judgements_removed;

-- What NDCG reads, packed (judgements_querygrades, judgements_rankedhits,
-- judgements_rankedgrades): per result list, query and consensus policy, one row with
-- each hit's grade in rank order and the query's judged grades highest first as levels.
-- Triggers on judgements_pairgrade and judgements_hit recompute the rows of the queries a
-- statement touched, fired ALWAYS.
--
-- Concurrency: every writer first locks the query's judgements_querygrades row (added
-- first when a new pair or hit needs one) in query order, then recomputes in a new
-- statement, so a writer that waited counts what the other committed. Hits' triggers sort
-- before "queue_hits_" so that an import locks summaries before the queue, as grading
-- does. Origin: migration 0008.

CREATE OR REPLACE FUNCTION judgements_grade_summaries_refresh(changed_queries bigint[], add_missing boolean, changed_lists bigint[])
 RETURNS void
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
AS $$
BEGIN
    IF add_missing THEN
        INSERT INTO judgements_querygrades (query_id, graded, judged)
        SELECT query.id, 0, 0
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

    WITH ranked AS (
        SELECT hit.result_list_id, hit.query_id,
               string_agg(float8send(coalesce(pair.mean, 'NaN')), ''::bytea ORDER BY hit.rank) AS mean,
               string_agg(float8send(coalesce(pair.median, 'NaN')), ''::bytea ORDER BY hit.rank) AS median,
               string_agg(float8send(coalesce(pair.majority, 'NaN')), ''::bytea ORDER BY hit.rank) AS majority,
               string_agg(float8send(coalesce(pair.quepid, 'NaN')), ''::bytea ORDER BY hit.rank) AS quepid
        FROM judgements_hit hit
        LEFT JOIN judgements_pairgrade pair
            ON pair.query_id = hit.query_id AND pair.document_id = hit.document_id
           AND pair.graded > 0
        WHERE hit.query_id = ANY(changed_queries)
          AND (changed_lists IS NULL OR hit.result_list_id = ANY(changed_lists))
        GROUP BY hit.result_list_id, hit.query_id
    ),
    totals AS (
        SELECT locked.query_id,
               coalesce(sum(pair.graded), 0)::integer AS graded,
               count(pair.query_id)::integer AS judged
        FROM unnest(changed_queries) AS locked (query_id)
        LEFT JOIN judgements_pairgrade pair
            ON pair.query_id = locked.query_id AND pair.graded > 0
        GROUP BY locked.query_id
    ),
    -- The ideal as levels: each distinct consensus grade, highest first, and how many
    -- judged documents have it. Far shorter than every grade, and numpy's repeat gives
    -- back every grade exactly.
    levels AS (
        SELECT pair.query_id, policy.name AS policy, policy.grade, count(*)::integer AS documents
        FROM judgements_pairgrade pair
        CROSS JOIN LATERAL (VALUES
            ('mean', pair.mean),
            ('median', pair.median),
            ('majority', pair.majority),
            ('quepid', pair.quepid)
        ) AS policy (name, grade)
        WHERE pair.query_id = ANY(changed_queries) AND pair.graded > 0
        GROUP BY pair.query_id, policy.name, policy.grade
    ),
    ideal AS (
        SELECT levels.query_id, levels.policy,
               string_agg(float8send(levels.grade), ''::bytea ORDER BY levels.grade DESC)
                   AS grades,
               string_agg(int4send(levels.documents), ''::bytea ORDER BY levels.grade DESC)
                   AS documents
        FROM levels
        GROUP BY levels.query_id, levels.policy
    ),
    counted AS (
        SELECT ranked.result_list_id, ranked.query_id, policy.name AS policy, totals.graded,
               policy.ranked, coalesce(ideal.grades, '') AS ideal,
               coalesce(ideal.documents, '') AS ideal_documents
        FROM ranked
        JOIN totals USING (query_id)
        CROSS JOIN LATERAL (VALUES
            ('mean', ranked.mean),
            ('median', ranked.median),
            ('majority', ranked.majority),
            ('quepid', ranked.quepid)
        ) AS policy (name, ranked)
        LEFT JOIN ideal ON ideal.query_id = ranked.query_id AND ideal.policy = policy.name
    ),
    summary_updated AS (
        UPDATE judgements_querygrades summary
        SET graded = totals.graded, judged = totals.judged
        FROM totals
        WHERE summary.query_id = totals.query_id
          AND (summary.graded, summary.judged) IS DISTINCT FROM (totals.graded, totals.judged)
    ),
    updated AS (
        UPDATE judgements_rankedgrades grades
        SET graded = counted.graded, ranked = counted.ranked, ideal = counted.ideal,
            ideal_documents = counted.ideal_documents
        FROM counted
        WHERE grades.result_list_id = counted.result_list_id
          AND grades.query_id = counted.query_id AND grades.policy = counted.policy
          AND (grades.graded, grades.ranked, grades.ideal, grades.ideal_documents)
              IS DISTINCT FROM (counted.graded, counted.ranked, counted.ideal,
                                counted.ideal_documents)
    )
    INSERT INTO judgements_rankedgrades
        (result_list_id, query_id, policy, graded, ranked, ideal, ideal_documents)
    SELECT counted.result_list_id, counted.query_id, counted.policy, counted.graded,
           counted.ranked, counted.ideal, counted.ideal_documents
    FROM counted
    WHERE add_missing
      AND NOT EXISTS (
          SELECT FROM judgements_rankedgrades grades
          WHERE grades.result_list_id = counted.result_list_id
            AND grades.query_id = counted.query_id AND grades.policy = counted.policy)
    ORDER BY counted.result_list_id, counted.policy, counted.query_id;
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
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER grade_summaries_hit_delete;

CREATE OR REPLACE TRIGGER grade_summaries_hit_insert
    AFTER INSERT ON judgements_hit
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER grade_summaries_hit_insert;

CREATE OR REPLACE TRIGGER grade_summaries_hit_update
    AFTER UPDATE ON judgements_hit
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER grade_summaries_hit_update;

CREATE OR REPLACE TRIGGER grade_summaries_pairgrade_delete
    AFTER DELETE ON judgements_pairgrade
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_pairgrade ENABLE ALWAYS TRIGGER grade_summaries_pairgrade_delete;

CREATE OR REPLACE TRIGGER grade_summaries_pairgrade_insert
    AFTER INSERT ON judgements_pairgrade
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_pairgrade ENABLE ALWAYS TRIGGER grade_summaries_pairgrade_insert;

CREATE OR REPLACE TRIGGER grade_summaries_pairgrade_update
    AFTER UPDATE ON judgements_pairgrade
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE judgements_pairgrade ENABLE ALWAYS TRIGGER grade_summaries_pairgrade_update;

-- The rating queue's pool (judgements_queuepair): the pairs in the top pool_depth hits of
-- any result list of a project, or asked for by an analyst (judgements_queuerequest),
-- with each pair's count of current grades and who answered it when. Statement triggers
-- on hits, judgements, requests and projects keep it in step, fired ALWAYS.
-- Origin: migrations 0004 (pool), 0007 (requests) and 0009 (linear in the pairs touched).

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
    FROM (SELECT DISTINCT query_id, document_id FROM added_judgements) AS added;
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
    EXECUTE FUNCTION judgements_queue_hits_changed();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER queue_hits_deleted;

CREATE OR REPLACE TRIGGER queue_hits_inserted
    AFTER INSERT ON judgements_hit
    REFERENCING NEW TABLE AS changed_hits
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_queue_hits_changed();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER queue_hits_inserted;

CREATE OR REPLACE TRIGGER queue_hits_updated
    AFTER UPDATE ON judgements_hit
    REFERENCING OLD TABLE AS old_hits NEW TABLE AS new_hits
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_queue_hits_moved();
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER queue_hits_updated;

CREATE OR REPLACE TRIGGER queue_judgements_added
    AFTER INSERT ON judgements_judgement
    REFERENCING NEW TABLE AS added_judgements
    FOR EACH STATEMENT
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

-- The progress bar's counts (judgements_queuepooltally, judgements_queueratertally):
-- open pairs per project, and per rater the pool pairs they answered, how many of those
-- are still open, and how many they answered today (UTC). Each change to a pool row adds
-- its new state and takes away its old one, so the tallies stay exact. Rows are upserted
-- in key order so that concurrent writers lock tally rows in one order.
-- Origin: migration 0004.

CREATE OR REPLACE FUNCTION judgements_queue_tally_inserted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    WITH change AS (SELECT project_id, needed, answered, 1 AS sign FROM new_pairs),
    pool_change AS (
        INSERT INTO judgements_queuepooltally AS tally (project_id, open_pairs)
        SELECT project_id, sum(sign) FROM change WHERE needed > 0
        GROUP BY project_id HAVING sum(sign) <> 0
        ORDER BY project_id
        ON CONFLICT (project_id) DO UPDATE
        SET open_pairs = tally.open_pairs + EXCLUDED.open_pairs
    )
    INSERT INTO judgements_queueratertally AS tally
        (project_id, rater_id, answered, answered_open, day, answered_on_day)
    SELECT change.project_id, rater.id::bigint, sum(change.sign),
           coalesce(sum(change.sign) FILTER (WHERE change.needed > 0), 0),
           (now() AT TIME ZONE 'UTC')::date,
           coalesce(sum(change.sign) FILTER (
               WHERE rater.day::date = (now() AT TIME ZONE 'UTC')::date), 0)
    FROM change
    CROSS JOIN LATERAL jsonb_each_text(change.answered) AS rater (id, day)
    GROUP BY change.project_id, rater.id::bigint
    HAVING sum(change.sign) <> 0
        OR coalesce(sum(change.sign) FILTER (WHERE change.needed > 0), 0) <> 0
        OR coalesce(sum(change.sign) FILTER (
               WHERE rater.day::date = (now() AT TIME ZONE 'UTC')::date), 0) <> 0
    ORDER BY change.project_id, rater.id::bigint
    ON CONFLICT (project_id, rater_id) DO UPDATE
    SET answered = tally.answered + EXCLUDED.answered,
        answered_open = tally.answered_open + EXCLUDED.answered_open,
        day = EXCLUDED.day,
        answered_on_day = EXCLUDED.answered_on_day
            + CASE WHEN tally.day = EXCLUDED.day THEN tally.answered_on_day ELSE 0 END;
    -- Empty tallies go, so that a project whose hits are deleted with raw SQL (as
    -- generate_load replaces a project) leaves no row behind that refers to it.
    DELETE FROM judgements_queuepooltally WHERE open_pairs = 0;
    DELETE FROM judgements_queueratertally WHERE answered = 0 AND answered_open = 0;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_tally_deleted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    WITH change AS (SELECT project_id, needed, answered, -1 AS sign FROM old_pairs),
    pool_change AS (
        INSERT INTO judgements_queuepooltally AS tally (project_id, open_pairs)
        SELECT project_id, sum(sign) FROM change WHERE needed > 0
        GROUP BY project_id HAVING sum(sign) <> 0
        ORDER BY project_id
        ON CONFLICT (project_id) DO UPDATE
        SET open_pairs = tally.open_pairs + EXCLUDED.open_pairs
    )
    INSERT INTO judgements_queueratertally AS tally
        (project_id, rater_id, answered, answered_open, day, answered_on_day)
    SELECT change.project_id, rater.id::bigint, sum(change.sign),
           coalesce(sum(change.sign) FILTER (WHERE change.needed > 0), 0),
           (now() AT TIME ZONE 'UTC')::date,
           coalesce(sum(change.sign) FILTER (
               WHERE rater.day::date = (now() AT TIME ZONE 'UTC')::date), 0)
    FROM change
    CROSS JOIN LATERAL jsonb_each_text(change.answered) AS rater (id, day)
    GROUP BY change.project_id, rater.id::bigint
    HAVING sum(change.sign) <> 0
        OR coalesce(sum(change.sign) FILTER (WHERE change.needed > 0), 0) <> 0
        OR coalesce(sum(change.sign) FILTER (
               WHERE rater.day::date = (now() AT TIME ZONE 'UTC')::date), 0) <> 0
    ORDER BY change.project_id, rater.id::bigint
    ON CONFLICT (project_id, rater_id) DO UPDATE
    SET answered = tally.answered + EXCLUDED.answered,
        answered_open = tally.answered_open + EXCLUDED.answered_open,
        day = EXCLUDED.day,
        answered_on_day = EXCLUDED.answered_on_day
            + CASE WHEN tally.day = EXCLUDED.day THEN tally.answered_on_day ELSE 0 END;
    -- Empty tallies go, so that a project whose hits are deleted with raw SQL (as
    -- generate_load replaces a project) leaves no row behind that refers to it.
    DELETE FROM judgements_queuepooltally WHERE open_pairs = 0;
    DELETE FROM judgements_queueratertally WHERE answered = 0 AND answered_open = 0;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_queue_tally_updated()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    WITH change AS (SELECT project_id, needed, answered, 1 AS sign FROM new_pairs UNION ALL SELECT project_id, needed, answered, -1 AS sign FROM old_pairs),
    pool_change AS (
        INSERT INTO judgements_queuepooltally AS tally (project_id, open_pairs)
        SELECT project_id, sum(sign) FROM change WHERE needed > 0
        GROUP BY project_id HAVING sum(sign) <> 0
        ORDER BY project_id
        ON CONFLICT (project_id) DO UPDATE
        SET open_pairs = tally.open_pairs + EXCLUDED.open_pairs
    )
    INSERT INTO judgements_queueratertally AS tally
        (project_id, rater_id, answered, answered_open, day, answered_on_day)
    SELECT change.project_id, rater.id::bigint, sum(change.sign),
           coalesce(sum(change.sign) FILTER (WHERE change.needed > 0), 0),
           (now() AT TIME ZONE 'UTC')::date,
           coalesce(sum(change.sign) FILTER (
               WHERE rater.day::date = (now() AT TIME ZONE 'UTC')::date), 0)
    FROM change
    CROSS JOIN LATERAL jsonb_each_text(change.answered) AS rater (id, day)
    GROUP BY change.project_id, rater.id::bigint
    HAVING sum(change.sign) <> 0
        OR coalesce(sum(change.sign) FILTER (WHERE change.needed > 0), 0) <> 0
        OR coalesce(sum(change.sign) FILTER (
               WHERE rater.day::date = (now() AT TIME ZONE 'UTC')::date), 0) <> 0
    ORDER BY change.project_id, rater.id::bigint
    ON CONFLICT (project_id, rater_id) DO UPDATE
    SET answered = tally.answered + EXCLUDED.answered,
        answered_open = tally.answered_open + EXCLUDED.answered_open,
        day = EXCLUDED.day,
        answered_on_day = EXCLUDED.answered_on_day
            + CASE WHEN tally.day = EXCLUDED.day THEN tally.answered_on_day ELSE 0 END;
    -- Empty tallies go, so that a project whose hits are deleted with raw SQL (as
    -- generate_load replaces a project) leaves no row behind that refers to it.
    DELETE FROM judgements_queuepooltally WHERE open_pairs = 0;
    DELETE FROM judgements_queueratertally WHERE answered = 0 AND answered_open = 0;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER queue_tally_deleted
    AFTER DELETE ON judgements_queuepair
    REFERENCING OLD TABLE AS old_pairs
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_queue_tally_deleted();
ALTER TABLE judgements_queuepair ENABLE ALWAYS TRIGGER queue_tally_deleted;

CREATE OR REPLACE TRIGGER queue_tally_inserted
    AFTER INSERT ON judgements_queuepair
    REFERENCING NEW TABLE AS new_pairs
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_queue_tally_inserted();
ALTER TABLE judgements_queuepair ENABLE ALWAYS TRIGGER queue_tally_inserted;

CREATE OR REPLACE TRIGGER queue_tally_updated
    AFTER UPDATE ON judgements_queuepair
    REFERENCING OLD TABLE AS old_pairs NEW TABLE AS new_pairs
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_queue_tally_updated();
ALTER TABLE judgements_queuepair ENABLE ALWAYS TRIGGER queue_tally_updated;

