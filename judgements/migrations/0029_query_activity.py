"""Each query's newest human event (judgements_queryactivity, rows of which the largest
counts), kept by triggers on the log (judgements/sql/query_activity.sql, run whole from its frozen copy) and filled once
from the log here, so that the freshness rule asks "is any event of this project dated
after the moment?" with one index probe (metrics.sources). Going back drops the
triggers, then the table.
"""

from pathlib import Path

import django.db.models.deletion
from django.db import migrations, models

FROZEN = Path(__file__).parent / "sql"
FILL = """
INSERT INTO judgements_queryactivity (query_id, project_id, newest)
SELECT event.query_id, query.project_id, max(event.created_at)
FROM judgements_judgement event
JOIN judgements_query query ON query.id = event.query_id
WHERE event.source <> 'machine'
GROUP BY event.query_id, query.project_id
ORDER BY event.query_id
"""
REVERSE = """
DROP TRIGGER activity_judgements_added ON judgements_judgement;
DROP TRIGGER activity_judgements_removed ON judgements_judgement;
DROP FUNCTION judgements_query_activity_added();
DROP FUNCTION judgements_query_activity_removed();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0028_querygrades_project"),
    ]

    operations = [
        migrations.CreateModel(
            name="QueryActivity",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "newest",
                    models.DateTimeField(help_text="created_at of the newest human event it saw."),
                ),
                (
                    "project",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="judgements.project",
                    ),
                ),
                (
                    "query",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="judgements.query",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "query activity",
                "indexes": [
                    models.Index(fields=["project", "newest"], name="query_activity_newest_idx")
                ],
            },
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
        migrations.RunSQL((FROZEN / "0029_query_activity.sql").read_text(), REVERSE),
    ]
