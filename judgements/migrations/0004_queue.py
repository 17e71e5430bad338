import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# The progress bar's counts: open pairs per project, and per rater the pool pairs they
# answered, how many of those are still open, and how many they answered today (UTC;
# a day's count starts again at 0 on the first change of the next day). Each change to
# a pool row adds its new state and takes away its old one, so the tallies stay exact
# (pool rows only change under the row locks taken in judgements_queue_recount). Rows
# are upserted in key order so that concurrent writers lock tally rows in one order.
TALLY_TEMPLATE = """
CREATE FUNCTION judgements_queue_tally_{event}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH change AS ({changes}),
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
CREATE TRIGGER queue_tally_{event} AFTER {operation} ON judgements_queuepair
    REFERENCING {tables}
    FOR EACH STATEMENT EXECUTE FUNCTION judgements_queue_tally_{event}();
ALTER TABLE judgements_queuepair ENABLE ALWAYS TRIGGER queue_tally_{event};
"""
NEW_ROWS = "SELECT project_id, needed, answered, 1 AS sign FROM new_pairs"
OLD_ROWS = "SELECT project_id, needed, answered, -1 AS sign FROM old_pairs"
TALLY_SQL = "".join(
    TALLY_TEMPLATE.format(event=event, operation=operation, tables=tables, changes=changes)
    for event, operation, tables, changes in [
        ("inserted", "INSERT", "NEW TABLE AS new_pairs", NEW_ROWS),
        ("deleted", "DELETE", "OLD TABLE AS old_pairs", OLD_ROWS),
        (
            "updated",
            "UPDATE",
            "OLD TABLE AS old_pairs NEW TABLE AS new_pairs",
            f"{NEW_ROWS} UNION ALL {OLD_ROWS}",
        ),
    ]
)

# The pool (pairs in the top pool_depth hits of any result list of a project) and each
# pair's count of current grades live in judgements_queuepair. Triggers keep it in step
# with every write to hits, judgements and projects, whichever code makes the write
# (rating page, API, importers, COPY), and fire ALWAYS so that bulk loads running with
# session_replication_role = replica keep it current too.
QUEUE_SQL = (
    """
CREATE FUNCTION judgements_queue_recount(pair_queries bigint[], pair_documents bigint[])
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

CREATE FUNCTION judgements_queue_repool(pair_queries bigint[], pair_documents bigint[])
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

-- Hits deeper than every project's pool depth cannot change any pool.
CREATE FUNCTION judgements_queue_hits_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE FUNCTION judgements_queue_hits_moved() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE FUNCTION judgements_queue_judgements_added() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE FUNCTION judgements_queue_project_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER queue_hits_inserted AFTER INSERT ON judgements_hit
    REFERENCING NEW TABLE AS changed_hits
    FOR EACH STATEMENT EXECUTE FUNCTION judgements_queue_hits_changed();
CREATE TRIGGER queue_hits_deleted AFTER DELETE ON judgements_hit
    REFERENCING OLD TABLE AS changed_hits
    FOR EACH STATEMENT EXECUTE FUNCTION judgements_queue_hits_changed();
CREATE TRIGGER queue_hits_updated AFTER UPDATE ON judgements_hit
    REFERENCING OLD TABLE AS old_hits NEW TABLE AS new_hits
    FOR EACH STATEMENT EXECUTE FUNCTION judgements_queue_hits_moved();
CREATE TRIGGER queue_judgements_added AFTER INSERT ON judgements_judgement
    REFERENCING NEW TABLE AS added_judgements
    FOR EACH STATEMENT EXECUTE FUNCTION judgements_queue_judgements_added();
CREATE TRIGGER queue_project_changed AFTER UPDATE OF pool_depth, judges_per_pair
    ON judgements_project
    FOR EACH ROW
    WHEN (OLD.pool_depth <> NEW.pool_depth OR OLD.judges_per_pair <> NEW.judges_per_pair)
    EXECUTE FUNCTION judgements_queue_project_changed();

ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER queue_hits_inserted;
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER queue_hits_deleted;
ALTER TABLE judgements_hit ENABLE ALWAYS TRIGGER queue_hits_updated;
ALTER TABLE judgements_judgement ENABLE ALWAYS TRIGGER queue_judgements_added;
ALTER TABLE judgements_project ENABLE ALWAYS TRIGGER queue_project_changed;

"""
    + TALLY_SQL
    + """
-- Pool the data that is already there.
SELECT judgements_queue_repool(array_agg(hit.query_id), array_agg(hit.document_id))
FROM judgements_hit hit
JOIN judgements_resultlist run ON run.id = hit.result_list_id
JOIN judgements_project project ON project.id = run.project_id
WHERE hit.rank <= project.pool_depth
HAVING count(*) > 0;
"""
)

