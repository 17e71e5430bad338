"""The metrics endpoints: validate the dashboards' form, call one dashboard selector,
answer. See metrics.api for the list and the roles.

Each view's ``OutputSerializer`` documents its body in the OpenAPI schema (schemathesis
checks every response against it); the body itself is built as plain data, since
serialising a page of rows field by field cost more than computing them.
"""

import dataclasses

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from judgements.api.access import IsAnalyst
from judgements.models import Project
from metrics import dashboards
from metrics.api.common import (
    DELETED_MEANWHILE,
    PAGE_PARAMETERS,
    SOURCES,
    IntervalSerializer,
    MetricSpecSerializer,
    PagedSerializer,
    QueryRefSerializer,
    ResultListRefSerializer,
    form_parameters,
    interval_data,
    number,
    paged,
    query_names,
    result_list_of,
    result_list_ref,
    spec_data,
    valid,
)
from metrics.dashboards.compare import SEED, comparison_gate
from metrics.dashboards.result_list import result_list_metrics
from metrics.dashboards.unjudged import unjudged_work
from metrics.evaluate import INTERVAL_SEED
from metrics.forms import GateForm, MetricForm, UnjudgedForm
from metrics.sources import GRADES_HELP, GRADES_LABELS, SOURCE_HELP


class MeasuresSerializer(serializers.Serializer):
    """NDCG and the binary and cascade measures (trec_eval's definitions, relevant from
    a consensus grade of 1)."""

    ndcg = serializers.FloatField(allow_null=True, help_text="NDCG under the spec.")
    precision = serializers.FloatField(
        allow_null=True, help_text="P@k: relevant hits in the top k, over k; null without k."
    )
    average_precision = serializers.FloatField(
        allow_null=True,
        help_text="AP of the top k (trec_eval's map_cut.k; its map without k), over the "
        "query's relevant judged documents.",
    )
    reciprocal_rank = serializers.FloatField(
        allow_null=True, help_text="1 / position of the first relevant hit in the top k."
    )
    err = serializers.FloatField(
        allow_null=True, help_text="ERR@k (Chapelle et al. 2009) on the project's scale."
    )


class ResultListMetricsApi(APIView):
    """A result list's numbers under one metric: the mean NDCG with its 95% bootstrap
    interval, judged@k coverage, queries with IDCG 0, hits without a grade, the means of
    P@k, AP@k, RR@k and ERR@k, and every query's values (paged, in query id order).

    Parameters not given take the project's defaults; the spec used is echoed whole.
    The mean is over the result list's queries (those with at least one hit).
    """

    class OutputSerializer(PagedSerializer):
        class RowSerializer(QueryRefSerializer, MeasuresSerializer):
            dcg = serializers.FloatField(allow_null=True)
            idcg = serializers.FloatField(allow_null=True)
            judged = serializers.IntegerField(help_text="Judged hits within the cut-off.")
            retrieved = serializers.IntegerField(help_text="Hits within the cut-off.")

        result_list = ResultListRefSerializer()
        spec = MetricSpecSerializer()
        as_of = serializers.DateTimeField(help_text="The grades' moment the numbers hold for.")
        source = serializers.ChoiceField(
            choices=SOURCES,
            help_text=f"{SOURCE_HELP} This one: the mean and its interval ('stored': the "
            "list's stored overall point).",
        )
        results_source = serializers.ChoiceField(
            choices=SOURCES,
            help_text="The source of the per-query values in ``results`` and ``means``, "
            "which are computed from the grades: 'packed' or 'log'.",
        )
        grades = serializers.ChoiceField(choices=list(GRADES_LABELS), help_text=GRADES_HELP)
        queries = serializers.IntegerField(help_text="Queries in the mean.")
        mean = serializers.FloatField(allow_null=True, help_text="Mean NDCG; null: no query.")
        interval = IntervalSerializer(help_text="Percentile bootstrap interval of the mean.")
        coverage = serializers.FloatField(
            allow_null=True, help_text="Judged@k: judged hits within the cut-off, over all."
        )
        zero_idcg = serializers.IntegerField(help_text="Queries with no relevant judged hit.")
        unjudged = serializers.IntegerField(help_text="Hits within the cut-off with no grade.")
        provisional = serializers.BooleanField(help_text="True while any hit is unjudged.")
        relevant_from = serializers.FloatField(help_text="Lowest grade P, AP and RR count.")
        max_grade = serializers.IntegerField(help_text="The scale's top grade (for ERR).")
        means = MeasuresSerializer()
        results = RowSerializer(many=True)

    permission_classes = [IsAnalyst]

    @extend_schema(
        parameters=[*form_parameters(MetricForm), *PAGE_PARAMETERS],
        responses={200: OutputSerializer},
    )
    def get(self, request, pk):
        result_list = result_list_of(pk)
        form = valid(MetricForm(request.query_params, project=result_list.project))
        found = result_list_metrics(
            result_list.project,
            result_list,
            form.spec,
            as_of=form.moment,
            grades=form.chosen_grades,
        )
        evaluation, summary = found.evaluation, found.summary
        page, links = paged(request, self, range(len(evaluation.query_ids)))
        names = query_names(evaluation.query_ids[page].tolist())
        rows = [self._row(found, names, i) for i in page]
        body = {
            "result_list": result_list_ref(result_list),
            "spec": spec_data(form.spec),
            "as_of": summary.as_of,
            "source": summary.source,
            "results_source": evaluation.source,
            "grades": form.chosen_grades.name,
            "queries": summary.queries,
            "mean": number(summary.mean),
            "interval": interval_data(summary.interval, INTERVAL_SEED),
            "coverage": summary.coverage,
            "zero_idcg": summary.zero_idcg,
            "unjudged": evaluation.unjudged,
            "provisional": evaluation.unjudged > 0,
            "relevant_from": found.relevant_from,
            "max_grade": found.max_grade,
            "means": {name: number(mean) for name, mean in found.means.items()},
            **links,
            "results": rows,
        }
        return Response(body)

    @staticmethod
    def _row(found, names: dict, i: int) -> dict:
        evaluation = found.evaluation
        return {
            **names[int(evaluation.query_ids[i])],
            "ndcg": number(evaluation.ndcg[i]),
            "dcg": number(evaluation.dcg[i]),
            "idcg": number(evaluation.idcg[i]),
            "judged": int(evaluation.judged[i]),
            "retrieved": int(evaluation.retrieved[i]),
            **{name: number(values[i]) for name, values in found.measures.items()},
        }


