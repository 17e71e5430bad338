-- The sums behind each list's overall point (metrics_overallsum, metrics_unreturnedquery;
-- metrics/overall.py): a grade's refresh updates a list's mean and counts from the
-- points it replaces, so a sum holds for the list's latest points as they were when it
-- was written. Any other write of those points (a rebuild, a split recompute, a repair,
-- a new list computed whole), and any deletion of a query of the project (which may take
-- a judged query out of a mean over all queries), deletes the sums, and the next refresh
-- computes the mean in full. The refresh's own write says so with SET LOCAL
-- metrics.keeping_sums = on. Fired ALWAYS: bulk loads and deletions run with
-- session_replication_role = replica (judgements.bulk).
-- Origin: migration metrics 0005.

CREATE OR REPLACE FUNCTION metrics_overall_sums_forget()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    IF current_setting('metrics.keeping_sums', true) IS NOT DISTINCT FROM 'on' THEN
        RETURN NULL;
    END IF;
    DELETE FROM metrics_overallsum overall
    USING (SELECT DISTINCT result_list_id, metric FROM changed) written
    WHERE overall.result_list_id = written.result_list_id AND overall.metric = written.metric;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION metrics_overall_sums_forget_project()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM metrics_overallsum overall
    USING judgements_resultlist list
    WHERE overall.result_list_id = list.id
      AND list.project_id IN (SELECT DISTINCT project_id FROM deleted);
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER metrics_overall_sums_insert
    AFTER INSERT ON metrics_latestmetricpoint
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION metrics_overall_sums_forget();
ALTER TABLE metrics_latestmetricpoint ENABLE ALWAYS TRIGGER metrics_overall_sums_insert;

CREATE OR REPLACE TRIGGER metrics_overall_sums_update
    AFTER UPDATE ON metrics_latestmetricpoint
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION metrics_overall_sums_forget();
ALTER TABLE metrics_latestmetricpoint ENABLE ALWAYS TRIGGER metrics_overall_sums_update;

CREATE OR REPLACE TRIGGER metrics_overall_sums_delete
    AFTER DELETE ON metrics_latestmetricpoint
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION metrics_overall_sums_forget();
ALTER TABLE metrics_latestmetricpoint ENABLE ALWAYS TRIGGER metrics_overall_sums_delete;

CREATE OR REPLACE TRIGGER metrics_overall_sums_query_delete
    AFTER DELETE ON judgements_query
    REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT
    EXECUTE FUNCTION metrics_overall_sums_forget_project();
ALTER TABLE judgements_query ENABLE ALWAYS TRIGGER metrics_overall_sums_query_delete;
