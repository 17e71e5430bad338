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
