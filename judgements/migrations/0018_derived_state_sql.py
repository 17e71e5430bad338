from pathlib import Path

from django.db import migrations

# Every function and trigger of judgements/sql/, loaded whole from a frozen copy of those
# files. Their text is the one migrations 0002-0017 left in the database (read back with
# pg_get_functiondef and pg_get_triggerdef), so this changes no behaviour: from here on,
# the files are the current text and each later change freezes its own copy.
FROZEN = Path(__file__).parent / "sql" / "0018_derived_state_sql.sql"


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0017_jobs_and_project_limits"),
    ]

    operations = [
        migrations.RunSQL(FROZEN.read_text(), migrations.RunSQL.noop),
    ]
