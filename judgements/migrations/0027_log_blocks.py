"""The packed log (judgements.log_blocks) that past moments are replayed from, and the
marks that writers of the log leave for it (judgements/sql/log_blocks.sql, run whole from
its frozen copy). No block is written here: the first reader of a past moment writes the
blocks of its project. Going back drops the triggers, then the tables.
"""

from pathlib import Path

from django.db import migrations, models

FROZEN = Path(__file__).parent / "sql"
# The byte columns are stored uncompressed: reading a block copies its bytes, no more.
STORAGE = """
ALTER TABLE judgements_logblock
    ALTER COLUMN keys SET STORAGE EXTERNAL,
    ALTER COLUMN starts SET STORAGE EXTERNAL,
    ALTER COLUMN ends SET STORAGE EXTERNAL,
    ALTER COLUMN grades SET STORAGE EXTERNAL;
"""
REVERSE = """
DROP TRIGGER log_blocks_judgements_added ON judgements_judgement;
DROP TRIGGER log_blocks_judgements_removed ON judgements_judgement;
DROP FUNCTION judgements_log_blocks_added();
DROP FUNCTION judgements_log_blocks_removed();
DROP FUNCTION judgements_log_blocks_mark(integer[]);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0026_pair_grades_fillfactor"),
    ]

    operations = [
        migrations.CreateModel(
            name="LogBlock",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "block",
                    models.IntegerField(help_text="The queries' ids divided by 128.", unique=True),
                ),
                ("keys", models.BinaryField(default=b"")),
                ("starts", models.BinaryField(default=b"")),
                ("ends", models.BinaryField(default=b"")),
                ("grades", models.BinaryField(default=b"")),
            ],
        ),
        migrations.CreateModel(
            name="LogBlockMark",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("block", models.IntegerField(db_index=True)),
            ],
        ),
        migrations.RunSQL(STORAGE, migrations.RunSQL.noop),
        migrations.RunSQL((FROZEN / "0027_log_blocks.sql").read_text(), REVERSE),
    ]
