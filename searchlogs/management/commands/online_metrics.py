import csv

from django.core.management.base import BaseCommand, CommandError

from judgements.management.commands.import_judgements import project_named
from searchlogs import engines, selectors
from searchlogs.dashboards import COLUMNS, table_rows
from searchlogs.parquet import LAYOUTS, ParquetLogError, parquet_log
from searchlogs.spark import SparkUnavailable

GROUPINGS = {"day": ("day",), "query": ("query",), "day_query": ("day", "query")}


class Command(BaseCommand):
    help = (
        "Print a project's online metrics as CSV, computed by one engine: postgresql (the "
        "ingested log), duckdb or spark (Parquet files: the project's Parquet log, or "
        "--events/--queries). --master submits the Spark job to a cluster "
        "(spark://host:7077, yarn, ...); the default is local mode. One SQL definition "
        "(metrics.core.online): the engines give equal numbers."
    )

    def add_arguments(self, parser):
        parser.add_argument("project", help="project slug")
        parser.add_argument("--engine", choices=engines.ENGINES, default="postgresql")
        parser.add_argument("--master", default="local[*]", help="Spark's master URL.")
        parser.add_argument("--by", choices=sorted(GROUPINGS), default="day")
        parser.add_argument("--success-dwell", type=float, default=None)
        parser.add_argument("--layout", choices=LAYOUTS, default=None)
        parser.add_argument("--events", default=None, help="A folder or glob of Parquet files.")
        parser.add_argument("--queries", default="", help="UBI: the ubi_queries files.")

    def handle(self, *args, **options):
        project = project_named(options["project"])
        by = GROUPINGS[options["by"]]
        dwell = options["success_dwell"]
        dwell = selectors.success_dwell_of(project) if dwell is None else dwell
        try:
            table = self._table(project, options, by, dwell)
        except ParquetLogError as error:
            for file, row, column, message in error.problems:
                where = ", ".join(
                    str(part)
                    for part in (file, row and f"row {row}", column and f"column {column}")
                    if part
                )
                self.stderr.write(f"{where}: {message}")
            raise CommandError("The Parquet log cannot be read; nothing was computed.") from None
        except (SparkUnavailable, ValueError) as error:
            raise CommandError(str(error)) from None
        writer = csv.writer(self.stdout, lineterminator="\n")
        writer.writerow(["day", "query", *COLUMNS])
        for row in table_rows(table):
            writer.writerow([row.day or "", row.query_id or "", *(row.values[c] for c in COLUMNS)])

    def _table(self, project, options, by, dwell):
        engine = options["engine"]
        if engine == "postgresql":
            return engines.postgres_online(project, by=by, success_dwell=dwell)
        log = self._log(project, options)
        matcher = engines.query_matcher(project)
        if engine == "duckdb":
            return engines.duckdb_online(log, by=by, success_dwell=dwell, query_of=matcher)
        return engines.spark_online(log, by=by, success_dwell=dwell, query_of=matcher,
                                    master=options["master"],
                                    check=options["master"].startswith("local"))  # fmt: skip

    def _log(self, project, options):
        if options["events"]:
            return parquet_log(options["layout"] or "ours", options["events"], options["queries"])
        source = getattr(project, "parquet_log", None)
        if source is None:
            raise CommandError(
                f"{project.slug} has no Parquet log: give --events (a folder or glob)."
            )
        return parquet_log(source.layout, source.events, source.queries)
