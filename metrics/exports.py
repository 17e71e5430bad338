"""A project's metric series as CSV: the stored series (human raters' grades) streamed
out of PostgreSQL, or the series of other grades replayed from the log."""

import csv
import datetime as dt
import io

from django.http import HttpResponse
from django.utils import timezone

from judgements.exporters import AS_CSV, ISO_TIME, Export, piped_copy, sql_of
from judgements.models import Project
from metrics.dashboards.labels import MEASURES
from metrics.history import replayed_series
from metrics.models import MetricPoint
from metrics.registry import stored_specs
from metrics.sources import HUMAN, Grades

SERIES_COLUMNS = (
    "result_list",
    "metric",
    "as_of",
    "value",
    "ci_low",
    "ci_high",
    "judged",
    "retrieved",
    "queries",
    "zero_idcg",
    "grades",
    # Last, so that readers of the earlier columns by position are not moved: true while
    # the interval is the previous values' (metrics.overall), until its task draws it.
    "ci_pending",
    # The judgements a point covers: those recorded up to ``as_of``, the end of its hour
    # (or day), but no later than when it was computed; so the current hour's point is
    # dated by the moment it holds, not by an end still in the future.
    "covers_until",
)


def series_export(*, project: Project, grades: Grades = HUMAN) -> Export:
    """Every stored overall point of the project's result lists, oldest first per list;
    for other ``grades`` than the human raters', the series of the metrics the project
    keeps replayed from the log at each day's end (``metrics.history.replayed_series``).

    ``metric`` names every parameter of the value (``MetricSpec.name``); ``as_of`` is
    the moment of the judgement log it reflects, in UTC; ``grades`` whose grades made
    the consensus (human, machine or both).
    """
    # Named by the choice, so that "both" without an admitted machine judge (the human
    # grades' stored series) is not a second file of the human series' name.
    filename = f"{project.slug}-metric-series.csv"
    if grades.name != HUMAN.name:
        filename = f"{project.slug}-metric-series-{grades.name}.csv"
    if not grades.human_only:
        return Export(filename, "text/csv", _replayed_chunks(project, grades))
    points = MetricPoint.objects.filter(result_list__project=project, query__isnull=True)
    rows = points.order_by().values(
        "result_list__name", "metric", "as_of", "value", "ci_low", "ci_high", "judged",
        "retrieved", "queries", "zero_idcg", "result_list_id", "ci_pending", "computed_at",
    )  # fmt: skip
    columns = ", ".join(
        ISO_TIME.format("r.as_of") if name == "as_of" else f"r.{name}"
        for name in ("result_list__name", *SERIES_COLUMNS[1:-3])
    )
    columns += f", '{grades.name}', CASE WHEN r.ci_pending THEN 'true' ELSE 'false' END"
    columns += ", " + ISO_TIME.format("LEAST(r.as_of, r.computed_at)")
    sql = f"SELECT {columns} FROM ({sql_of(rows)}) r ORDER BY r.result_list_id, r.metric, r.as_of"

    def chunks():
        yield (",".join(SERIES_COLUMNS) + "\n").encode()
        yield from piped_copy(sql, AS_CSV)

    return Export(filename, "text/csv", chunks())


def _replayed_chunks(project: Project, grades: Grades):
    """The replayed series as CSV, in the stored export's columns and formats."""
    now = timezone.now()
    yield (",".join(SERIES_COLUMNS) + "\n").encode()
    for spec in stored_specs(project):
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for point in replayed_series(project, spec, grades=grades, until=now):
            moment = _utc(point.as_of)
            writer.writerow(
                [point.result_list.name, point.metric, moment]
                + [_cell(getattr(point, name)) for name in SERIES_COLUMNS[3:-3]]
                # Replayed points draw their intervals with their means.
                + [grades.name, "false", _utc(min(point.as_of, now))]
            )
        yield buffer.getvalue().encode()


def _utc(moment: dt.datetime) -> str:
    """As ISO_TIME writes a moment: UTC, microseconds, Z."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _cell(value):
    """As PostgreSQL's CSV writes it: empty for NULL."""
    return "" if value is None else value


# The per-query table's CSV: NDCG's columns, then every other measure (by the names the
# API's JSON gives them), with the metric's whole name on every row.
QUERY_COLUMNS = (
    "query_id", "external_id", "query", "metric", "ndcg", "dcg", "idcg", "judged",
    "retrieved", "previous_ndcg", "change", *MEASURES,
)  # fmt: skip
COMPARE_COLUMNS = (
    "query_id", "external_id", "query", "metric", "ndcg_a", "ndcg_b", "delta",
    *(f"{name}_{side}" for name in MEASURES for side in ("a", "b")),
    # What the query's unjudged hits leave open (metrics.core.bounds), width 0 when judged.
    "ndcg_a_low", "ndcg_a_high", "ndcg_b_low", "ndcg_b_high", "delta_low", "delta_high",
)  # fmt: skip


def query_rows(table, spec):
    """The CSV rows of a per-query table (``dashboards.query_table`` of every query)."""
    for row in table.rows:
        measures = dict(row.measures)
        yield [
            row.query_id, row.external_id, row.text, spec.name, row.ndcg, row.dcg, row.idcg,
            row.judged, row.retrieved, row.previous, row.change,
            *(measures.get(name) for name in MEASURES),
        ]  # fmt: skip


def compare_rows(comparison, spec):
    """The CSV rows of a comparison: every query it pairs, worst change first."""
    for row in comparison.ordered:
        measures = dict(row.measures)
        yield [
            row.query_id, row.external_id, row.text, spec.name, row.a, row.b, row.delta,
            *(value for name in MEASURES for value in measures.get(name, (None, None))),
            row.a_low, row.a_high, row.b_low, row.b_high, row.delta_low, row.delta_high,
        ]  # fmt: skip


def csv_response(filename: str, columns, rows) -> HttpResponse:
    """``rows`` as a CSV download; None as an empty cell, as the streamed exports write it."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([_cell(value) for value in row] for row in rows)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