DROP_QUEUE_SQL = """
DROP TRIGGER queue_tally_inserted ON judgements_queuepair;
DROP TRIGGER queue_tally_updated ON judgements_queuepair;
DROP TRIGGER queue_tally_deleted ON judgements_queuepair;
DROP FUNCTION judgements_queue_tally_inserted();
DROP FUNCTION judgements_queue_tally_updated();
DROP FUNCTION judgements_queue_tally_deleted();
DROP TRIGGER queue_project_changed ON judgements_project;
DROP TRIGGER queue_judgements_added ON judgements_judgement;
DROP TRIGGER queue_hits_updated ON judgements_hit;
DROP TRIGGER queue_hits_deleted ON judgements_hit;
DROP TRIGGER queue_hits_inserted ON judgements_hit;
DROP FUNCTION judgements_queue_project_changed();
DROP FUNCTION judgements_queue_judgements_added();
DROP FUNCTION judgements_queue_hits_moved();
DROP FUNCTION judgements_queue_hits_changed();
DROP FUNCTION judgements_queue_repool(bigint[], bigint[]);
DROP FUNCTION judgements_queue_recount(bigint[], bigint[]);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0003_project_raters_and_import_id"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="QueuePoolTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("open_pairs", models.IntegerField(default=0)),
                (
                    "project",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.project",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="QueueLease",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("expires_at", models.DateTimeField()),
                (
                    "document",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.document",
                    ),
                ),
                (
                    "query",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.query",
                    ),
                ),
                (
                    "rater",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("query", "document", "rater"), name="queue_lease_unique"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="QueuePair",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "best_rank",
                    models.PositiveIntegerField(help_text="Best rank in any result list."),
                ),
                (
                    "grades",
                    models.PositiveSmallIntegerField(
                        default=0, help_text="Raters whose current answer is a grade."
                    ),
                ),
                (
                    "needed",
                    models.SmallIntegerField(
                        help_text="judges_per_pair - grades; 0 or less is done."
                    ),
                ),
                (
                    "answered",
                    models.JSONField(
                        default=dict,
                        help_text="The UTC day of each current answer (grade or can't tell), by rater id.",
                    ),
                ),
                (
                    "document",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.document",
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.project",
                    ),
                ),
                (
                    "query",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.query",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        condition=models.Q(("needed__gt", 0)),
                        fields=["project", "best_rank", "grades", "query", "document"],
                        name="queue_pair_open_idx",
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("query", "document"), name="queue_pair_unique")
                ],
            },
        ),
        migrations.CreateModel(
            name="QueueRaterTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("answered", models.IntegerField(default=0)),
                ("answered_open", models.IntegerField(default=0)),
                (
                    "day",
                    models.DateField(help_text="The UTC day answered_on_day counts.", null=True),
                ),
                ("answered_on_day", models.IntegerField(default=0)),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.project",
                    ),
                ),
                (
                    "rater",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "rater"), name="queue_rater_tally_unique"
                    )
                ],
            },
        ),
        migrations.RunSQL(QUEUE_SQL, DROP_QUEUE_SQL),
    ]
