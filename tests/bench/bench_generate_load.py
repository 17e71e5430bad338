"""Benchmark generate_load at the size of issue 16: 10,000 queries x 100 hits x 3 result
lists and 1,000,000 judgements: a first project, a second one while the first is there,
and the second again with the indexes kept.

Run as ``.venv/bin/python tests/bench/bench_generate_load.py`` (``BENCH_QUERIES`` and
``BENCH_JUDGEMENTS`` make it smaller). It is not a pytest test, and it works on the
development database, in projects of its own that it deletes at the end. Target: under
60 s each way (before issue 16 the per-statement triggers probed indexes the load had
dropped: 500 queries took 213 s). After each build, ``derived_state --check`` must find
every derived table equal to its recomputation from the log.

- "first": on a fresh database the tables hold fewer rows than the load brings, so
  their secondary indexes are dropped and built again once;
- "second": built while the first is still there, so the tables hold at least as many
  rows as the load; while they hold less than twice as many (five times, for the
  judgements), building every index again still costs less than adding each row to
  them (``judgements.bulk.rebuild_pays``);
- "second, kept": the second again with ``--keep-indexes`` (other sessions can keep
  using the tables meanwhile), every row added to every index as it comes.

The hits table's size before each build is printed: on a development database that
holds the other benchmarks' projects, the tables are not empty even for the first.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from helpers import derived_state_clean  # noqa: E402

from judgements import bulk  # noqa: E402
from judgements.models import Hit  # noqa: E402

QUERIES = int(os.environ.get("BENCH_QUERIES", 10_000))
JUDGEMENTS = int(os.environ.get("BENCH_JUDGEMENTS", 1_000_000))
TARGET_SECONDS = 60.0
SLUGS = ("bench-load-first", "bench-load-second")
CASES = (
    ("first", "bench-load-first", False),
    ("second", "bench-load-second", False),
    ("second, kept", "bench-load-second", True),
)


@transaction.atomic
def drop(slug: str) -> None:
    bulk.skip_foreign_key_checks()
    bulk.project_delete_fast(slug)


def build(slug: str, *, keep_indexes: bool) -> float:
    started = time.perf_counter()
    call_command(
        "generate_load",
        queries=QUERIES,
        hits_per_query=100,
        result_lists=3,
        judgements=JUDGEMENTS,
        slug=slug,
        keep_indexes=keep_indexes,
        stdout=sys.stdout,
    )
    return time.perf_counter() - started


def check(slug: str) -> tuple[bool, float]:
    started = time.perf_counter()
    clean, output = derived_state_clean(slug)
    print(output)
    return clean, time.perf_counter() - started


def main() -> None:
    for slug in SLUGS:
        drop(slug)
    results = []
    for label, slug, keep_indexes in CASES:
        if keep_indexes:
            drop(slug)  # The same size of tables as the case before.
            bulk.analyze(Hit)
        before, load = bulk.estimated_rows(Hit), os.getloadavg()[0]
        seconds = build(slug, keep_indexes=keep_indexes)
        clean, checked = check(slug)
        results.append((label, before, load, seconds, clean, checked))
    for slug in SLUGS:
        drop(slug)
    print(f"\ngenerate_load, {QUERIES:,} queries x 100 hits x 3 lists, {JUDGEMENTS:,} judgements")
    for label, before, load, seconds, clean, checked in results:
        verdict = "ok" if seconds < TARGET_SECONDS else f"SLOWER than {TARGET_SECONDS:.0f} s"
        state = "clean" if clean else "DIFFERENCES"
        print(
            f"  {label:<13} (hits table held ~{before:>9,} rows, load {load:4.1f})"
            f" {seconds:7.1f} s  {verdict}; derived_state --check {state} in {checked:.1f} s"
        )


if __name__ == "__main__":
    main()
