"""Twenty raters grade what the queue hands them until it runs out, at scale.

Run as ``.venv/bin/python tests/bench/bench_queue_to_the_end.py [--judges-per-pair 2]``.
It is not a pytest test, and it works on the development database: it builds the
project "queue-to-the-end" with ``generate_load --queries 5000 --hits-per-query 100
--judgements 1000000`` (replacing it if it is there, since a run grades its whole
pool), sets ``judges_per_pair`` (2 by default: about 20k grades, on pairs that need
one or two more), and has twenty raters, each a thread with its own connection, ask
for a pair and grade it until the queue is empty for every one of them
(``tests.judgements.test_queue_concurrency.grade_what_the_queue_hands_out``, the
helper of the small tests). Grades queue their metrics refresh for a worker that does
not run here, as in production.

It fails (exit status 1) unless no handed pair was refused, every rater was told the
queue is empty only once it was (no open pair and no lease left: the end of the queue
left a pair short when a rater asking while its first grade was written was told so),
and ``derived_state --check`` finds every derived table of the project equal to its
recomputation from the log. It prints the grades per second.
"""

import argparse
import os
import sys
import time
from io import StringIO
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from helpers import derived_state_clean, raters_named  # noqa: E402

from judgements.models import Judgement, Project, QueueLease, QueuePair  # noqa: E402
from tests.judgements.test_queue_concurrency import grade_what_the_queue_hands_out  # noqa: E402

SLUG = "queue-to-the-end"
RATERS = 20


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judges-per-pair", type=int, default=2)
    args = parser.parse_args()
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    started = time.perf_counter()
    call_command("generate_load", slug=SLUG, queries=5_000, hits_per_query=100,
                 judgements=1_000_000, stdout=StringIO())  # fmt: skip
    project = Project.objects.get(slug=SLUG)
    project.judges_per_pair = args.judges_per_pair
    project.save()
    open_pairs = QueuePair.objects.filter(project=project, needed__gt=0)
    needed = sum(open_pairs.values_list("needed", flat=True))
    print(f"{SLUG}: 5,000 queries, 1,000,000 judgement events, built in "
          f"{time.perf_counter() - started:.0f} s; judges_per_pair={args.judges_per_pair}: "
          f"{open_pairs.count():,} open pairs need {needed:,} grades")  # fmt: skip
    raters = raters_named("queue_end_", RATERS)
    started = time.perf_counter()
    refused, ran_out = grade_what_the_queue_hands_out(raters, project)
    seconds = time.perf_counter() - started
    graded = Judgement.objects.filter(query__project=project, rater__in=raters).count()
    print(f"{RATERS} raters: {graded:,} grades in {seconds:.1f} s = {graded / seconds:.0f}/s")
    left = open_pairs.count()
    leases = QueueLease.objects.filter(query__project=project).count()
    clean, report = derived_state_clean(SLUG)
    print(f"refused: {len(refused)}; told the queue was empty: {len(ran_out)} of {RATERS}; "
          f"open pairs left: {left}; leases left: {leases}")  # fmt: skip
    print(report[-600:])
    ok = not refused and len(ran_out) == RATERS and left == 0 and leases == 0 and clean
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
