"""Benchmark the online metrics' engines, and the UBI ingest against a raw COPY.

Run as ``.venv/bin/python tests/bench/bench_online_engines.py [--sizes 1e6 1e7 1e8]``
(not a pytest test). It uses the development database (or ``DATABASE_URL``) and a
project ``bench-online`` (500 queries) that it builds if missing; its log is replaced
for every size. For each size, a log generated with a fixed seed
(tests/searchlogs/generated.py), in chunks of at most 5M events:

- PostgreSQL: the events loaded by COPY (the rows search_log_ingest writes), ANALYZEd,
  then ``searchlogs.engines.postgres_online`` by day and query (the finest grouping);
- DuckDB: the same events as Parquet files (one per chunk), ``duckdb_online``, with its
  row checks timed apart;
- Spark local mode (``local[*]``): ``spark_online`` on the same files, its session
  started before the clock runs.

Each figure is printed with the load average, and as seconds per 10^6 events. The target
(issue 41): DuckDB over Parquet faster than PostgreSQL over the ingested events at 10^7
(or the largest size run). Then the UBI ingest: a generated log written as UBI NDJSON
(query records and click events with their dwell times), ``search_log_ingest(format=
"ubi")`` against a raw COPY of the very rows it writes into a temporary table like the
events table (target: >= 50 % of the COPY's rate, as our own format's).
"""

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPOSITORY), str(Path(__file__).resolve().parent)]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
import orjson  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from django.db import connection  # noqa: E402
from summary import load_average, record  # noqa: E402

from judgements.models import Project, Query  # noqa: E402
from searchlogs.batches import Batch  # noqa: E402
from searchlogs.engines import duckdb_online, postgres_online, query_matcher  # noqa: E402
from searchlogs.parquet import check_rows, parquet_log  # noqa: E402
from searchlogs.services import (  # noqa: E402
    COLUMNS,
    _collector_paused,
    copy_text,
    search_log_ingest,
)
from searchlogs.ubi import UbiBatch  # noqa: E402
from tests.searchlogs.generated import copy_rows, generated_log, log_table  # noqa: E402

SLUG = "bench-online"
CHUNK = 5_000_000
BY = ("day", "query")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7, 1e8])
    parser.add_argument("--engines", nargs="+", default=["postgresql", "duckdb", "spark"])
    parser.add_argument("--ubi-events", type=int, default=1_000_000)
    args = parser.parse_args()
    project = _project()
    texts = list(project.queries.order_by("id").values_list("text", flat=True))
    texts += [f"unknown query {n}" for n in range(50)]
    rows = []
    for size in map(int, args.sizes):
        rows.append(_bench_size(project, texts, size, args.engines))
    _table(rows)
    if args.ubi_events:
        _bench_ubi(project, texts, args.ubi_events)
    return 0


def _project() -> Project:
    project, created = Project.objects.get_or_create(slug=SLUG, defaults={"name": SLUG})
    if created:
        Query.objects.bulk_create([Query(project=project, text=f"query {n}") for n in range(500)])
    return project


def _load(text: str) -> str:
    return f"{text}; load average {load_average()} on {os.cpu_count()} CPUs"


def _bench_size(project, texts, size: int, engines: list[str]) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="bench-online-"))
    ids = dict(project.queries.values_list("text", "id"))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM searchlogs_searchevent WHERE project_id = %s", [project.pk])
    events, started = 0, time.perf_counter()
    for number, first in enumerate(range(0, size, CHUNK)):
        log = generated_log(min(CHUNK, size - first), texts, seed=number, first=first)
        events += len(log)
        pq.write_table(log_table(log), folder / f"part-{number:03d}.parquet",
                       row_group_size=1_000_000)  # fmt: skip
        if "postgresql" in engines:
            with connection.cursor() as cursor:
                cursor.cursor.copy_expert(
                    f"COPY searchlogs_searchevent ({', '.join(COLUMNS)}) FROM STDIN",
                    io.BytesIO(copy_rows(log, project.pk, ids)),
                )
        del log
    if "postgresql" in engines:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE searchlogs_searchevent")
    megabytes = sum(path.stat().st_size for path in folder.iterdir()) / 1e6
    took = time.perf_counter() - started
    print(_load(f"\n== {events:,} events: generated and loaded in {took:.0f} s"
                f" ({megabytes:,.0f} MB of Parquet) =="))  # fmt: skip
    row = {"events": events}
    files = parquet_log("ours", str(folder))
    matcher = query_matcher(project)
    tables = {}
    if "postgresql" in engines:
        tables["postgresql"], row["postgresql"] = _timed(lambda: postgres_online(project, by=BY))
    if "duckdb" in engines:
        _, row["duckdb checks"] = _timed(lambda: check_rows(files))
        tables["duckdb"], row["duckdb"] = _timed(
            lambda: duckdb_online(files, by=BY, query_of=matcher))  # fmt: skip
    if "spark" in engines:
        from searchlogs.engines import spark_online
        from searchlogs.spark import spark_session

        spark_session()
        tables["spark"], row["spark"] = _timed(
            lambda: spark_online(files, by=BY, query_of=matcher, check=False))  # fmt: skip
    for name, seconds in row.items():
        if name != "events":
            print(_load(f"  {name:14} {seconds:8.1f} s  {seconds / events * 1e6:7.2f} s per 10^6"))
    _same(tables)
    shutil.rmtree(folder)
    return row


