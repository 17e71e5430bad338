"""The pair grades and the queue's recount ask judgements_current_answers per pair
(LATERAL, one index probe each) instead of joining the answers of the whole arrays,
which the planner could loop over for every pair. The frozen copy of
judgements/sql/pair_grades.sql and queue.sql; going back runs 0019's copy."""

from pathlib import Path

from django.db import migrations

FROZEN = Path(__file__).parent / "sql" / "0020_current_answers_per_pair.sql"
BEFORE = Path(__file__).parent / "sql" / "0019_consensus_in_numpy.sql"


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0019_consensus_in_numpy"),
    ]

    operations = [
        migrations.RunSQL(FROZEN.read_text(), BEFORE.read_text()),
    ]
