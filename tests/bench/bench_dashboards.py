"""Benchmark recomputation and the dashboards on a large generated project.

Run as ``.venv/bin/python tests/bench/bench_dashboards.py`` (not a pytest test). It
sets Django up itself and uses the development database (or ``DATABASE_URL``). The
project ``generated-load`` is built first if it is missing, with
``generate_load --queries 10000 --hits-per-query 100 --judgements 1000000``.

It times, in one process and printing every figure:

1. one result list recomputed end to end from PostgreSQL
   (``metrics.evaluate.result_list_evaluate``, which reads the packed rows) beside the
   core's own time on the same arrays (``ndcg_batch`` alone), then the same list from
   the judgement log, as for a past moment;
2. ``metrics_rebuild`` over 30 daily buckets (this also brings the stored series up
   to date, which the dashboards read);
3. the overview, the per-query table, a query's detail and the comparison of the
   two newest lists: server time through Django's test ``Client`` in-process,
   after one warm-up, split into SQL (with the slowest statements) and the rest;
   the overview and the table with k changed (no stored series), and the overview as
   of a past moment (halfway through the log: its grades are replayed from the log);
   then the parts of the overview and the table on their own.

Where the time goes; the budgets themselves are bench_budgets'. Nothing is cached
between runs: every timed call reads PostgreSQL again, except the comparison's
test and interval and the overview's intervals, which are cached by the values they
were drawn from (the first request, printed as the warm-up, pays for the
resampling; "bootstrap intervals" among the parts is that cost).
"""

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from contextlib import contextmanager
from functools import partial
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.migrations.executor import MigrationExecutor  # noqa: E402
from django.db.models import Max, Min  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402
from helpers import wait_until_quiet  # noqa: E402

from config import pgcopy  # noqa: E402
from judgements import query_log  # noqa: E402
from judgements.models import Judgement, Project, QueryGrades  # noqa: E402
from metrics import (  # noqa: E402
    buckets,
    dashboards,
    evaluate,
    history,
    log_replay,
    packed_reads,
    selectors,
    tasks,
)
from metrics.core import ndcg_batch  # noqa: E402
from metrics.dashboards.evaluations import list_evaluations  # noqa: E402
from metrics.dashboards.overview import _intervals as overview_intervals  # noqa: E402
from metrics.dashboards.overview import pool_progress, stored_summaries  # noqa: E402
from metrics.evaluate import INTERVAL_RESAMPLES  # noqa: E402
from metrics.models import StaleQuery  # noqa: E402
from metrics.registry import project_spec  # noqa: E402
from metrics.sources import Source, freshness, grades_freshness  # noqa: E402

PAGE_TARGET_MS = 300.0
BENCH_USER = "bench_analyst"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slug", default="generated-load")
    parser.add_argument("--days", type=int, default=30, help="daily buckets to rebuild")
    parser.add_argument("--skip-rebuild", action="store_true", help="keep the stored series")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per page")
    args = parser.parse_args()
    if _unapplied_migrations():
        print(f"Unapplied migrations: {', '.join(_unapplied_migrations())}.")
        print("Run `.venv/bin/python manage.py migrate` first.")
        return 1
    project = _project(args.slug)
    print(wait_until_quiet())
    print(_describe(project))
    _bench_recompute(project)
    if not args.skip_rebuild:
        _bench_rebuild(project, args.days)
    _bench_pages(project, args.repeat)
    return 0


def _unapplied_migrations() -> list[str]:
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    # Only the apps the dashboards read matter here.
    return [
        f"{migration.app_label} {migration.name}"
        for migration, _ in plan
        if migration.app_label in ("judgements", "metrics")
    ]


def _project(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        print(f"{slug} is missing: building it (about a minute on an idle machine) ...")
        call_command(
            "generate_load",
            queries=10_000,
            hits_per_query=100,
            judgements=1_000_000,
            slug=slug,
        )
        project = Project.objects.get(slug=slug)
        # Vacuumed and written out now, as a project that has lived a day would be:
        # otherwise the database works through the million new rows while the figures
        # below are timed (the load average was 3.5-3.8 on 2 CPUs in two runs).
        start = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")
            cursor.execute("CHECKPOINT")
        print(f"Vacuumed the database and wrote it out in {time.perf_counter() - start:.1f} s.")
    return project


def _describe(project) -> str:
    lists = project.result_lists.count()
    judgements = Judgement.objects.for_project(project).count()
    return (
        f"Project {project.slug}: {project.queries.count():,} queries, {lists} result lists, "
        f"{judgements:,} judgement events; metric {project_spec(project).name!r}\n"
        f"Database: {connection.settings_dict['NAME']} on {connection.settings_dict['HOST']}; "
        f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} on "
        f"{os.cpu_count()} CPUs"
    )


