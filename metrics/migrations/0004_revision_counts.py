import django.db.models.deletion
from django.db import migrations, models

# Every query's revisions per UTC hour so far, as metrics.revisions counts them (a frozen
# copy of its RECOUNT_SQL over every query): an event that replaces the rater's standing
# answer on the pair (a grade or "can't tell") with a different one.
BACKFILL = """
INSERT INTO metrics_revisioncount (query_id, hour, revisions)
SELECT revision.query_id, date_trunc('hour', revision.created_at, 'UTC') AS hour, count(*)
FROM (
    SELECT j.id, j.created_at, j.query_id, j.kind, j.grade,
           lead(j.kind) OVER pair AS before_kind, lead(j.grade) OVER pair AS before_grade
    FROM judgements_judgement j
    WINDOW pair AS (PARTITION BY j.query_id, j.document_id, j.rater_id
                    ORDER BY j.created_at DESC, j.id DESC)
) revision
WHERE before_kind IN ('grade', 'cant_tell') AND kind IN ('grade', 'cant_tell')
  AND (kind, grade) IS DISTINCT FROM (before_kind, before_grade)
GROUP BY revision.query_id, hour
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0010_query_external_id_and_metric_defaults"),
        ("metrics", "0003_mean_over_negative_and_query_coverage"),
    ]

    operations = [
        migrations.CreateModel(
            name="RevisionCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("hour", models.DateTimeField(help_text="The start of the UTC hour.")),
                ("revisions", models.PositiveIntegerField()),
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
                "constraints": [
                    models.UniqueConstraint(fields=("query", "hour"), name="revision_count_unique")
                ],
            },
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
