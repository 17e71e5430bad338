"""Benchmark the search log: ingest of 1M events, the daily metrics, the overview's panel.

Run as ``.venv/bin/python tests/bench/bench_searchlogs.py`` (not a pytest test). It
sets Django up itself and uses the development database (or ``DATABASE_URL``). The
project ``bench-searchlog`` is built first if it is missing, with ``generate_load
--queries 2000 --hits-per-query 10 --judgements 20000``; its search log is replaced
on every run.

It times, in one process and printing every figure with the load average:

1. generating the log (a fixed seed: equal bytes on every run), not part of a figure;
2. ``searchlogs.services.search_log_ingest``, the service the API and the command
   call, over the whole log as one batch (after ``VACUUM``, into a table without
   the last run's events): events per second, with parsing alone timed too; and,
   as the ceilings, a raw ``COPY`` of the very same rows (the bytes the service
   sends, in its order) into a new table like the events table (same columns and
   indexes), no parsing or checks: a temporary table, which the issue's target
   (ingest at >= 50 % of its rate) is set against, and a logged table, which pays
   the write-ahead log and shared buffers that the events table does. The ingest
   and the peers take turns ``--rounds`` times (3): best and median of each, and
   the CPU each took in this process and in PostgreSQL (read from /proc);
3. sending the same batch again (every event skipped by id);
4. the daily metrics: ``searchlogs.engines.postgres_online`` (one SQL query over the
   events, metrics.core.online) by day, by query, by day and query;
5. the overview page's server time (Django's test ``Client``, in-process, after a
   warm-up): with the online figures computed (cache cleared before each run), their
   own share (``online_overview`` alone), with them cached (as between two batches),
   and, as the peer, the same page without the panel.
"""

import argparse
import io
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPOSITORY), str(Path(__file__).resolve().parent)]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from bench_dashboards import analyst, timed  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from summary import load_average, record  # noqa: E402

from judgements.models import Project  # noqa: E402
from searchlogs.batches import Batch  # noqa: E402
from searchlogs.columns import search_log_columns  # noqa: E402
from searchlogs.dashboards import online_overview  # noqa: E402
from searchlogs.engines import postgres_online  # noqa: E402
from searchlogs.services import (  # noqa: E402
    COLUMNS,
    _collector_paused,
    copy_text,
    search_log_ingest,
)

SLUG = "bench-searchlog"
START = datetime(2026, 10, 1, tzinfo=UTC).timestamp()
CHUNK = 1 << 20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of the reads")
    parser.add_argument("--reads-only", action="store_true", help="keep the stored log")
    parser.add_argument("--ingest-only", action="store_true", help="time the ingest alone")
    parser.add_argument("--rounds", type=int, default=3, help="timed ingests, each with its peers")
    args = parser.parse_args()
    project = _project()
    print(_load(f"Project {SLUG}: {project.queries.count():,} queries"))
    if not args.reads_only:
        started = time.perf_counter()
        log = generated_log(project, args.events, args.days, args.seed)
        lines = log.count(b"\n")
        print(f"Generated {lines:,} events ({len(log) / 1e6:.0f} MB of JSON Lines, seed "
              f"{args.seed}) in {time.perf_counter() - started:.1f} s")  # fmt: skip
        _bench_ingest(project, log, lines, args.rounds)
    if args.ingest_only:
        return 0
    _bench_metrics(project, args.repeat)
    _bench_page(project, args.repeat)
    return 0


def _load(text: str) -> str:
    loads = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{text}; load average {loads} on {os.cpu_count()} CPUs"


def _project() -> Project:
    project = Project.objects.filter(slug=SLUG).first()
    if project is None:
        print(f"{SLUG} is missing: building it ...")
        call_command(
            "generate_load", queries=2000, hits_per_query=10, judgements=20_000, slug=SLUG
        )
        project = Project.objects.get(slug=SLUG)
    return project


