-- judgements_queryactivity: for each query with a human event, when its newest one was
-- dated, and the query's project, so that the freshness rule (metrics.sources) asks "is
-- any event of this project dated after the moment?" with one probe of its (project,
-- newest) index. Asked of the log, that question walked the created_at index past every
-- later event of every project until one of this project's: 23 to 200 ms in a database
-- of 4.4M events, as of a project's last event while other projects had later ones.
-- Machine judges' events are left out, as the rule leaves them out.
--
-- A query's newest is the largest of its rows. Writers only insert (a row per query a
-- statement adds human events to, with the newest of them), so that they never wait for
-- each other here: a rater grading a query that an import is writing does not wait for
-- the import. So that rows do not pile up, a statement deletes the rows of its queries
-- that its own rows make redundant (no newer) and that it can lock at once (SKIP LOCKED:
-- it never waits), in READ COMMITTED only (a REPEATABLE READ writer could fail on a row
-- deleted since its snapshot), as judgements/sql/log_blocks.sql does with its marks.
-- A statement that deletes human events counts their queries' newest again from what is
-- left, and a query left with none keeps no row.
-- Fired ALWAYS and without a WHEN: bulk loads keep the table too (one aggregate over
-- the statement's rows by query). Origin: migration 0029.

CREATE OR REPLACE FUNCTION judgements_query_activity_added()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    IF current_setting('transaction_isolation') = 'read committed' THEN
        WITH touched AS MATERIALIZED (
            SELECT added.query_id, max(added.created_at) AS newest
            FROM added_judgements added
            WHERE added.source <> 'machine'
            GROUP BY added.query_id
        ),
        redundant AS (
            DELETE FROM judgements_queryactivity
            WHERE id IN (SELECT older.id FROM judgements_queryactivity older
                         JOIN touched USING (query_id)
                         WHERE older.newest <= touched.newest
                         FOR UPDATE OF older SKIP LOCKED)
        )
        INSERT INTO judgements_queryactivity (query_id, project_id, newest)
        SELECT touched.query_id, query.project_id, touched.newest
        FROM touched
        JOIN judgements_query query ON query.id = touched.query_id;
    ELSE
        INSERT INTO judgements_queryactivity (query_id, project_id, newest)
        SELECT touched.query_id, query.project_id, touched.newest
        FROM (
            SELECT added.query_id, max(added.created_at) AS newest
            FROM added_judgements added
            WHERE added.source <> 'machine'
            GROUP BY added.query_id
        ) AS touched
        JOIN judgements_query query ON query.id = touched.query_id;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION judgements_query_activity_removed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    WITH touched AS MATERIALIZED (
        SELECT DISTINCT removed.query_id FROM removed_judgements removed
        WHERE removed.source <> 'machine'
    ),
    dropped AS (
        DELETE FROM judgements_queryactivity activity
        USING touched
        WHERE activity.query_id = touched.query_id
    )
    INSERT INTO judgements_queryactivity (query_id, project_id, newest)
    SELECT event.query_id, query.project_id, max(event.created_at)
    FROM touched
    JOIN judgements_judgement event ON event.query_id = touched.query_id
    JOIN judgements_query query ON query.id = touched.query_id
    WHERE event.source <> 'machine'
    GROUP BY event.query_id, query.project_id;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER activity_judgements_added
    AFTER INSERT ON judgements_judgement
    REFERENCING NEW TABLE AS added_judgements
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_query_activity_added();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER activity_judgements_added;

CREATE OR REPLACE TRIGGER activity_judgements_removed
    AFTER DELETE ON judgements_judgement
    REFERENCING OLD TABLE AS removed_judgements
    FOR EACH STATEMENT
    EXECUTE FUNCTION judgements_query_activity_removed();
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER activity_judgements_removed;
