"""The stored metric series of a project as CSV, streamed out of PostgreSQL."""

from judgements.exporters import AS_CSV, ISO_TIME, Export, piped_copy, sql_of
from judgements.models import Project
from metrics.models import MetricPoint

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
)


def series_export(*, project: Project) -> Export:
    """Every stored overall point of the project's result lists, oldest first per list.

    ``metric`` names every parameter of the value (``MetricSpec.name``); ``as_of`` is
    the moment of the judgement log it reflects, in UTC.
    """
    points = MetricPoint.objects.filter(result_list__project=project, query__isnull=True)
    rows = points.order_by().values(
        "result_list__name", "metric", "as_of", "value", "ci_low", "ci_high", "judged",
        "retrieved", "queries", "zero_idcg", "result_list_id",
    )  # fmt: skip
    columns = ", ".join(
        ISO_TIME.format("r.as_of") if name == "as_of" else f"r.{name}"
        for name in ("result_list__name", *SERIES_COLUMNS[1:])
    )
    sql = f"SELECT {columns} FROM ({sql_of(rows)}) r ORDER BY r.result_list_id, r.metric, r.as_of"

    def chunks():
        yield (",".join(SERIES_COLUMNS) + "\n").encode()
        yield from piped_copy(sql, AS_CSV)

    return Export(f"{project.slug}-metric-series.csv", "text/csv", chunks())