def generated_log(project: Project, events: int, days: int, seed: int) -> bytes:
    """About ``events`` events: sessions of 1-4 pages, clicks by rank, a dwell per click."""
    rng = np.random.default_rng(seed)
    texts = sorted(project.queries.values_list("text", flat=True))
    texts += [f"unknown query {n}" for n in range(max(len(texts) // 30, 1))]
    out, count, session = io.StringIO(), 0, 0
    while count < events:
        session += 1
        count += _session(out, rng, session, texts, days)
    return out.getvalue().encode()


def _session(out, rng, session: int, texts: list[str], days: int) -> int:
    moment = START + rng.integers(0, days * 86_400)
    written = 0
    for page in range(int(rng.integers(1, 5))):
        text = texts[int(rng.integers(len(texts)))]
        page_id = f"s{session}p{page}"
        answered = "true" if rng.random() < 0.05 else "false"
        results = f'["D{page}1", "D{page}2", "D{page}3"]'
        out.write(f'{{"type": "impression", "id": "{page_id}", "session": "s{session}", '
                  f'"time": "{_iso(moment)}", "query": {json.dumps(text)}, '
                  f'"results": {results}, "answered": {answered}}}\n')  # fmt: skip
        written += 1
        for rank in np.flatnonzero(rng.random(3) < np.array([0.4, 0.2, 0.1])) + 1:
            moment += float(rng.integers(1, 10))
            click = f"{page_id}c{rank}"
            out.write(f'{{"type": "click", "id": "{click}", "session": "s{session}", '
                      f'"time": "{_iso(moment)}", "document": "D{page}{rank}", '
                      f'"rank": {rank}}}\n')  # fmt: skip
            seconds = round(float(rng.exponential(20)), 1)
            moment += seconds
            out.write(f'{{"type": "dwell", "id": "{click}d", "session": "s{session}", '
                      f'"time": "{_iso(moment)}", "click": "{click}", '
                      f'"seconds": {seconds}}}\n')  # fmt: skip
            written += 2
        moment += float(rng.integers(5, 60))
    return written


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(round(seconds, 3), UTC).isoformat()


def _chunks(data: bytes):
    return (data[start : start + CHUNK] for start in range(0, len(data), CHUNK))


def _bench_ingest(project: Project, log: bytes, lines: int, rounds: int) -> None:
    print(f"\n== Ingest (one batch, one transaction; best and median of {rounds}) ==")
    started = time.perf_counter()
    with _collector_paused():  # As search_log_ingest reads.
        parsed = sum(len(events) for events, _ in search_log_columns(_chunks(log)))
    parse = time.perf_counter() - started
    print(_load(f"  parsing alone          {parse:6.1f} s  {parsed / parse:9,.0f} events/s"))
    rows = _service_rows(project, log)
    ingests, peers, result = [], {False: [], True: []}, None
    # The ingest and its peers take turns, so that a change of the machine's load
    # weighs on both alike.
    for _ in range(rounds):
        result, seconds, cpu = _ingest_anew(project, log)
        assert result.created == lines, result
        ingests.append((seconds, cpu))
        for logged in (False, True):
            server = _server_cpu()
            peers[logged].append((_raw_copy(rows, logged=logged), _server_cpu() - server))
    ingest = _times_report("search_log_ingest", ingests, lines)
    print(f"  ({result.kinds}; {result.unmatched:,} pages matched no query)")
    for logged in (False, True):
        table = "a logged table" if logged else "a temporary table"
        copy = _times_report(f"peer: raw COPY into {table}", peers[logged], lines)
        share = [peer / mine for peer, mine in zip(copy, ingest, strict=True)]
        target = "" if logged else " (target: >= 50 %)"
        print(f"    search_log_ingest: {share[0]:.0%} of this COPY's rate at best,"
              f" {share[1]:.0%} of the medians{target}")  # fmt: skip
        if not logged:
            record(
                f"search-log ingest of {lines:,} events / raw COPY (medians)",
                f"{share[1]:.0%}", ">= 50 %", share[1] >= 0.5, load_average(),
            )  # fmt: skip
    print("  (the same rows as search_log_ingest writes, without parsing or checks, into a"
          " new table like the events table: its columns and indexes)")  # fmt: skip
    started = time.perf_counter()
    again = search_log_ingest(project=project, upload=_chunks(log))
    resend = time.perf_counter() - started
    assert again.created == 0 and again.already_stored == lines
    print(_load(f"  the same batch again   {resend:6.1f} s  {lines / resend:9,.0f} events/s "
                "(all skipped by id)"))  # fmt: skip


def _ingest_anew(project: Project, log: bytes):
    """search_log_ingest of ``log`` into the project cleared of its events; the result,
    seconds, and CPU seconds (this process's, PostgreSQL's)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM searchlogs_searchevent WHERE project_id = %s", [project.pk])
        # The last run's events are dead but still in the indexes, under the very ids
        # about to be written again: each would cost the unique index a visit to the
        # dead row, which a log of new events never pays (nor the peers' new tables).
        cursor.execute("VACUUM searchlogs_searchevent")
    started, client, server = time.perf_counter(), time.process_time(), _server_cpu()
    result = search_log_ingest(project=project, upload=_chunks(log))
    seconds = time.perf_counter() - started
    return result, seconds, (time.process_time() - client, _server_cpu() - server)


def _times_report(name: str, runs: list[tuple], lines: int) -> tuple[float, float]:
    """Print the best and median seconds of ``runs`` (seconds, CPU), with the best
    run's CPU; return the two."""
    best, median = min(runs)[0], statistics.median(seconds for seconds, _ in runs)
    cpu = min(runs)[1]
    where = (f"this process {cpu[0]:.1f} s, PostgreSQL's {cpu[1]:.1f} s"
             if isinstance(cpu, tuple) else f"PostgreSQL's {cpu:.1f} s")  # fmt: skip
    print(_load(f"  {name}: best {best:.1f} s ({lines / best:,.0f} events/s),"
                f" median {median:.1f} s"))  # fmt: skip
    print(f"    (CPU of the best: {where})")
    return best, median


def _server_cpu() -> float:
    """CPU seconds this connection's PostgreSQL process has used (NaN if it runs on
    another machine): the database's share of a step, whatever else runs."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid(), inet_server_addr()")
        pid, address = cursor.fetchone()
    stat = Path(f"/proc/{pid}/stat")
    if address not in (None, "127.0.0.1", "::1") or not stat.exists():
        return float("nan")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _service_rows(project: Project, log: bytes) -> bytes:
    """The rows search_log_ingest COPYs for ``log``, in COPY's text format."""
    batch = Batch(project)
    with _collector_paused():
        return b"".join(
            copy_text(project.pk, events, *batch.take(events))
            for events, _ in search_log_columns(_chunks(log))
        )


def _raw_copy(rows: bytes, *, logged: bool) -> float:
    """COPY ``rows`` into a new table like the events table; return seconds.

    A temporary table (the ceiling the issue's target was set against) is written
    without PostgreSQL's write-ahead log and in this session's own buffers; the
    events table, like any logged table, cannot be: the second table shows that
    cost, which any write of the events table pays.
    """
    columns = ", ".join(COLUMNS)
    kind, end = ("TABLE", "") if logged else ("TEMP TABLE", " ON COMMIT DROP")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"CREATE {kind} peer_events (LIKE searchlogs_searchevent INCLUDING ALL){end}"
        )
        started = time.perf_counter()
        cursor.cursor.copy_expert(f"COPY peer_events ({columns}) FROM STDIN", io.BytesIO(rows))
        seconds = time.perf_counter() - started
        transaction.set_rollback(True)
    return seconds


def _bench_metrics(project: Project, repeat: int) -> None:
    print(f"\n== Daily metrics (best and median of {repeat}) ==")
    for by in (("day",), ("query",), ("day", "query")):
        table, times = timed(lambda by=by: postgres_online(project, by=by), repeat)
        _report(f"postgres_online by {'+'.join(by)} ({len(table):,} rows)", times)


def _report(name: str, times: list[float]) -> None:
    best, median = min(times) * 1000, statistics.median(times) * 1000
    print(_load(f"  {name:42} best {best:8.1f} ms, median {median:8.1f} ms"))


def _bench_page(project: Project, repeat: int) -> None:
    print(f"\n== Overview page (server time in-process, warm-up then {repeat} runs) ==")
    client = Client(HTTP_HOST="localhost")
    client.force_login(analyst())
    url = f"/metrics/{project.slug}/"
    response = client.get(url)
    assert response.status_code == 200 and b'id="online-chart"' in response.content
    _, cold = timed(lambda: (cache.clear(), client.get(url)), repeat)
    _report("overview, online figures computed", cold)
    _, panel = timed(lambda: (cache.clear(), online_overview(project)), repeat)
    _report("  of which online_overview", panel)
    _, warm = timed(lambda: client.get(url), repeat)
    _report("overview, online figures cached", warm)
    cache.clear()
    _, page = timed(lambda: _without_panel(client, url), repeat)
    _report("peer: overview without the online panel", page)


def _without_panel(client, url):
    with mock.patch("metrics.views.online_overview", return_value=None):
        return client.get(url)


if __name__ == "__main__":
    sys.exit(main())
