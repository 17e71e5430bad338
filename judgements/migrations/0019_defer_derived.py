from pathlib import Path

from django.db import migrations

# The triggers on judgements, hits and pair grades that keep the derived tables get a
# WHEN: they do nothing while the transaction has SET LOCAL judgements.defer_derived =
# on. Bulk loads (generate_load, load_demo) set it, write every row, then rebuild what
# they touched once with the same functions (judgements.derived.rebuild), instead of
# recounting per statement with indexes dropped (500 generated queries took 213 s).
# Loaded whole from a frozen copy of the three changed files; going back loads 0018's
# frozen copy, which defines the same triggers without the WHEN.
FROZEN = Path(__file__).parent / "sql"


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0018_derived_state_sql"),
    ]

    operations = [
        migrations.RunSQL(
            (FROZEN / "0019_defer_derived.sql").read_text(),
            (FROZEN / "0018_derived_state_sql.sql").read_text(),
        ),
    ]
