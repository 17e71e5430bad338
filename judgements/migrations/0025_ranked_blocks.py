"""Packed grades in blocks (issue 16, "recompute of one result list <= 2x the core").

judgements_rankedblock joins the RankedGrades rows of a result list and policy for each
block of judgements.packed.BLOCK_QUERIES (128) query ids, the hits' grades rank by
rank, so that a whole list reads in a few dozen rows. Its byte columns are stored
uncompressed (STORAGE EXTERNAL): PostgreSQL then reads only the prefix a depth asks
for. Every block of the packed rows there are is added empty and stale, so that the
next reader of each list writes it (judgements.packed.blocks_refresh); going back
drops the table.
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
STALE_BLOCKS = """
INSERT INTO judgements_rankedblock
    (result_list_id, policy, block, stale, header, rank_ends, ranked, ideal, ideal_documents)
SELECT DISTINCT result_list_id, policy, (query_id / 128)::int4, true,
       ''::bytea, '{}'::int4[], ''::bytea, ''::bytea, ''::bytea
FROM judgements_rankedgrades
"""


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
                    "stale",
                    models.BooleanField(
                        db_default=False,
                        default=False,
                        help_text="Set by a fill of one of the block's queries: the block waits for a reader of its list to write it again (judgements.packed.blocks_refresh).",
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
                "constraints": [
                    models.UniqueConstraint(
                        fields=("result_list", "policy", "block"), name="ranked_block_unique"
                    )
                ],
            },
        ),
        migrations.RunSQL(STORAGE, migrations.RunSQL.noop),
        migrations.RunSQL(STALE_BLOCKS, migrations.RunSQL.noop),
    ]