def timed(function, repeat: int = 1):
    """Run ``function`` ``repeat`` times; return (its last result, every time in s)."""
    result, times = None, []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return result, times


@contextmanager
def sql_clock():
    """Sum the time spent in cursor.execute (PostgreSQL's work and the rows' transfer),
    in all and per statement (its first words)."""
    spent = {"seconds": 0.0, "queries": 0, "statements": {}}

    def wrapper(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            seconds = time.perf_counter() - start
            spent["seconds"] += seconds
            spent["queries"] += 1
            statement = " ".join(sql.split())[:90]
            spent["statements"][statement] = spent["statements"].get(statement, 0.0) + seconds

    with connection.execute_wrapper(wrapper):
        yield spent


def _bench_recompute(project) -> None:
    spec = project_spec(project)
    result_list = project.result_lists.order_by("captured_at").first()
    as_of = timezone.now()
    depth = spec.k if spec.unjudged == "zero" and spec.ideal == "judged" else None
    print(f"\n== Recompute {result_list.name} ({spec.name}) ==")
    if not grades_freshness(project.pk, as_of=as_of).derived:
        print("  the packed grades do not hold as of now (an event is dated later): stopping")
        return

    def end_to_end():
        return evaluate.result_list_evaluate(result_list, spec, as_of=as_of)

    def packed_read():
        return packed_reads.stored_result_list_grades(
            result_list.pk, project.pk, as_of=as_of, policy=spec.consensus, depth=depth
        )

    params = {
        "project": project.pk,
        "as_of": as_of,
        "result_list": result_list.pk,
        "queries": None,
        "depth": depth,
        "policy": spec.consensus,
        "chunk": packed_reads.CHUNK_QUERIES,
    }
    grades = packed_read()  # Fills what is stale (after a load, every query) first.
    # Each round times every part once, in turn, so that the machine's load weighs on
    # all of them alike (it is shared); the ratio takes the best of each.
    rounds = 15
    spent = {name: [] for name in ("end to end", "packed read", "copy", "core")}
    for _ in range(rounds):
        spent["end to end"] += timed(end_to_end)[1]
        spent["packed read"] += timed(packed_read)[1]
        spent["copy"] += timed(lambda: pgcopy.copy_fields(packed_reads.STORED_RANKED_SQL, params))[
            1
        ]
        core, core_s = timed(lambda: _core(grades, spec))
        spent["core"] += core_s
    best, core_best = min(spent["end to end"]), min(spent["core"])
    print(
        f"  queries: {len(grades.query_ids):,}; hits read: {len(grades.ranked_grades):,}; "
        f"judged grades read: {len(grades.judged_grades):,}"
    )
    print(f"  end to end (result_list_evaluate), best of {rounds}  {best * 1000:9.1f} ms")
    read, copy = (min(spent[name]) * 1000 for name in ("packed read", "copy"))
    print(f"    packed read alone: {read:.1f} ms, of which the COPY (SQL and transfer) "
          f"{copy:.1f} ms, the rest unpacking")  # fmt: skip
    print(f"  metrics.core ndcg_batch alone, best of {rounds}    {core_best * 1000:9.1f} ms")
    print(f"  (mean NDCG {core.mean:.4f} over {len(core.ndcg):,} queries)")
    _bench_recompute_from_log(project, result_list, spec, as_of, depth, core_best)


def _bench_recompute_from_log(project, result_list, spec, as_of, depth, core_best) -> None:
    """The same list from the judgement log, as a past moment is computed: its grades
    from the packed log (judgements.query_log), and replayed from the log itself."""
    grades_at = partial(selectors.logged_pair_grades, project.pk, as_of=as_of)
    _, read_s = timed(lambda: query_log.spans(project.pk))
    pairs, pairs_s = timed(lambda: grades_at(policy=spec.consensus), repeat=3)
    grades, hits_s = timed(
        lambda: packed_reads.result_list_grades(result_list.pk, pairs, depth=depth)
    )
    _, core_s = timed(lambda: _core(grades, spec), repeat=5)
    total = min(pairs_s) + hits_s[0] + min(core_s)
    print(f"  from the log instead (any past moment): {total * 1000:.0f} ms "
          f"({total / core_best:.0f}x the core)")  # fmt: skip
    print(f"    {len(pairs.grades):,} pairs' grades from the packed log: "
          f"{min(pairs_s) * 1000:.0f} ms (the spans' read alone: {read_s[0] * 1000:.0f} ms); "
          f"documents and lookup: "
          f"{hits_s[0] * 1000:.0f} ms")  # fmt: skip
    log = partial(log_replay.sorted_log, project.pk, until=as_of)
    _, replay_s = timed(lambda: log_replay.replayed_pair_grades(log(), as_of, spec.consensus))
    print(f"    the same grades replayed from the log itself: {replay_s[0] * 1000:.0f} ms")


def _core(grades, spec):
    returned = spec.ideal == "returned"
    return ndcg_batch(
        grades.ranked_grades,
        grades.offsets,
        k=spec.k,
        ideal_grades=grades.ranked_grades if returned else grades.judged_grades,
        ideal_offsets=grades.offsets if returned else grades.judged_offsets,
        gain=spec.gain,
        discount=spec.discount,
        ideal_depth=spec.ideal_depth,
        unjudged=spec.unjudged,
    )


def _bench_rebuild(project, days: int) -> None:
    last = Judgement.objects.for_project(project).order_by("-created_at").first().created_at
    until = buckets.bucket_end(last, "day")
    since = until - dt.timedelta(days=days - 1)
    print(
        f"\n== rebuild_metrics over {days} daily buckets ({since:%Y-%m-%d} to {until:%Y-%m-%d}) =="
    )
    _, seconds = timed(
        lambda: history.metrics_rebuild(project=project, since=since, until=until, every="day")
    )
    lists = project.result_lists.count()
    print(f"  {seconds[0]:.1f} s, {seconds[0] / days:.2f} s per bucket ({lists} result lists)")


def up_to_date(project, *, computed: bool = True) -> None:
    """What the refresh task does after a load or grades (``project_metrics_refresh``):
    the packed rows filled, then the stored series; the pages then read both. Runs when
    a mark is left or, with ``computed`` False, when no point is stored yet."""
    stale = StaleQuery.objects.filter(query__project=project).count()
    stale += QueryGrades.objects.filter(project=project, stale=True).count()
    if stale or not computed:
        written, seconds = timed(lambda: tasks.project_metrics_refresh.call(project.pk))
        print(f"  project_metrics_refresh of {stale} stale marks: {seconds[0]:.1f} s, "
              f"{written:,} points")  # fmt: skip


def _bench_pages(project, repeat: int) -> None:
    client = Client(HTTP_HOST="localhost")
    client.force_login(analyst())
    result_list = project.result_lists.order_by("captured_at").last()
    print(f"\n== Pages (server time in-process, warm-up then best and median of {repeat}) ==")
    up_to_date(project)
    lists = list(project.result_lists.all())
    spec = project_spec(project)
    fresh = freshness(project, spec, as_of=None)
    print(f"  values come from {fresh.lists.label} (metrics.sources)")
    if stored_summaries(spec, lists, fresh) is not None:
        print("  the overview reads each list's stored overall point (mean and interval)")
    else:
        print("  the overview computes its intervals from the per-query values")
    query = project.queries.order_by("pk").first()
    pages = {
        "overview": f"/metrics/{project.slug}/",
        "per-query table": f"/metrics/{project.slug}/{result_list.pk}/queries/",
        "query detail": f"/metrics/{project.slug}/{result_list.pk}/queries/{query.pk}/",
        "compare": f"/metrics/{project.slug}/compare/",
    }
    for name, url in pages.items():
        _bench_page(client, name, url, repeat if name != "compare" else 1)
    # Parameters changed on the page: no stored series, so every list is computed from
    # its packed grades, and its interval resampled.
    _bench_page(client, "overview @5", f"{pages['overview']}?k=5", repeat)
    _bench_page(client, "table @5", f"{pages['per-query table']}?k=5", repeat)
    # A past moment: halfway through the log, so that events are dated after it and the
    # grades are replayed from the judgement log (a moment after the last event would
    # read the packed rows, as "now" does).
    moment = past_moment(project)
    assert freshness(project, spec, as_of=moment).lists == Source.LOG, moment
    past = f"{pages['overview']}?as_of={moment:%Y-%m-%dT%H:%M:%S}"
    _bench_page(client, "overview as of", past, repeat)
    _bench_parts(project, result_list, repeat)


def _bench_parts(project, result_list, repeat) -> None:
    """Where a page's time goes: reading the values, the intervals, the rest of its selector."""
    spec = project_spec(project)
    lists = list(project.result_lists.order_by("captured_at", "name"))
    _, rule = timed(lambda: freshness(project, spec, as_of=None), repeat)
    fresh = freshness(project, spec, as_of=None)
    evaluations, read = timed(
        lambda: list_evaluations(project, spec, fresh=fresh, result_lists=lists), repeat
    )
    _, overall = timed(lambda: stored_summaries(spec, lists, fresh), repeat)
    # Drawn again each time: the pages reuse an interval drawn from the same values.
    _, intervals = timed(lambda: (cache.clear(), overview_intervals(evaluations)), repeat)
    _, pool = timed(lambda: pool_progress(project, fresh=fresh), repeat)
    _, overview = timed(lambda: dashboards.project_overview(project, spec, as_of=None), repeat)
    _, table = timed(
        lambda: dashboards.query_table(
            project, result_list, spec, as_of=None, sort="ndcg", text="", page=None
        ),
        repeat,
    )
    print("  parts (best of each):")
    print(f"    freshness rule (metrics.sources) {min(rule) * 1000:5.1f} ms")
    print(f"    per-query values of {len(lists)} lists {min(read) * 1000:7.1f} ms")
    print(f"    stored overall points      {min(overall) * 1000:7.1f} ms "
          "(mean, interval, coverage: what the current overview reads)")  # fmt: skip
    print(f"    bootstrap intervals        {min(intervals) * 1000:7.1f} ms "
          f"({INTERVAL_RESAMPLES} resamples; only when not stored)")  # fmt: skip
    print(f"    pool progress              {min(pool) * 1000:7.1f} ms")
    print(f"    overview selector in all   {min(overview) * 1000:7.1f} ms")
    print(f"    query table selector       {min(table) * 1000:7.1f} ms")


def _bench_page(client, name, url, repeat) -> None:
    (response,), warm_up = timed(lambda: (client.get(url),))
    assert response.status_code == 200, (url, response.status_code)
    with sql_clock() as sql:
        _, times = timed(lambda: client.get(url), repeat)
    best, median = min(times) * 1000, statistics.median(times) * 1000
    verdict = "met" if best <= PAGE_TARGET_MS else "NOT met"
    first = warm_up[0] * 1000
    print(f"  {name:16} best {best:7.1f} ms, median {median:7.1f} ms; "
          f"target <= {PAGE_TARGET_MS:g} ms {verdict} (warm-up {first:.0f} ms)")  # fmt: skip
    per_request = sql["seconds"] * 1000 / repeat
    print(f"  {'':16} per request: {sql['queries'] / repeat:.0f} SQL queries taking "
          f"{per_request:.1f} ms (execute and transfer), {median - per_request:.1f} ms in Python "
          f"(fetching rows, numpy, bootstrap, template)")  # fmt: skip
    slowest = sorted(sql["statements"].items(), key=lambda item: -item[1])[:3]
    for statement, seconds in slowest:
        print(f"  {'':16}   {seconds * 1000 / repeat:6.1f} ms  {statement}")


def past_moment(project) -> dt.datetime:
    """The whole second halfway between the project's first and last judgement."""
    events = Judgement.objects.for_project(project).aggregate(
        first=Min("created_at"), last=Max("created_at")
    )
    middle = events["first"] + (events["last"] - events["first"]) / 2
    return middle.replace(microsecond=0)


def analyst() -> User:
    """An analyst to log in as; created once in the database the benchmark runs on."""
    user, _ = User.objects.get_or_create(username=BENCH_USER)
    user.groups.add(Group.objects.get(name="analyst"))
    return user


if __name__ == "__main__":
    sys.exit(main())
