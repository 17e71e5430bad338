"""A lease on each running job and machine judge run, renewed by the task working on it,
so that work whose worker died is noticed and recovered (judgements/leases.py). Rows
running when this is applied have no lease: their worker was stopped by the deploy that
applies it, and the recovery reads their last report (``updated_at``) instead."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("judgements", "0034_query_log")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="lease_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="machinerun",
            name="lease_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
