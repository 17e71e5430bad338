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
        -- Each human rater's newest event per touched pair: their current answer
        -- (machine judges' events count in no human number; judgements.machine).
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
    EXECUTE FUNCTION judgements_pair_grades_added();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER pair_grades_judgements_added;

CREATE OR REPLACE TRIGGER pair_grades_judgements_removed
    AFTER DELETE ON judgements_judgement
    REFERENCING OLD TABLE AS removed_judgements
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_pair_grades_removed();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER pair_grades_judgements_removed;
