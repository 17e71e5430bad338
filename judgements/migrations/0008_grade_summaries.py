import django.db.models.deletion
from django.db import migrations, models

# What NDCG reads, packed (models QueryGrades, RankedHits, RankedGrades): per result
# list, query and consensus policy, one row with each hit's grade in rank order and the
# query's judged grades highest first, as levels (each grade and its document count). A list's evaluation is then one index range
# read of a row per query instead of every judged pair and every hit
# (metrics.packed_reads.stored_result_list_grades); the documents in rank order serve
# evaluations from the log.
#
# Triggers on judgements_pairgrade (kept by the judgement triggers of 0005) and on
# judgements_hit recompute the rows of the queries a statement touched, whatever code
# wrote it, and fire ALWAYS so that bulk loads with session_replication_role = replica
# keep them current too.
#
# Concurrency: every writer first locks the query's judgements_querygrades row (added
# first when a new pair or hit needs one) in query order, then recomputes in a new
# statement (a new snapshot under READ COMMITTED), so a writer that waited counts what
# the other committed. Grading locks pair grades, then these rows, then the queue; an
# import locks these rows (its trigger sorts before "queue_hits_") then the queue: the
# same order. Updates and deletes never add rows, so deleting a query or a project
# (which deletes these rows first) leaves nothing behind.
GRADE_SUMMARIES_SQL = """
-- A bulk load recomputes thousands of queries at once: its sorts of a million hits fit
-- in 64 MB instead of spilling to disk (a third faster), only while this runs.
CREATE FUNCTION judgements_grade_summaries_refresh(
    changed_queries bigint[], add_missing boolean, changed_lists bigint[])
RETURNS void LANGUAGE plpgsql SET work_mem = '64MB' AS $$
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

-- Rows are added for inserted or moved hits and for new pairs, never for other
-- updates or for deletes. Changed hits recompute their own lists' rows only.
CREATE FUNCTION judgements_grade_summaries_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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
{triggers}
-- Summarise what is already there.
SELECT judgements_grade_summaries_refresh(
    array_agg(id ORDER BY id), true, (SELECT array_agg(id) FROM judgements_resultlist))
FROM judgements_query query
WHERE EXISTS (SELECT FROM judgements_hit hit WHERE hit.query_id = query.id)
   OR EXISTS (SELECT FROM judgements_pairgrade pair WHERE pair.query_id = query.id)
HAVING count(*) > 0;
"""

# Hits' triggers sort before "queue_hits_" so that an import locks summaries before the
# queue, as grading does. Pair grades are only written by the triggers of migration 0005.
TRIGGERS = [
    (f"grade_summaries_{table}_{event.lower()}", f"judgements_{table}", event, transition)
    for table in ("hit", "pairgrade")
    for event, transition in [
        ("INSERT", "NEW TABLE AS new_rows"),
        ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        ("DELETE", "OLD TABLE AS old_rows"),
    ]
]
CREATE_TRIGGERS = "".join(
    f"""
CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {transition}
    FOR EACH STATEMENT EXECUTE FUNCTION judgements_grade_summaries_changed();
ALTER TABLE {table} ENABLE ALWAYS TRIGGER {name};"""
    for name, table, event, transition in TRIGGERS
)

DROP_GRADE_SUMMARIES_SQL = (
    "".join(f"DROP TRIGGER {name} ON {table};\n" for name, table, *_ in TRIGGERS)
    + """
DROP FUNCTION judgements_grade_summaries_changed();
DROP FUNCTION judgements_grade_summaries_refresh(bigint[], boolean, bigint[]);
"""
)

# Packed rows stay inline up to about 8 kB (some hundreds of hits) and are never
# compressed: float grades hardly compress, and an uncompressed value out of line can be
# read a prefix at a time.
STORAGE_SQL = """
ALTER TABLE judgements_rankedhits SET (toast_tuple_target = 8160);
ALTER TABLE judgements_rankedgrades SET (toast_tuple_target = 8160);
ALTER TABLE judgements_rankedhits ALTER COLUMN documents SET STORAGE EXTERNAL;
ALTER TABLE judgements_rankedgrades ALTER COLUMN ranked SET STORAGE EXTERNAL;
ALTER TABLE judgements_rankedgrades ALTER COLUMN ideal SET STORAGE EXTERNAL;
ALTER TABLE judgements_rankedgrades ALTER COLUMN ideal_documents SET STORAGE EXTERNAL;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0007_queue_requests"),
    ]

    operations = [
        migrations.CreateModel(
            name="QueryGrades",
            fields=[
                (
                    "query",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="judgements.query",
                    ),
                ),
                (
                    "graded",
                    models.IntegerField(default=0, help_text="Current grades over all pairs."),
                ),
                (
                    "judged",
                    models.IntegerField(default=0, help_text="Pairs with a current grade."),
                ),
            ],
            options={
                "verbose_name_plural": "query grades",
            },
        ),
        migrations.CreateModel(
            name="RankedGrades",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "policy",
                    models.CharField(
                        choices=[
                            ("mean", "mean"),
                            ("median", "median"),
                            ("majority", "majority (ties to the lowest grade)"),
                            (
                                "quepid",
                                "Quepid's rule (mean under 3 grades, else the lowest of the top 3)",
                            ),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "graded",
                    models.IntegerField(default=0, help_text="Current grades over all pairs."),
                ),
                ("ranked", models.BinaryField(default=b"")),
                ("ideal", models.BinaryField(default=b"")),
                ("ideal_documents", models.BinaryField(default=b"")),
                (
                    "query",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.query",
                    ),
                ),
                (
                    "result_list",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.resultlist",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "ranked grades",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("result_list", "policy", "query"), name="ranked_grades_unique"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="RankedHits",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("hits", models.IntegerField(default=0)),
                ("documents", models.BinaryField(default=b"")),
                (
                    "query",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.query",
                    ),
                ),
                (
                    "result_list",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgements.resultlist",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "ranked hits",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("result_list", "query"), name="ranked_hits_unique"
                    )
                ],
            },
        ),
        migrations.RunSQL(STORAGE_SQL, migrations.RunSQL.noop),
        migrations.RunSQL(
            GRADE_SUMMARIES_SQL.replace("{triggers}", CREATE_TRIGGERS), DROP_GRADE_SUMMARIES_SQL
        ),
    ]
