"""A result list's overall point: the mean of its latest per-query points (``math.fsum``,
in query order, as a rebuild computes it), their counts and a bootstrap interval.

A grade's refresh computes the mean and counts again from every latest point (one
binary COPY of the list's latest points) but leaves the interval, which resamples every
query, to a task: its point keeps the interval of the list's previous point, marked
``ci_pending``, and ``metrics.tasks.result_list_interval`` (one waiting per list and
metric) computes the whole point again. Pages and the API say when an interval is
pending.
"""

from django.db import connection

from metrics.evaluate import INTERVAL_SEED, overall_columns, overall_of
from metrics.models import MetricPoint

# The interval of the list's newest overall point as of the refresh's moment.
PREVIOUS_INTERVAL_SQL = """
SELECT point.ci_low, point.ci_high, point.ci_confidence, point.ci_resamples, point.ci_seed
FROM metrics_metricpoint point
WHERE point.result_list_id = %s AND point.metric = %s AND point.query_id IS NULL
  AND point.as_of <= %s
ORDER BY point.as_of DESC
LIMIT 1
"""


def overall_store(
    result_list, spec, *, as_of, judged_queries=None, pending: bool = False
) -> MetricPoint | None:
    """Compute the overall point of ``result_list`` as of ``as_of`` from its latest
    per-query points and store it; returns it (None if the list has no point). With
    ``pending`` (a grade's refresh) the interval is not drawn: the point keeps the
    previous point's, marked ``ci_pending``, when there is one."""
    from metrics.refresh import metric_points_store

    read = overall_columns(result_list, spec, as_of=as_of, judged_queries=judged_queries)
    if read is None:
        return None
    columns, unreturned, _ = read
    previous = _previous_interval(result_list, spec, as_of) if pending else None
    interval = None if previous is None else _Interval(*previous[:4])
    overall = overall_of(
        result_list, spec, as_of=as_of, columns=columns, unreturned=len(unreturned),
        interval=interval,
    )  # fmt: skip
    if previous is not None:
        overall.ci_seed = INTERVAL_SEED if previous[4] is None else previous[4]
        overall.ci_pending = True
    metric_points_store([overall])
    return overall


class _Interval:
    """A stored interval, as ``overall_of`` takes one."""

    def __init__(self, low, high, confidence, resamples):
        self.low, self.high, self.confidence, self.resamples = low, high, confidence, resamples


def _previous_interval(result_list, spec, as_of) -> tuple | None:
    with connection.cursor() as cursor:
        cursor.execute(PREVIOUS_INTERVAL_SQL, [result_list.pk, spec.name, as_of])
        return cursor.fetchone()
