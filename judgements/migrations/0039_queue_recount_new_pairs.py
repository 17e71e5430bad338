"""One upsert adds pairs to the pool (judgements_queue_pool_upsert), and a new hit
recounts only the pool pairs it brings in (judgements/sql/queue.sql, run from its frozen
copy): a pair in the pool already keeps its counts, which follow the answers and requests,
not the hits. New hits give their pairs' best ranks from themselves alone. A capture of
1,000 queries whose hits were pooled before spent 0.41 s of its 0.64 s insert in the
queue's trigger. A request recounts its pairs itself. Going back restores the previous
text (0039_reverse.sql) and drops the upsert."""

from pathlib import Path

from django.db import migrations

FROZEN = Path(__file__).parent / "sql"
DROP_UPSERT = """
DROP FUNCTION judgements_queue_pool_upsert(bigint[], bigint[], bigint[], integer[], boolean);
"""


class Migration(migrations.Migration):
    dependencies = [("judgements", "0038_project_cant_tell_text")]

    operations = [
        migrations.RunSQL(
            (FROZEN / "0039_queue_recount_new_pairs.sql").read_text(),
            (FROZEN / "0039_reverse.sql").read_text() + DROP_UPSERT,
        ),
    ]
