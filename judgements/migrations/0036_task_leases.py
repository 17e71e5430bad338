"""A lease on each running job and machine judge run, renewed by the task working on it,
so that work whose worker died is noticed and recovered (judgements/leases.py). Rows
running when this is applied get a lease that ends now: the workers of the code before
renew none, so a worker of this code recovers them once the lease has run out."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("judgements", "0035_machinejudge_keys")]

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
        migrations.RunSQL(
            "UPDATE judgements_job SET lease_until = now() WHERE status = 'running';"
            "UPDATE judgements_machinerun SET lease_until = now() WHERE status = 'running';",
            migrations.RunSQL.noop,
        ),
    ]
