"""judgements_querygrades carries its query's project, and the partial index of stale
rows leads with it: the packed read's guard ("is any query of this project stale?") and
the fill's STALE_SQL probed every stale row of every project (7 ms per list read with
6,000 stale queries in projects nobody had read since their load; 0.004 ms now). The function that
adds the rows (judgements/sql/grade_summaries.sql) is run whole from its frozen copy;
going back runs 0021's definition of that function (0028_reverse.sql).
"""

from pathlib import Path

from django.db import migrations, models

FROZEN = Path(__file__).parent / "sql"
# Stale rows gather in projects nobody reads (a bulk load marks every query): without
# the pairs' statistics the planner takes "stale" and "project" as independent, expects
# some of another project's stale rows to be this project's, and scans the table.
STATISTICS = (
    "CREATE STATISTICS query_grades_stale_stats (mcv) ON project_id, stale "
    "FROM judgements_querygrades; ANALYZE judgements_querygrades"
)
FILL = """
UPDATE judgements_querygrades summary SET project_id = query.project_id
FROM judgements_query query WHERE query.id = summary.query_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0027_log_blocks"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="querygrades", name="query_grades_stale_idx"),
        migrations.AddField(
            model_name="querygrades",
            name="project",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=models.DO_NOTHING,
                related_name="+",
                to="judgements.project",
            ),
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="querygrades",
            name="project",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=models.DO_NOTHING,
                related_name="+",
                to="judgements.project",
            ),
        ),
        migrations.AddIndex(
            model_name="querygrades",
            index=models.Index(
                condition=models.Q(("stale", True)),
                fields=["project", "query"],
                name="query_grades_stale_idx",
            ),
        ),
        migrations.RunSQL(STATISTICS, "DROP STATISTICS query_grades_stale_stats"),
        migrations.RunSQL(
            (FROZEN / "0028_querygrades_project.sql").read_text(),
            (FROZEN / "0028_reverse.sql").read_text(),
        ),
    ]
