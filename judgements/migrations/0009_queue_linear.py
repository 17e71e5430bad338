from pathlib import Path

from django.db import migrations

# Two of the queue's functions (0007) joined common table expressions with each other.
# A CTE has no index, and PostgreSQL planned those joins as nested loops over them, so
# their cost grew with the square of the pairs a statement touched: adding a result
# list of 1,000 queries (100,000 hits, 10,000 pool pairs) to a project of 4,000
# queries took 141 s, 12.7 s of it in judgements_queue_repool and 128 s in
# judgements_queue_recount (562 million rows compared). Both now reach the other side
# per pair through an index, in time linear in the pairs, with the same answers.
#
# judgements_queue_repool: which touched pairs left the pool is asked of the hits per
# pair (their (query, document) index) instead of an anti-join with the "pooled" CTE;
# the statement's sub-queries share one snapshot, so the answer is the same.
# judgements_queue_recount: each touched pair's newest event per rater is found with a
# LATERAL index range read of judgement_latest_idx, instead of a DISTINCT ON over all
# their events joined back to the touched pairs.
#
# The two functions are loaded whole from a frozen copy (sql/0009_queue_linear.sql), and
# going back loads 0007's two functions whole (sql/0009_reverse.sql). Their current
# text is judgements/sql/queue.sql.
FROZEN = Path(__file__).parent / "sql"


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0008_grade_summaries"),
    ]

    operations = [
        migrations.RunSQL(
            (FROZEN / "0009_queue_linear.sql").read_text(),
            (FROZEN / "0009_reverse.sql").read_text(),
        ),
    ]
