"""The project's "remove" choice for unjudged hits is named what it is: judged-only NDCG
(trec_eval -J, Sakai's condensed lists). The stored value stays "remove"; only the
choice's label changes, so no row is touched."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0036_task_leases"),
    ]

    operations = [
        migrations.AlterField(
            model_name="project",
            name="metric_unjudged",
            field=models.CharField(
                choices=[
                    ("zero", "count as irrelevant"),
                    ("remove", "removed: judged only (trec_eval -J)"),
                ],
                default="zero",
                max_length=16,
                verbose_name="unjudged hits",
            ),
        ),
    ]
