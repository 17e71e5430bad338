"""Past moments are replayed from each query's spans, kept by triggers on the log in the
writer's transaction (judgements_querylog, judgements/sql/query_log.sql, run from its
frozen copy), instead of 128-query blocks that their readers wrote (0027): no marks, and
no read writes. Every query's row is written here once. Going back drops the new
triggers and table and restores 0027's (empty blocks: 0027's readers wrote them)."""

from pathlib import Path

import django.db.models.deletion
from django.db import migrations, models

FROZEN = Path(__file__).parent / "sql"
DROP_LOG_BLOCKS = """
DROP TRIGGER log_blocks_judgements_added ON judgements_judgement;
DROP TRIGGER log_blocks_judgements_removed ON judgements_judgement;
DROP FUNCTION judgements_log_blocks_added();
DROP FUNCTION judgements_log_blocks_removed();
DROP FUNCTION judgements_log_blocks_mark(integer[]);
"""
FILL = """
SELECT judgements_query_log_refresh(
    (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM judgements_query), true);
"""
DROP_QUERY_LOG = """
DROP TRIGGER query_log_judgements_added ON judgements_judgement;
DROP TRIGGER query_log_judgements_removed ON judgements_judgement;
DROP FUNCTION judgements_query_log_changed();
DROP FUNCTION judgements_query_log_refresh(bigint[], boolean);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0033_drop_ranked_blocks"),
    ]

    operations = [
        migrations.RunSQL(DROP_LOG_BLOCKS, (FROZEN / "0027_log_blocks.sql").read_text()),
        migrations.DeleteModel(name="LogBlock"),
        migrations.DeleteModel(name="LogBlockMark"),
        migrations.CreateModel(
            name="QueryLog",
            fields=[
                (
                    "query",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="judgements.query",
                    ),
                ),
                ("keys", models.BinaryField(default=b"")),
                ("starts", models.BinaryField(default=b"")),
                ("ends", models.BinaryField(default=b"")),
                ("grades", models.BinaryField(default=b"")),
                ("raters", models.BinaryField(default=b"")),
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
            ],
            options={
                "indexes": [
                    models.Index(fields=["project", "query"], name="query_log_project_idx")
                ],
            },
        ),
        migrations.RunSQL((FROZEN / "0034_query_log.sql").read_text() + FILL, DROP_QUERY_LOG),
    ]
