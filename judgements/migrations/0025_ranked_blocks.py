"""Packed grades in blocks (issue 16, "recompute of one result list <= 2x the core").

judgements_rankedblock joins the RankedGrades rows of a result list and policy for each
block of judgements.packed.BLOCK_QUERIES query ids, the hits' grades rank by rank, so
that a whole list reads in a few dozen rows. Its byte columns are stored uncompressed
(STORAGE EXTERNAL): PostgreSQL then reads only the prefix a depth asks for. Every query
is marked stale, so that the next fill (the metrics refresh, or the next reader) writes
the blocks with the rows; going back drops the table.
"""

import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models

import metrics.core.consensus

STORAGE = """
ALTER TABLE judgements_rankedblock
    ALTER COLUMN header SET STORAGE EXTERNAL,
    ALTER COLUMN ranked SET STORAGE EXTERNAL,
    ALTER COLUMN ideal SET STORAGE EXTERNAL,
    ALTER COLUMN ideal_documents SET STORAGE EXTERNAL;
"""
MARK_STALE = "UPDATE judgements_querygrades SET stale = true"


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0024_rate_limit_table"),
    ]

    operations = [
        migrations.CreateModel(
            name="RankedBlock",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "policy",
                    models.CharField(choices=metrics.core.consensus.policy_choices, max_length=16),
                ),
                (
                    "block",
                    models.IntegerField(help_text="The queries' ids divided by BLOCK_QUERIES."),
                ),
                ("header", models.BinaryField(default=b"")),
                (
                    "rank_ends",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.IntegerField(), default=list
                    ),
                ),
                ("ranked", models.BinaryField(default=b"")),
                ("ideal", models.BinaryField(default=b"")),
                ("ideal_documents", models.BinaryField(default=b"")),
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
                "constraints": [
                    models.UniqueConstraint(
                        fields=("result_list", "policy", "block"), name="ranked_block_unique"
                    )
                ],
            },
        ),
        migrations.RunSQL(STORAGE, migrations.RunSQL.noop),
        migrations.RunSQL(MARK_STALE, migrations.RunSQL.noop),
    ]