class ResultListUnjudgedApi(APIView):
    """Unjudged work of a result list: its first ``k`` hits per query that have no grade
    (a "can't tell" is no grade). While any remain the list's numbers are provisional.

    Hits in the project's pool (the top ``pool_depth`` of any list) are already in the
    raters' queue; ``outside_pool`` hits are not and stay unjudged unless the pool is
    deepened or grades are imported. ``results`` lists the queries with unjudged hits,
    the most first.
    """

    class OutputSerializer(PagedSerializer):
        class RowSerializer(QueryRefSerializer):
            retrieved = serializers.IntegerField(help_text="Hits within the cut-off.")
            unjudged = serializers.IntegerField()
            first_rank = serializers.IntegerField(
                help_text="Position (1 is the top) of the highest unjudged hit."
            )

        result_list = ResultListRefSerializer()
        k = serializers.IntegerField(allow_null=True, help_text="Null: every hit.")
        as_of = serializers.DateTimeField()
        source = serializers.ChoiceField(
            choices=SOURCES, help_text=f"{SOURCE_HELP} Here 'packed' or 'log'."
        )
        queries = serializers.IntegerField()
        hits = serializers.IntegerField(help_text="Hits within the cut-off.")
        judged = serializers.IntegerField()
        unjudged = serializers.IntegerField()
        provisional = serializers.BooleanField(help_text="True while any hit is unjudged.")
        pool_depth = serializers.IntegerField()
        in_pool = serializers.IntegerField(help_text="Unjudged hits in the raters' queue.")
        outside_pool = serializers.IntegerField(help_text="Unjudged hits no rater is asked for.")
        results = RowSerializer(many=True)

    permission_classes = [IsAnalyst]

    @extend_schema(
        parameters=[*form_parameters(UnjudgedForm), *PAGE_PARAMETERS],
        responses={200: OutputSerializer},
    )
    def get(self, request, pk):
        result_list = result_list_of(pk)
        project = result_list.project
        form = valid(UnjudgedForm(request.query_params, project=project))
        work = unjudged_work(project, result_list, k=form.cleaned_data["k"], as_of=form.moment)
        page, links = paged(request, self, work.rows)
        names = query_names(row.query_id for row in page)
        body = {
            "result_list": result_list_ref(result_list),
            **{name: getattr(work, name) for name in ("k", "as_of", "source", "queries", "hits")},
            **{name: getattr(work, name) for name in ("judged", "unjudged", "provisional")},
            **{name: getattr(work, name) for name in ("pool_depth", "in_pool", "outside_pool")},
            **links,
            "results": [
                {**names[row.query_id], "retrieved": row.retrieved, "unjudged": row.unjudged,
                 "first_rank": row.first_rank}
                for row in page
            ],
        }  # fmt: skip
        return Response(body)


class BoundsSerializer(serializers.Serializer):
    low = serializers.FloatField()
    high = serializers.FloatField()