def _timed(work):
    started = time.perf_counter()
    result = work()
    return result, time.perf_counter() - started


def _same(tables: dict) -> None:
    names = list(tables)
    for name in names[1:]:
        for column in ("impressions", "clicks", "sessions", "successful_sessions"):
            assert np.array_equal(getattr(tables[names[0]], column),
                                  getattr(tables[name], column)), (name, column)  # fmt: skip
    if len(names) > 1:
        print(f"  ({', '.join(names)}: equal totals)")


def _table(rows: list[dict]) -> None:
    print("\n== Seconds (and seconds per 10^6 events), by day and query ==")
    engines = [name for name in ("postgresql", "duckdb", "duckdb checks", "spark")
               if any(name in row for row in rows)]  # fmt: skip
    print("| events | " + " | ".join(engines) + " |")
    print("|---" * (len(engines) + 1) + "|")
    for row in rows:
        cells = [f"{row[name]:.1f} s ({row[name] / row['events'] * 1e6:.2f})"
                 if name in row else "-" for name in engines]  # fmt: skip
        print(f"| {row['events']:,} | " + " | ".join(cells) + " |")
    both = [row for row in rows if "postgresql" in row and "duckdb" in row]
    if both:
        row = min(both, key=lambda row: abs(row["events"] - 1e7))
        ratio = row["postgresql"] / row["duckdb"]
        print(f"DuckDB over Parquet vs PostgreSQL at {row['events']:,}: {ratio:.2f}x faster")
        record(f"online metrics, DuckDB over Parquet vs PostgreSQL, {row['events']:,} events",
               f"{ratio:.2f}x", "> 1x", ratio > 1, load_average())  # fmt: skip


def _ubi_log(texts, events: int) -> bytes:
    """A generated log as UBI NDJSON: each page a query record, each click an event."""
    log = generated_log(events, texts, seed=9)
    out, pages = io.BytesIO(), {}
    iso = np.datetime_as_string(log.time_us.astype("datetime64[us]"), unit="us", timezone="UTC")
    dwell = {log.click[i]: log.seconds[i] for i in np.flatnonzero(log.type == 2).tolist()}
    for i in np.argsort(log.time_us, kind="stable").tolist():
        if log.type[i] == 0:
            pages[log.session[i]] = log.id[i]
            page = {"query_id": log.id[i], "user_query": log.query[i],
                    "client_id": log.session[i], "timestamp": iso[i]}  # fmt: skip
            out.write(orjson.dumps(page) + b"\n")
        elif log.type[i] == 1:
            attributes = {"object": {"object_id": log.document[i]},
                          "position": {"ordinal": int(log.rank[i])}}  # fmt: skip
            seconds = dwell.get(log.id[i])
            if seconds is not None and seconds == seconds:
                attributes["dwell_time"] = float(seconds)
            out.write(orjson.dumps({"action_name": "click", "query_id": pages[log.session[i]],
                                    "session_id": log.session[i], "timestamp": iso[i],
                                    "event_attributes": attributes}) + b"\n")  # fmt: skip
    return out.getvalue()


def _bench_ubi(project, texts, events: int) -> None:
    from bench_searchlogs import _raw_copy

    data = _ubi_log(texts, events)
    records = data.count(b"\n")
    print(_load(f"\n== UBI ingest: {records:,} records ({len(data) / 1e6:.0f} MB) =="))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM searchlogs_searchevent WHERE project_id = %s", [project.pk])
        cursor.execute("VACUUM searchlogs_searchevent")
    started = time.perf_counter()
    result = search_log_ingest(project=project, upload=[data], format="ubi")
    ingest = time.perf_counter() - started
    batch, reader = Batch(project), UbiBatch(project_id=project.pk)
    with _collector_paused():
        reader.read([data])
        rows = b"".join(copy_text(project.pk, block, *batch.take(block))
                        for block, _ in reader.blocks())  # fmt: skip
    copy = _raw_copy(rows, logged=False)
    share = copy / ingest
    print(_load(f"  search_log_ingest(format='ubi') {ingest:.1f} s ({result.created:,} events,"
                f" {result.rows / ingest:,.0f} events/s)"))  # fmt: skip
    print(_load(f"  raw COPY of the same rows into a temporary table {copy:.1f} s:"
                f" the ingest at {share:.0%} of its rate (target >= 50 %)"))  # fmt: skip
    record(f"UBI NDJSON ingest of {result.rows:,} events / raw COPY", f"{share:.0%}",
           ">= 50 %", share >= 0.5, load_average())  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
