"""The current text of every PostgreSQL function and trigger of the app, one file per concern.

Triggers keep the derived tables (docs/derived-state.md) in step with the log, the hits
and the projects, whatever code writes them; bulk loads defer the ones on judgements,
hits and pair grades and rebuild once (``judgements.derived.rebuild``), and
``manage.py derived_state`` checks every derived table against
``judgements.derived.oracles``. Their text lives here, whole:

- ``append_only.sql``: the judgement log refuses updates.
- ``pair_grades.sql``: a rater's current answer (``judgements_current_answers``, the one
  rule) and each judged pair's current grades (judgements_pairgrade).
- ``grade_summaries.sql``: the packed hits and totals NDCG reads (rankedhits,
  querygrades), and the stale marks that judgements.packed fills rankedgrades from.
- ``queue.sql``: the rating queue's pool (judgements_queuepair).
- ``queue_tally.sql``: the progress bar's counts.
- ``query_log.sql``: each query's human events as spans of time (judgements_querylog),
  that past moments are replayed from.
- ``query_activity.sql``: each query's newest human event (judgements_queryactivity),
  which the freshness rule (metrics.sources) reads.

Migrations never patch this text. To change a function or trigger: edit its file here,
copy the changed file(s) whole into ``judgements/migrations/sql/NNNN_<name>.sql`` (a
frozen copy, never edited again) and add migration NNNN that runs that copy, and for
going back the previous frozen copy of the same objects.
``tests/judgements/test_sql_files.py`` compares every function and trigger in the test
database, migrated from scratch, with these files, so the two cannot drift.
"""

import re
from pathlib import Path

DIRECTORY = Path(__file__).parent
CONCERNS = (
    "append_only",
    "pair_grades",
    "grade_summaries",
    "queue",
    "queue_tally",
    "query_log",
    "query_activity",
)

# Statements start at the beginning of a line; the bodies between $$ are indented.
_STATEMENT_START = re.compile(r"^(?=CREATE |ALTER |DROP )", re.MULTILINE)


def current(concern: str) -> str:
    """The file of one concern, as text."""
    return (DIRECTORY / f"{concern}.sql").read_text()


def statements(sql: str) -> list[str]:
    """The statements of a file, each whole (comments before the first one dropped)."""
    parts = _STATEMENT_START.split(sql)
    return [
        part.strip() for part in parts if part.lstrip().startswith(("CREATE", "ALTER", "DROP"))
    ]
