import django.db.models.deletion
from django.db import migrations, models

# Each mark's project, from its query.
BACKFILL = """
UPDATE metrics_stalequery mark SET project_id = query.project_id
FROM judgements_query query WHERE query.id = mark.query_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0028_querygrades_project"),
        ("metrics", "0006_metric_point_list_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="stalequery",
            name="project",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="judgements.project",
            ),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="stalequery",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="judgements.project",
            ),
        ),
    ]
