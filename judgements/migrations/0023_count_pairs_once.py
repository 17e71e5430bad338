from pathlib import Path

from django.db import migrations

# judgements_pair_grades_recount counted every pair twice when its row existed: once for
# an INSERT ... ON CONFLICT DO NOTHING that added nothing, again for the UPDATE (a grade
# on a judged pair, every pair of a re-import). Only pairs without a row are counted
# for the insert now. Loaded whole from a frozen copy of pair_grades.sql; going back
# loads 0022's copy (pair_grades.sql and queue.sql as 0022 left them).
FROZEN = Path(__file__).parent / "sql"


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0022_machine_judges"),
    ]

    operations = [
        migrations.RunSQL(
            (FROZEN / "0023_count_pairs_once.sql").read_text(),
            (FROZEN / "0022_machine_judges.sql").read_text(),
        ),
    ]
