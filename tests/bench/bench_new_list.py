"""Benchmark a new result list arriving in a large project: what the database triggers
add to inserting its hits.

Run as ``.venv/bin/python tests/bench/bench_new_list.py [--queries 1000]`` (not a pytest
test). It uses the development database and bench_queue's project "generated-queue"
(4,000 queries, 3 result lists of 100 hits, 1M judgement events, about 102k pool
pairs), building it first if it is missing.

A new list gives ``--queries`` queries their 100 hits of the project's first list, once
in reverse order (a new ranking: its top 10, the pool depth, brings other pairs into
the pool) and once in the same order (a re-run: its top 10 are pooled and judged
already; only their best ranks are checked, and none is counted again). Its hits
are inserted with one INSERT … SELECT, as the importers' COPY does, so every trigger on
judgements_hit runs once over all of them: the queue's (which pairs enter the pool,
and their grades so far) and the packed grades' (each query's hits and grades in rank
order). The peer is the same INSERT into a table with judgements_hit's columns and
indexes and no trigger, in the same transaction. Everything is rolled back, so runs
start from the same state.
"""

import argparse
import os
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPOSITORY), str(Path(__file__).resolve().parent)]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from bench_queue import generated_project  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from judgements.models import ResultList  # noqa: E402

# The new list's hits: the first list's, reversed, for the project's first queries.
NEW_HITS_SQL = """
INSERT INTO {table} (result_list_id, query_id, document_id, rank, score)
SELECT %(new)s, hit.query_id, hit.document_id,
       CASE WHEN %(reverse)s THEN 101 - hit.rank ELSE hit.rank END, hit.score
FROM judgements_hit hit
WHERE hit.result_list_id = %(first)s
  AND hit.query_id IN (
      SELECT id FROM judgements_query WHERE project_id = %(project)s ORDER BY id LIMIT %(queries)s)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    project = generated_project(judges_per_pair=1)
    first = project.result_lists.order_by("pk").first()
    print(
        f"{project.slug}: a new list for {args.queries} queries (100 hits each) into "
        f"{project.result_lists.count()} lists; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for reverse in (True, False):
        app, peer = [], []
        for _ in range(args.repeat):
            seconds = _inserted(project, first, args.queries, reverse=reverse)
            app.append(seconds["app"])
            peer.append(seconds["peer"])
        best_app, best_peer = min(app), min(peer)
        print("a new ranking (reversed)" if reverse else "a re-run (the same ranking)")
        print(f"  into judgements_hit, with its triggers    best {best_app:6.2f} s  {_all(app)}")
        print(f"  peer: same rows, same indexes, no trigger best {best_peer:6.2f} s  {_all(peer)}")
        print(f"  the triggers make the insert {best_app / best_peer:.1f}x the peer's time")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _inserted(project, first, queries: int, *, reverse: bool) -> dict[str, float]:
    seconds = {}
    with transaction.atomic():
        new = ResultList.objects.create(
            project=project, name="bench new list", captured_at=timezone.now()
        )
        params = {
            "new": new.pk,
            "first": first.pk,
            "project": project.pk,
            "queries": queries,
            "reverse": reverse,
        }
        with connection.cursor() as cursor:
            cursor.execute(
                "CREATE TEMPORARY TABLE bench_hit_peer (LIKE judgements_hit INCLUDING ALL)"
                " ON COMMIT DROP"
            )
            for name, table in (("peer", "bench_hit_peer"), ("app", "judgements_hit")):
                start = time.perf_counter()
                cursor.execute(NEW_HITS_SQL.format(table=table), params)
                seconds[name] = time.perf_counter() - start
        transaction.set_rollback(True)
    return seconds


def _all(seconds: list[float]) -> str:
    return "(" + ", ".join(f"{value:.2f}" for value in seconds) + ")"


if __name__ == "__main__":
    main()