class RowBoundsOutputSerializer(serializers.Serializer):
    """A compared query's bounds, in responses only."""

    a = BoundsSerializer()
    b = BoundsSerializer()
    delta = BoundsSerializer()


class CompareApi(APIView):
    """Result list B (the candidate) against A (the baseline), query by query: each
    query's values and change (worst first, paged), wins, ties and losses, the paired
    randomisation test's p-value, the bootstrap interval of the mean difference (10,000
    resamples each), and the most changed queries.

    The queries compared are those the means count: under ``mean_over=judged`` the
    judged queries both lists returned; under ``mean_over=all`` every judged query and
    every query either list returned, a query a list did not return counting 0 for it
    (``trec_eval -c``), and ``unreturned`` says how many each list did not return.

    With ``max_drop`` the response carries a verdict: ``passed`` is false when B's mean
    is lower than A's by more than ``max_drop``, and ``reason`` says by how much. Hits
    still unjudged make both means provisional; ``unjudged`` counts them per list.
    Without ``a`` and ``b``, the two most recently captured lists are compared.

    ``bounds`` (of the difference and of each list's mean) cover every grade the
    unjudged hits of either list could get: per query [low_b - high_a, high_b - low_a],
    averaged, an outer bound (a document both lists return gets one grade in both,
    which it ignores). ``verdict`` decides B better or A better only when the bounds
    keep the sign and the randomisation test rejects at ``alpha``; else "not decided"
    while unjudged pairs remain, "no difference" once none do (docs/metrics.md).
    Each list carries its coverage: ``judged_at_k``, ``unjudged_in_top_k``, ``queued``.
    """

    class OutputSerializer(PagedSerializer):
        class RowSerializer(QueryRefSerializer):
            a = serializers.FloatField()
            b = serializers.FloatField()
            delta = serializers.FloatField(help_text="b - a.")
            bounds = RowBoundsOutputSerializer(
                help_text="What the query's unjudged hits leave open: each list's lowest and "
                "highest value over every grade they could get, and the difference's "
                "[low_b - high_a, high_b - low_a]; width 0 when both top k are judged."
            )

        class ListSerializer(ResultListRefSerializer):
            mean = serializers.FloatField(allow_null=True, help_text="Over the queries compared.")
            queries = serializers.IntegerField(help_text="Queries the list returned.")
            unreturned = serializers.IntegerField(
                help_text="Queries compared that the list did not return, each counted 0 "
                "(mean over all); 0 under a mean over judged queries."
            )
            unjudged = serializers.IntegerField(help_text="Its hits within k with no grade.")
            source = serializers.ChoiceField(choices=SOURCES, help_text=SOURCE_HELP)
            judged_at_k = serializers.FloatField(
                allow_null=True,
                help_text="Judged hits over hits in the top k of the queries compared.",
            )
            unjudged_in_top_k = serializers.IntegerField(
                help_text="Distinct unjudged (query, document) pairs in its top k of the "
                "queries compared."
            )
            queued = serializers.IntegerField(
                help_text="How many of those are in the raters' queue (the project's pool)."
            )
            bounds = BoundsSerializer(
                help_text="Lowest and highest mean over every grade its unjudged hits could get."
            )

        class TestSerializer(serializers.Serializer):
            p_value = serializers.FloatField()
            resamples = serializers.IntegerField(help_text="0: every sign pattern enumerated.")
            exact = serializers.BooleanField()
            seed = serializers.IntegerField()

        class VerdictSerializer(serializers.Serializer):
            decision = serializers.ChoiceField(
                choices=["b_better", "a_better", "no_difference", "not_decided"]
            )
            reason = serializers.CharField()
            unjudged_pairs = serializers.IntegerField(
                help_text="Distinct unjudged (query, document) pairs in the top k of either list."
            )
            alpha = serializers.FloatField()

        class GateSerializer(serializers.Serializer):
            max_drop = serializers.FloatField()
            passed = serializers.BooleanField()
            reason = serializers.CharField()

        spec = MetricSpecSerializer()
        as_of = serializers.DateTimeField()
        source = serializers.ChoiceField(choices=SOURCES, help_text=SOURCE_HELP)
        grades = serializers.ChoiceField(choices=list(GRADES_LABELS), help_text=GRADES_HELP)
        a = ListSerializer()
        b = ListSerializer()
        queries = serializers.IntegerField(
            help_text="Queries compared: the judged queries both lists returned (mean over "
            "judged), or every judged query and every query either list returned (mean over all)."
        )
        only_a = serializers.IntegerField()
        only_b = serializers.IntegerField()
        mean_difference = serializers.FloatField(
            help_text="mean(b - a) over the queries compared."
        )
        wins = serializers.IntegerField(help_text="Queries B improved (by more than 1e-9).")
        ties = serializers.IntegerField()
        losses = serializers.IntegerField()
        test = TestSerializer(help_text="Two-sided paired randomisation (sign-flip) test.")
        interval = IntervalSerializer(help_text="Paired bootstrap interval of mean(b - a).")
        provisional = serializers.BooleanField(
            help_text="True while either list has unjudged hits."
        )
        most_improved = RowSerializer(many=True)
        most_degraded = RowSerializer(many=True)
        gate = GateSerializer(allow_null=True, help_text="Null without max_drop.")
        bounds = BoundsSerializer(
            help_text="Outer bounds of mean(b - a) over every grade the unjudged hits of "
            "either list could get (per query [low_b - high_a, high_b - low_a], averaged)."
        )
        verdict = VerdictSerializer(
            help_text="Decided when the bounds keep one sign and the randomisation test "
            "rejects at alpha."
        )
        zero_idcg = serializers.IntegerField(
            help_text="Queries compared whose NDCG is 0 (IDCG 0) for both lists under "
            "every filling."
        )
        results = RowSerializer(many=True)

    permission_classes = [IsAnalyst]

    @extend_schema(
        parameters=[*form_parameters(GateForm), *PAGE_PARAMETERS],
        responses={200: OutputSerializer},
    )
    def get(self, request, slug):
        project = get_object_or_404(Project, slug=slug)
        form = valid(GateForm(request.query_params, project=project))
        data = form.cleaned_data
        lists = project.result_lists.select_related("project").in_bulk([data["a"], data["b"]])
        if data["a"] not in lists or data["b"] not in lists:
            # The form found both; one was deleted since.
            raise NotFound(DELETED_MEANWHILE)
        found = dashboards.comparison(
            project,
            lists[data["a"]],
            lists[data["b"]],
            form.spec,
            as_of=form.moment,
            page=None,
            grades=form.chosen_grades,
            alpha=data["alpha"],
        )
        page, links = paged(request, self, found.ordered)
        names = query_names(
            {row.query_id for row in [*page, *found.most_improved, *found.most_degraded]}
        )
        gate = None
        if data["max_drop"] is not None:
            gate = comparison_gate(found, form.spec, max_drop=data["max_drop"])
        body = {
            "spec": spec_data(form.spec),
            "as_of": found.as_of,
            "source": found.source,
            "grades": form.chosen_grades.name,
            "a": _compared(found.a, found.mean_a, found.missing_a, found.bounds, "a"),
            "b": _compared(found.b, found.mean_b, found.missing_b, found.bounds, "b"),
            "queries": found.queries,
            "only_a": found.only_a,
            "only_b": found.only_b,
            "mean_difference": found.mean_difference,
            "wins": found.wins,
            "ties": found.ties,
            "losses": found.losses,
            "test": _test(found.test),
            "interval": interval_data(found.interval, SEED),
            "provisional": found.a.unjudged + found.b.unjudged > 0,
            "most_improved": [_delta(row, names) for row in found.most_improved],
            "most_degraded": [_delta(row, names) for row in found.most_degraded],
            "gate": gate and dataclasses.asdict(gate),
            "bounds": {"low": found.bounds.low, "high": found.bounds.high},
            "verdict": dataclasses.asdict(found.verdict),
            "zero_idcg": found.bounds.zero_idcg,
            **links,
            "results": [_delta(row, names) for row in page],
        }
        return Response(body)


def _compared(evaluation, mean, unreturned: int, bounds, side: str) -> dict:
    coverage = getattr(bounds, f"coverage_{side}")
    return {
        **result_list_ref(evaluation.result_list),
        "mean": number(mean),
        "queries": len(evaluation.query_ids),
        "unreturned": unreturned,
        "unjudged": evaluation.unjudged,
        "source": evaluation.source,
        "judged_at_k": coverage.judged_at_k,
        "unjudged_in_top_k": coverage.unjudged,
        "queued": coverage.queued,
        "bounds": {"low": getattr(bounds, f"low_{side}"), "high": getattr(bounds, f"high_{side}")},
    }


def _test(test) -> dict:
    return {
        "p_value": test.p_value,
        "resamples": test.resamples,
        "exact": test.exact,
        "seed": SEED,
    }


def _delta(row, names: dict) -> dict:
    bounds = {
        "a": {"low": row.a_low, "high": row.a_high},
        "b": {"low": row.b_low, "high": row.b_high},
        "delta": {"low": row.delta_low, "high": row.delta_high},
    }
    return {**names[row.query_id], "a": row.a, "b": row.b, "delta": row.delta, "bounds": bounds}
