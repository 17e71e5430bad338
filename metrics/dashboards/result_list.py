"""Every measure of one result list under one metric: NDCG, P@k, AP@k, RR@k and ERR@k
of each query from one read of its grades, and the mean NDCG with its interval as the
overview shows it (the stored overall point where the series is current)."""

import datetime as dt
from dataclasses import dataclass

import numpy as np

from judgements.models import Project, ResultList
from metrics import evaluate
from metrics.dashboards.evaluations import Evaluation, computed_evaluation, counted_as
from metrics.dashboards.measures import RELEVANT_FROM, binary_and_cascade_measures
from metrics.dashboards.overview import ListSummary, computed_summary, stored_summaries
from metrics.registry import MetricSpec
from metrics.sources import HUMAN, Grades, freshness, one_snapshot


@dataclass(frozen=True)
class ResultListMetrics:
    """NDCG of each query (``evaluation``), the mean with its interval (``summary``) and
    the other measures of each query, aligned on ``evaluation.query_ids``."""

    evaluation: Evaluation
    summary: ListSummary
    measures: dict[str, np.ndarray]
    max_grade: int
    relevant_from: float = RELEVANT_FROM

    @property
    def means(self) -> dict[str, float | None]:
        means = {"ndcg": self.summary.mean}
        for name, values in self.measures.items():
            mean = self.evaluation.mean_of(values)
            means[name] = None if mean is None or np.isnan(mean) else mean
        return means


@one_snapshot
def result_list_metrics(
    project: Project,
    result_list: ResultList,
    spec: MetricSpec,
    *,
    as_of: dt.datetime | None,
    grades: Grades = HUMAN,
) -> ResultListMetrics:
    """Every measure of the list's queries from one read of its grades (packed when they
    hold as of the moment, else replayed from the log), and the mean with its interval:
    the list's stored overall point when the series is current, else computed
    (``metrics.sources`` decides, once; from the log for other grades than the human
    raters')."""
    fresh = freshness(project, spec, as_of=as_of, grades=grades)
    grades, result = evaluate.result_list_evaluate(result_list, spec, fresh=fresh)
    evaluation = computed_evaluation(result_list, fresh, grades, result)
    # The mean counts the queries of the metric's mean_over (under "all", unreturned too).
    [evaluation] = counted_as(project, spec, [evaluation], fresh=fresh)
    # The grades reach at least the top k, all the measures look at.
    measures = binary_and_cascade_measures(grades, spec, max_grade=project.max_grade)
    stored = stored_summaries(spec, [result_list], fresh)
    summary = stored[0] if stored else computed_summary(evaluation)
    return ResultListMetrics(evaluation, summary, measures, project.max_grade)
