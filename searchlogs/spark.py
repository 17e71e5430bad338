"""The online metrics' SQL as one Spark job (pyspark bundles Spark; it needs Java 17+).

Local mode (``local[*]``) runs Spark in a JVM beside this process, as the tests do;
any other ``master`` submits the same job to that cluster, whose executors must see
the files' paths (a shared file system, HDFS or object storage).
"""

import os
import shutil

from metrics.core.online import online_sql
from searchlogs.parquet import ParquetLog, events_relation

APP_NAME = "relevance-judge-online-metrics"
# Few groups come back, and adaptive execution merges small partitions; but each
# shuffle still starts its tasks: the default 200 would be mostly empty ones. Local
# mode has one per core; a cluster sets its own (spark.sql.shuffle.partitions).
LOCAL_SHUFFLE_PARTITIONS = str(os.cpu_count() or 2)


class SparkUnavailable(Exception):
    """Spark cannot start here (no Java, for one)."""


def spark_session(master: str = "local[*]"):
    """A Spark session on ``master`` (started once per process, then reused)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SparkUnavailable(
            "Spark needs Java 17 or newer: install it (Debian: openjdk-17-jre-headless)."
        )
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(APP_NAME)
    if master.startswith("local"):
        builder = builder.config("spark.sql.shuffle.partitions", LOCAL_SHUFFLE_PARTITIONS)
    return (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("SPARK_DRIVER_MEMORY", "2g"))
        .getOrCreate()
    )


def spark_rows(log: ParquetLog, *, by, success_dwell: float, master: str) -> list[tuple]:
    """The totals of metrics.core.online per group, computed by Spark."""
    session = spark_session(master)
    tables = {"events": "log_events"}
    session.read.parquet(*log.files).createOrReplaceTempView("log_events")
    if log.query_files:
        session.read.parquet(*log.query_files).createOrReplaceTempView("log_queries")
        tables["queries"] = "log_queries"
    relation = events_relation(log, engine="spark", tables=tables)
    sql = online_sql(relation, dialect="spark", by=by, success_dwell=success_dwell)
    return [tuple(row) for row in session.sql(sql).collect()]
