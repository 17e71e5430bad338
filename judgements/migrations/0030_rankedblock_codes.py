"""The packed blocks (judgements_rankedblock) hold their grades as a dictionary and
codes (judgements.block_layout.block_codes): ``grades``, the block's distinct values, and
codes of ``width`` bytes into them, the hits' in ``ranked`` and the judged grades'
one by one in ``judged`` (instead of the levels and their counts, ``ideal`` and
``ideal_documents``). A whole list then reads about a third of the bytes.

Blocks are derived: every block is emptied and marked stale, both ways, and the next
reader of its list writes it again in the form of the code it runs
(judgements.packed.blocks_refresh).
"""

from django.db import migrations, models

STORAGE = """
ALTER TABLE judgements_rankedblock
    ALTER COLUMN grades SET STORAGE EXTERNAL,
    ALTER COLUMN judged SET STORAGE EXTERNAL;
"""
EMPTIED = (
    "UPDATE judgements_rankedblock SET stale = true, header = '', rank_ends = '{}', ranked = ''"
)


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0029_query_activity"),
    ]

    operations = [
        migrations.RunSQL(EMPTIED + ", ideal = '', ideal_documents = ''", migrations.RunSQL.noop),
        migrations.RenameField(model_name="rankedblock", old_name="ideal", new_name="judged"),
        migrations.RemoveField(model_name="rankedblock", name="ideal_documents"),
        migrations.AddField(
            model_name="rankedblock",
            name="grades",
            field=models.BinaryField(default=b"", help_text="The block's distinct grades."),
        ),
        migrations.AddField(
            model_name="rankedblock",
            name="width",
            field=models.SmallIntegerField(default=1, help_text="Bytes per code: 1, 2 or 4."),
        ),
        migrations.RunSQL(STORAGE, migrations.RunSQL.noop),
        migrations.RunSQL(migrations.RunSQL.noop, EMPTIED + ", judged = '', grades = ''"),
    ]
