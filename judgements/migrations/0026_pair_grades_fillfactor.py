"""Pair grades leave half of each page free (fillfactor 50), so that recounting a pair
writes its new row on the same page without touching its four indexes (a HOT update).

Every grade updates its pair's row, and an import of a million grades updates a million
rows in one statement, whose old versions stay until it commits: with full pages each
new version went to another page and into every index. Measured on a 200k-row Quepid
import into the 10k-query generated project: the pair-grade recount's PostgreSQL CPU
went from 14.4-15.4 s to 10.0 s. The queue's pool rows cannot gain the same way (its
open-pairs index holds the grades count, which every grade changes).

The setting applies to pages written from now on; ``VACUUM FULL judgements_pairgrade``
rewrites the existing ones at once (it locks the table while it runs).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0025_ranked_blocks"),
    ]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE judgements_pairgrade SET (fillfactor = 50)",
            "ALTER TABLE judgements_pairgrade RESET (fillfactor)",
        ),
    ]
