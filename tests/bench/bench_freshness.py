"""Time the freshness rule (metrics.sources) on every project of the database, against
the same question asked of the log itself, as the rule asked it before migration 0029.

"Is any human event of the project dated after the moment?" is asked before every
dashboard, API read and recompute (and again inside the packed read's statement). Asked
of the log, it walked the created_at index past the later events of every project; the
rule now reads each query's newest event (judgements_queryactivity). Each project is
asked as of an hour before its last event, as of that event and as of now; best of 5.
Both answers must agree. Works on any database with projects (the development one, or
the one ``make bench`` has filled by the time it runs this).

Run as ``.venv/bin/python tests/bench/bench_freshness.py``.
"""

import datetime as dt
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402
from summary import load_average, record  # noqa: E402

from metrics.sources import DERIVED_SQL  # noqa: E402

# The rule as it was: the first later human event of the project, in created_at order.
FROM_THE_LOG_SQL = """
SELECT (
    SELECT later.created_at FROM judgements_judgement later
    JOIN judgements_query query ON query.id = later.query_id
    WHERE query.project_id = %(project)s AND later.created_at > %(moment)s
      AND later.source <> 'machine'
    ORDER BY later.created_at LIMIT 1) IS NULL
"""
PROJECTS_SQL = """
SELECT project.slug, project.id, max(event.created_at), count(*)
FROM judgements_project project
JOIN judgements_query query ON query.project_id = project.id
JOIN judgements_judgement event ON event.query_id = query.id
WHERE event.source <> 'machine'
GROUP BY project.slug, project.id
ORDER BY project.slug
"""
TARGET_MS = 5.0  # Ours: the rule is asked on every read; one index probe.


def best(sql: str, params: dict, repeat: int = 5) -> tuple[bool, float]:
    times = []
    with connection.cursor() as cursor:
        for _ in range(repeat):
            started = time.perf_counter()
            cursor.execute(sql, params)
            [answer] = cursor.fetchone()
            times.append(time.perf_counter() - started)
    return answer, min(times) * 1000


def main() -> int:
    with connection.cursor() as cursor:
        cursor.execute(PROJECTS_SQL)
        projects = cursor.fetchall()
        cursor.execute("SELECT count(*) FROM judgements_judgement")
        (events,) = cursor.fetchone()
    print(f"== The freshness rule on {len(projects)} projects, {events:,} events in all ==")
    print(f"{'project':<24} {'events':>10}  {'moment':<18} {'rule':>8} {'log':>9}  holds")
    slowest, disagreements = 0.0, 0
    for slug, project, last, count in projects:
        moments = {
            "an hour before last": last - dt.timedelta(hours=1),
            "its last event": last,
            "now": timezone.now(),
        }
        for label, moment in moments.items():
            params = {"project": project, "moment": moment}
            answer, rule_ms = best(DERIVED_SQL, params)
            logged, log_ms = best(FROM_THE_LOG_SQL, params)
            disagreements += answer != logged
            slowest = max(slowest, rule_ms)
            print(
                f"{slug[:24]:<24} {count:>10,}  {label:<18} {rule_ms:>6.2f}ms {log_ms:>7.2f}ms"
                f"  {answer}{'' if answer == logged else ' (the log says otherwise)'}"
            )
    print(f"slowest answer of the rule: {slowest:.2f} ms (target <= {TARGET_MS:g} ms, ours)")
    record(
        "freshness rule, slowest project and moment (bench_freshness)",
        f"{slowest:.2f} ms", f"<= {TARGET_MS:g} ms (ours)",
        slowest <= TARGET_MS and not disagreements, load_average(),
    )  # fmt: skip
    if disagreements:
        print(f"{disagreements} answers differ from the log's.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
