from pathlib import Path

from django.db import migrations

# The triggers on judgements, hits and pair grades that keep the derived tables get a
# WHEN: they do nothing while the transaction has SET LOCAL judgements.defer_derived =
# on. Bulk loads (generate_load, load_demo) set it, write every row, then rebuild what
# they touched once with the same functions (judgements.derived.rebuild), instead of
# recounting per statement with indexes dropped (500 generated queries took 213 s).
# Loaded whole from a frozen copy of the three changed files; going back loads the
# frozen copies of 0019 and 0020 in turn, which define the same triggers without WHEN.
FROZEN = Path(__file__).parent / "sql"


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0020_current_answers_per_pair"),
    ]

    operations = [
        migrations.RunSQL(
            (FROZEN / "0021_defer_derived.sql").read_text(),
            (FROZEN / "0019_consensus_in_numpy.sql").read_text()
            + (FROZEN / "0020_current_answers_per_pair.sql").read_text(),
        ),
    ]
