-- judgements_querylog: per query, its human grade events as the spans of time each was
-- its rater's current answer (from when it was recorded, included, to when that rater's
-- next event on the pair was, excluded; never, for their last), packed in pair order,
-- each pair's by grade, with each span's rater: a past moment's grades (and who gave
-- them) are one comparison of two columns over a project's rows (judgements.query_log),
-- where reading and sorting its log took 2-4 s for a million events. Times are microseconds since 2000-01-01 UTC, as binary
-- COPY sends timestamps; keys are query id << 32 | document id; all big-endian, int64
-- but grades (int16) and raters (int32). Machine judges' events are left out, as every human number
-- leaves them out.
--
-- Kept by statement triggers on the log, in the writer's transaction, like the pair
-- grades: a query's row is added, or else locked, in query order, then its spans are
-- counted in a new statement (a new snapshot under READ COMMITTED), so two writers of
-- one query wait for each other and the second counts the first's events. The
-- triggers sort after "pair_grades_" (which lock pair grades, then packed summaries)
-- and before "queue_": every writer takes the query's rows in that order. A large
-- import and a project's rebuild call judgements_query_log_refresh() with their queries
-- (judgements/derived/). Bulk loads skip the triggers (SET LOCAL
-- judgements.defer_derived = on). Origin: migration 0032, replacing the packed log's
-- blocks (0027), which their readers wrote.

CREATE OR REPLACE FUNCTION judgements_query_log_refresh(changed_queries bigint[], add_missing boolean)
 RETURNS void
 LANGUAGE plpgsql
 SET work_mem TO '64MB'
 SET plan_cache_mode TO 'force_custom_plan'
AS $$
BEGIN
    IF add_missing THEN
        INSERT INTO judgements_querylog
            (query_id, project_id, keys, starts, ends, grades, raters)
        SELECT query.id, query.project_id, '', '', '', '', ''
        FROM judgements_query query
        WHERE query.id = ANY(changed_queries)
        ORDER BY query.id
        ON CONFLICT (query_id) DO NOTHING;
    END IF;
    SELECT coalesce(array_agg(locked.query_id), '{}') INTO changed_queries
    FROM (
        SELECT log.query_id FROM judgements_querylog log
        WHERE log.query_id = ANY(changed_queries)
        ORDER BY log.query_id
        FOR UPDATE
    ) AS locked;
    IF cardinality(changed_queries) = 0 THEN
        RETURN;
    END IF;

    WITH events AS (
        -- In the order of judgement_latest_idx (newest first), so that lag() is the
        -- rater's next event on the pair and the window needs no sort.
        SELECT event.query_id, event.document_id, event.rater_id, event.kind, event.grade,
               event.created_at, lag(event.created_at) OVER pair AS next_at
        -- Joined, not "= ANY": a project's ten thousand queries are hashed, a grade's
        -- one probes the index (planned for the array given each time).
        FROM unnest(changed_queries) AS touched (query_id)
        JOIN judgements_judgement event ON event.query_id = touched.query_id
        WHERE event.source <> 'machine'
        WINDOW pair AS (PARTITION BY event.query_id, event.document_id, event.rater_id
                        ORDER BY event.created_at DESC, event.id DESC)
    ),
    spans AS (
        -- timestamptz_send: microseconds since 2000-01-01 UTC, big-endian, as binary
        -- COPY sends them; the largest int64 for no next event.
        SELECT query_id, (query_id << 32) | document_id AS key, rater_id, grade,
               timestamptz_send(created_at) AS starts,
               coalesce(timestamptz_send(next_at), '\x7fffffffffffffff'::bytea) AS ends
        FROM events
        WHERE kind = 'grade'
    ),
    packed AS (
        -- One order for the four aggregates: PostgreSQL sorts each query's spans once.
        SELECT locked.query_id,
               coalesce(string_agg(int8send(spans.key), ''::bytea
                                   ORDER BY spans.key, spans.grade, spans.starts), '') AS keys,
               coalesce(string_agg(spans.starts, ''::bytea
                                   ORDER BY spans.key, spans.grade, spans.starts), '') AS starts,
               coalesce(string_agg(spans.ends, ''::bytea
                                   ORDER BY spans.key, spans.grade, spans.starts), '') AS ends,
               coalesce(string_agg(int2send(spans.grade), ''::bytea
                                   ORDER BY spans.key, spans.grade, spans.starts), '') AS grades,
               coalesce(string_agg(int4send(spans.rater_id), ''::bytea
                                   ORDER BY spans.key, spans.grade, spans.starts), '') AS raters
        FROM unnest(changed_queries) AS locked (query_id)
        LEFT JOIN spans USING (query_id)
        GROUP BY locked.query_id
    )
    UPDATE judgements_querylog log
    SET keys = packed.keys, starts = packed.starts, ends = packed.ends, grades = packed.grades,
        raters = packed.raters
    FROM packed
    WHERE log.query_id = packed.query_id
      AND (log.keys, log.starts, log.ends, log.grades, log.raters)
          IS DISTINCT FROM (packed.keys, packed.starts, packed.ends, packed.grades, packed.raters);
END $$;

CREATE OR REPLACE FUNCTION judgements_query_log_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
DECLARE
    changed_queries bigint[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT query_id) INTO changed_queries
        FROM new_rows WHERE source <> 'machine';
    ELSE
        SELECT array_agg(DISTINCT query_id) INTO changed_queries
        FROM old_rows WHERE source <> 'machine';
    END IF;
    IF changed_queries IS NOT NULL THEN
        -- A delete only recounts the rows there are: a project's deletion removes them
        -- first (judgements.bulk), and a query left with no row needs none.
        PERFORM judgements_query_log_refresh(changed_queries, TG_OP = 'INSERT');
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER query_log_judgements_added
    AFTER INSERT ON judgements_judgement
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_query_log_changed();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER query_log_judgements_added;

CREATE OR REPLACE TRIGGER query_log_judgements_removed
    AFTER DELETE ON judgements_judgement
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    WHEN ((current_setting('judgements.defer_derived'::text, true) IS DISTINCT FROM 'on'::text))
    EXECUTE FUNCTION judgements_query_log_changed();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER query_log_judgements_removed;
