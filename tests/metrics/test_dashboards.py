"""The dashboards' selectors: their numbers equal the metrics core's on the same data."""

import datetime as dt

import numpy as np
import pytest
import time_machine

from judgements.models import Hit, Judgement, Project, QueueRequest
from metrics import dashboards, refresh
from metrics.core import ndcg
from metrics.core.agreement import krippendorff_alpha
from metrics.core.stats import paired_bootstrap_ci, paired_randomisation_test
from metrics.dashboards.compare import RESAMPLES, significance
from metrics.dashboards.evaluations import list_evaluations
from metrics.dashboards.overview import computed_summaries, pool_progress, stored_summaries
from metrics.models import MetricPoint
from metrics.registry import MetricSpec, project_spec
from metrics.sources import Freshness, Source, freshness, grades_freshness
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)

NOV = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
LATER = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)


def from_the_log(moment: dt.datetime) -> Freshness:
    """The freshness rule's answer sending every read to the judgement log."""
    return Freshness(moment=moment, stored=False, derived=False)


@pytest.fixture
def demo(demo_once, db):
    return Project.objects.get(slug="outdoor-gear")


@pytest.fixture
def camping(db):
    """Two result lists over three queries, graded by two raters on 1, 2 and 3 November.

    Hits by document number, rank 1 first: "old" returns 1 2 3 4 for every query;
    "new" returns 2 1 7 4 5 for tent, 2 1 4 5 for stove and 5 4 1 2 for lamp.
    Grades (alice, bob), the same for every query: d1 (3, 3), d2 (1, 3), d3 (0, 0),
    d4 (2, -), d5 (-, 1), d6 (2, -); d6 is returned by no list and d7 is never graded.
    """
    project = ProjectFactory(name="Camping", slug="camping", judges_per_pair=2, pool_depth=3)
    alice = UserFactory(username="alice", roles=["rater"])
    bob = UserFactory(username="bob", roles=["rater"])
    old = ResultListFactory(project=project, name="old", captured_at=NOV)
    new = ResultListFactory(project=project, name="new", captured_at=NOV + dt.timedelta(days=4))
    docs = {n: DocumentFactory(project=project, external_id=f"D{n}") for n in range(1, 8)}
    grades = {1: (3, 3), 2: (1, 3), 3: (0, 0), 4: (2, None), 5: (None, 1), 6: (2, None)}
    new_order = {"tent": [2, 1, 7, 4, 5], "stove": [2, 1, 4, 5], "lamp": [5, 4, 1, 2]}
    for day, (text, order) in enumerate(new_order.items()):
        query = QueryFactory(project=project, text=text)
        for rank, n in enumerate([1, 2, 3, 4], start=1):
            HitFactory(result_list=old, query=query, document=docs[n], rank=rank)
        for rank, n in enumerate(order, start=1):
            HitFactory(result_list=new, query=query, document=docs[n], rank=rank)
        moment = NOV + dt.timedelta(days=day)
        for n, pair in grades.items():
            for rater, grade in zip((alice, bob), pair, strict=True):
                if grade is not None:
                    JudgementFactory(
                        query=query, document=docs[n], rater=rater, grade=grade, created_at=moment
                    )
    return project


def core_values(result_list, spec: MetricSpec, as_of) -> dict[int, float]:
    """NDCG per query the long way: ORM consensus, then metrics.core.ndcg one query at a time."""
    rows = Judgement.objects.for_project(result_list.project).as_of(as_of).consensus()
    grade_of = {(row["query_id"], row["document_id"]): row["consensus"] for row in rows}
    values = {}
    for query in result_list.project.queries.all():
        hits = Hit.objects.filter(result_list=result_list, query=query).order_by("rank")
        if not hits:
            continue
        ranked = [grade_of.get((query.pk, hit.document_id)) for hit in hits]
        judged = [grade for (q, _), grade in grade_of.items() if q == query.pk]
        ideal = judged if spec.ideal == "judged" else [g for g in ranked if g is not None]
        result = ndcg(ranked, ideal, k=spec.k, gain=spec.gain, discount=spec.discount)
        values[query.pk] = result.ndcg
    return values


def test_the_overview_reads_the_stored_series_and_its_means_equal_the_core(demo):
    spec = project_spec(demo)
    overview = dashboards.project_overview(demo, spec, as_of=None)
    lists = [summary.result_list for summary in overview.summaries]
    per_query = list_evaluations(
        demo, spec, fresh=freshness(demo, spec, as_of=None), result_lists=lists
    )

    assert overview.source == Source.STORED
    for summary, evaluation in zip(overview.summaries, per_query, strict=True):
        expected = core_values(summary.result_list, spec, overview.as_of)
        assert summary.mean == pytest.approx(np.mean(list(expected.values())), 1e-12)
        assert summary.queries == len(expected)
        assert evaluation.stored
        assert dict(
            zip(evaluation.query_ids.tolist(), evaluation.ndcg, strict=True)
        ) == pytest.approx(expected, abs=1e-12)


def test_a_variant_that_is_not_stored_is_computed_and_equals_the_core(demo):
    spec = MetricSpec(k=5, gain="linear", discount="rank", ideal="returned")

    overview = dashboards.project_overview(demo, spec, as_of=None)

    assert overview.source == Source.PACKED
    for summary in overview.summaries:
        expected = core_values(summary.result_list, spec, overview.as_of)
        assert summary.mean == pytest.approx(np.mean(list(expected.values())), 1e-12)


def test_stored_and_recomputed_values_are_the_same_numbers(demo):
    spec = project_spec(demo)
    lists = list(demo.result_lists.all())
    stored = list_evaluations(
        demo, spec, fresh=freshness(demo, spec, as_of=None), result_lists=lists
    )

    computed = list_evaluations(
        demo, spec, fresh=freshness(demo, spec, as_of=stored[0].as_of), result_lists=lists
    )

    for read, fresh in zip(stored, computed, strict=True):
        assert (read.source, fresh.source) == (Source.STORED, Source.PACKED)
        assert read.query_ids.tolist() == fresh.query_ids.tolist()
        assert read.ndcg == pytest.approx(fresh.ndcg, abs=1e-12)
        assert read.dcg == pytest.approx(fresh.dcg, abs=1e-12)
        assert read.idcg == pytest.approx(fresh.idcg, abs=1e-12)
        assert read.judged.tolist() == fresh.judged.tolist()
        assert read.retrieved.tolist() == fresh.retrieved.tolist()


def test_a_judgement_newer_than_the_stored_series_makes_the_page_compute(demo):
    spec = project_spec(demo)
    result_list = demo.result_lists.first()
    hit = Hit.objects.filter(result_list=result_list, rank=1).first()
    before = list_evaluations(
        demo, spec, fresh=freshness(demo, spec, as_of=None), result_lists=[result_list]
    )[0]
    later = before.as_of + dt.timedelta(days=2)
    with time_machine.travel(later, tick=False):
        for rater in (
            Judgement.objects.human().order_by().values_list("rater", flat=True).distinct()
        ):
            JudgementFactory(query=hit.query, document=hit.document, rater_id=rater, grade=0)
        after = list_evaluations(
            demo, spec, fresh=freshness(demo, spec, as_of=None), result_lists=[result_list]
        )[0]

        overview = dashboards.project_overview(demo, spec, as_of=None)

    assert after.source == Source.PACKED and after.as_of == later
    assert after.ndcg.tolist() != before.ndcg.tolist()
    assert overview.source == Source.PACKED and overview.as_of == later
    assert stored_summaries(spec, [result_list], freshness(demo, spec, as_of=None)) is None


def test_the_overview_reads_each_lists_stored_interval_which_equals_a_recomputed_one(demo):
    spec = project_spec(demo)
    lists = list(demo.result_lists.order_by("captured_at", "name"))

    with time_machine.travel(dt.datetime.now(dt.UTC), tick=False):
        stored = stored_summaries(spec, lists, freshness(demo, spec, as_of=None))
        computed = computed_summaries(
            demo, spec, fresh=freshness(demo, spec, as_of=None), result_lists=lists
        )

    assert stored is not None and all(summary.source == Source.STORED for summary in stored)
    for read, fresh in zip(stored, computed, strict=True):
        assert (read.interval.low, read.interval.high) == pytest.approx(
            (fresh.interval.low, fresh.interval.high), abs=1e-12
        )
        assert read.interval.resamples == fresh.interval.resamples == 1000
        assert read.mean == pytest.approx(fresh.mean, abs=1e-12)
        assert (read.queries, read.zero_idcg) == (fresh.queries, fresh.zero_idcg)
        assert read.coverage == pytest.approx(fresh.coverage, abs=1e-12)
        assert read.as_of == fresh.as_of


@pytest.mark.parametrize("mean_over", ["judged", "all"])
def test_stored_and_computed_summaries_agree_on_either_mean(camping, mean_over):
    # "map" is returned by "new" and graded by nobody; "boots" is graded and returned by
    # "old" only, so a mean over all queries counts it at 0 for "new".
    new, old = camping.result_lists.get(name="new"), camping.result_lists.get(name="old")
    HitFactory(result_list=new, query=QueryFactory(project=camping, text="map"), rank=1)
    boots = HitFactory(result_list=old, query=QueryFactory(project=camping, text="boots"), rank=1)
    JudgementFactory(query=boots.query, document=boots.document, grade=2, created_at=NOV)
    camping.metric_mean_over = mean_over
    camping.save()
    spec = project_spec(camping)
    lists = list(camping.result_lists.order_by("captured_at", "name"))
    refresh.metrics_refresh(project=camping)

    stored = stored_summaries(spec, lists, freshness(camping, spec, as_of=None))
    computed = computed_summaries(
        camping, spec, fresh=freshness(camping, spec, as_of=None), result_lists=lists
    )

    assert stored is not None
    for read, fresh in zip(stored, computed, strict=True):
        assert read.mean == pytest.approx(fresh.mean, abs=1e-15)
        assert (read.interval.low, read.interval.high) == pytest.approx(
            (fresh.interval.low, fresh.interval.high), abs=1e-15
        )
        counts = ("queries", "queries_judged", "queries_returned", "zero_idcg")
        assert [getattr(read, name) for name in counts] == [
            getattr(fresh, name) for name in counts
        ]
    # "new" returned tent, stove, lamp and map; "boots" is the judged query it missed.
    assert (computed[1].queries, computed[1].queries_returned) == (
        (3, 4) if mean_over == "judged" else (5, 4)
    )
    # As of a moment, the grades are replayed from the log once for every list.
    then = dashboards.project_overview(camping, spec, as_of=LATER).summaries
    assert [summary.mean for summary in then] == pytest.approx(
        [summary.mean for summary in stored], abs=1e-15
    )
    assert [summary.queries for summary in then] == [summary.queries for summary in stored]


@pytest.mark.parametrize(
    "change", [{"ci_low": None, "ci_high": None, "ci_resamples": None}, {"ci_resamples": 500}]
)
def test_an_overall_point_without_the_overviews_interval_is_not_read(demo, change):
    spec = project_spec(demo)
    lists = list(demo.result_lists.order_by("captured_at", "name"))
    expected = computed_summaries(
        demo, spec, fresh=freshness(demo, spec, as_of=None), result_lists=lists
    )
    MetricPoint.objects.filter(query=None).update(**change)

    overview = dashboards.project_overview(demo, spec, as_of=None)

    assert stored_summaries(spec, lists, freshness(demo, spec, as_of=None)) is None
    assert [summary.interval for summary in overview.summaries] == [
        summary.interval for summary in expected
    ]


def test_the_overview_as_of_a_moment_ignores_judgements_recorded_later(camping):
    spec = project_spec(camping)
    as_of = NOV + dt.timedelta(days=1, hours=12)
    before = dashboards.project_overview(camping, spec, as_of=as_of)
    with time_machine.travel(NOV + dt.timedelta(days=10), tick=False):
        query = camping.queries.get(text="tent")
        for hit in Hit.objects.filter(query=query, rank__lte=2):
            JudgementFactory(query=query, document=hit.document, grade=0)
        again = dashboards.project_overview(camping, spec, as_of=as_of)
        now = dashboards.project_overview(camping, spec, as_of=None)

    means = [summary.mean for summary in before.summaries]
    assert [summary.mean for summary in again.summaries] == means
    assert [summary.mean for summary in now.summaries] != means
    # Only "tent" (day 0) and "stove" (day 1) were graded by then; "lamp" has no grade,
    # so the mean over judged queries leaves it out, and a mean over all counts it as 0.
    old = before.summaries[0]
    assert (old.queries, old.queries_judged, old.queries_returned, old.zero_idcg) == (2, 2, 3, 0)
    expected = core_values(old.result_list, spec, as_of)
    lamp = camping.queries.get(text="lamp").pk
    judged = [value for query, value in expected.items() if query != lamp]
    assert old.mean == pytest.approx(np.mean(judged))
    every = dashboards.project_overview(camping, spec.with_changes(mean_over="all"), as_of=as_of)
    assert every.summaries[0].zero_idcg == 1
    assert every.summaries[0].mean == pytest.approx(np.mean(list(expected.values())))


def test_the_overview_interval_surrounds_the_mean(camping):
    overview = dashboards.project_overview(camping, project_spec(camping), as_of=None)

    for summary in overview.summaries:
        interval = summary.interval
        assert interval.low <= summary.mean <= interval.high
        assert interval.estimate == pytest.approx(summary.mean)


def test_pool_progress_caps_grades_per_pair_and_counts_what_is_missing(camping):
    progress = pool_progress(camping, fresh=grades_freshness(camping.pk, as_of=None))

    # Pool (top 3 of either list): tent d1 d2 d3 d7, stove d1 d2 d3 d4, lamp d1 d2 d3 d4 d5.
    assert progress.pairs == 13
    assert progress.wanted == 26
    # d1, d2 and d3 have both grades, d4 and d5 one, d7 none.
    assert progress.collected == 6 + 7 + 8
    assert progress.needed == 5


def test_pool_progress_now_from_the_queue_table_equals_the_count_from_the_log(camping):
    query = camping.queries.get(text="tent")
    JudgementFactory(query=query, document=camping.documents.get(external_id="D7"), grade=1)
    JudgementFactory(query=query, document=camping.documents.get(external_id="D1"), grade=1)

    now = pool_progress(camping, fresh=grades_freshness(camping.pk, as_of=None))
    from_log = pool_progress(camping, fresh=from_the_log(LATER))

    assert now == from_log
    assert now.collected == 22


def test_pool_progress_as_of_a_moment_counts_a_pair_sent_back_as_now_does(camping, analyst):
    # d4 is fourth for tent in "old" and in "new": below the pool depth of 3, pooled
    # only once an analyst asks for one more grade.
    query = camping.queries.get(text="tent")
    document = camping.documents.get(external_id="D4")
    QueueRequest.objects.create(
        project=camping, query=query, document=document, wanted=2, requested_by=analyst
    )

    now = pool_progress(camping, fresh=grades_freshness(camping.pk, as_of=None))

    assert now.pairs == 14
    assert pool_progress(camping, fresh=from_the_log(LATER)) == now


def test_pool_progress_as_of_a_moment_counts_only_grades_given_by_then(camping):
    progress = pool_progress(
        camping, fresh=grades_freshness(camping.pk, as_of=NOV + dt.timedelta(hours=1))
    )

    assert progress.collected == 6


def test_a_third_grade_on_a_pair_is_not_counted_twice(camping):
    query = camping.queries.get(text="tent")
    document = camping.documents.get(external_id="D1")
    JudgementFactory(query=query, document=document, grade=2)

    assert pool_progress(camping, fresh=grades_freshness(camping.pk, as_of=None)).collected == 21


def test_the_query_table_lists_the_worst_queries_first_and_shows_the_change(camping):
    new = camping.result_lists.get(name="new")

    table = dashboards.query_table(
        camping, new, project_spec(camping), as_of=None, sort="ndcg", text="", page=None
    )

    values = [row.ndcg for row in table.rows]
    assert values == sorted(values)
    old_values = core_values(camping.result_lists.get(name="old"), project_spec(camping), LATER)
    for row in table.rows:
        assert row.change == pytest.approx(row.ndcg - old_values[row.query_id])


def test_the_query_table_filters_by_text_and_sorts_by_any_whitelisted_column(camping):
    new = camping.result_lists.get(name="new")
    spec = MetricSpec(k=2)

    table = dashboards.query_table(camping, new, spec, as_of=None, sort="-query", text="T", page=1)

    assert [row.text for row in table.rows] == ["tent", "stove"]
    assert table.matching == 2


def test_the_first_result_list_has_no_change_to_show(camping):
    old = camping.result_lists.get(name="old")

    table = dashboards.query_table(
        camping, old, project_spec(camping), as_of=None, sort="-change", text="", page=None
    )

    assert table.previous is None
    assert all(row.change is None for row in table.rows)


def test_the_query_detail_shows_the_same_ndcg_as_the_table_and_its_working(camping):
    new = camping.result_lists.get(name="new")
    query = camping.queries.get(text="stove")
    spec = MetricSpec(k=3, gain="linear", discount="rank")
    table = dashboards.query_table(camping, new, spec, as_of=None, sort="ndcg", text="", page=1)

    detail = dashboards.query_detail(camping, new, query, spec, as_of=None)

    expected = next(row.ndcg for row in table.rows if row.query_id == query.pk)
    assert detail.result.ndcg == pytest.approx(expected, abs=1e-12)
    assert detail.working[2].row.ndcg_at == pytest.approx(expected, abs=1e-12)
    # Rank 1 of "new" is d2, graded 1 by alice and 3 by bob: consensus 2.
    assert detail.raters == ["alice", "bob"]
    assert detail.hits[0].rater_grades == [1, 3] and detail.hits[0].consensus == 2.0
    assert [line.document.external_id for line in detail.working] == ["D2", "D1", "D4"]
    # d3 (grade 0) and d6 (grade 2) were judged but not returned: both enter the ideal.
    assert detail.judged_not_returned == 2 and detail.relevant_not_returned == 1


def test_removing_unjudged_hits_shifts_the_working_to_the_judged_ones(camping):
    new = camping.result_lists.get(name="new")
    tent = camping.queries.get(text="tent")

    kept = dashboards.query_detail(camping, new, tent, MetricSpec(k=3), as_of=None)
    removed = dashboards.query_detail(
        camping, new, tent, MetricSpec(k=3, unjudged="remove"), as_of=None
    )

    assert [hit.evaluated for hit in kept.hits] == [True, True, True, False, False]
    assert kept.working[2].row.grade is None and kept.result.judged == 2
    # d7 at rank 3 is unjudged: removing it moves d4 up into the top 3.
    assert [hit.evaluated for hit in removed.hits] == [True, True, False, True, False]
    assert [line.document.external_id for line in removed.working] == ["D2", "D1", "D4"]
    assert removed.result.ndcg > kept.result.ndcg


def test_the_comparison_counts_wins_and_tests_the_paired_difference(camping):
    old, new = camping.result_lists.get(name="old"), camping.result_lists.get(name="new")
    spec = project_spec(camping)

    result = dashboards.comparison(camping, old, new, spec, as_of=None, page=None)

    a = core_values(old, spec, LATER)
    b = core_values(new, spec, LATER)
    deltas = [b[q] - a[q] for q in sorted(a)]
    assert result.queries == 3
    assert result.wins == sum(d > 1e-9 for d in deltas)
    assert result.losses == sum(d < -1e-9 for d in deltas)
    assert result.wins + result.ties + result.losses == 3
    assert result.mean_difference == pytest.approx(np.mean(deltas))
    expected = paired_randomisation_test([a[q] for q in sorted(a)], [b[q] for q in sorted(a)])
    assert result.test.p_value == expected.p_value
    assert [row.delta for row in result.rows] == sorted(row.delta for row in result.rows)
    assert result.most_degraded == [row for row in result.rows if row.delta < -1e-9]
    assert result.most_improved == [row for row in result.rows[::-1] if row.delta > 1e-9]
    assert [(p["label"], p["x"], p["y"]) for p in result.chart["points"]] == [
        (row.text, row.a, row.b) for row in result.rows
    ]


def test_raters_agreement_equals_alpha_of_the_current_grades(camping):
    report = dashboards.raters_report(camping, policy="mean", as_of=None)

    # Per query: pairs (3,3), (1,3), (0,0) have two grades; d4, d5, d6 have one.
    values = [3, 3, 1, 3, 0, 0] * 3
    offsets = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]
    assert report.alpha == pytest.approx(krippendorff_alpha(values, offsets, "ordinal"))
    assert report.shared_pairs == 9 and report.pairs == 18 and report.grades == 27
    one_query = krippendorff_alpha([3, 3, 1, 3, 0, 0], [0, 2, 4, 6], "ordinal")
    assert [query.alpha for query in report.queries] == pytest.approx([one_query] * 3)


def test_each_raters_deviation_is_measured_on_shared_pairs_against_the_consensus(camping):
    report = dashboards.raters_report(camping, policy="mean", as_of=None)

    alice, bob = report.raters
    # Shared pairs: (3,3) -> 0; (1,3) consensus 2 -> 1 each; (0,0) -> 0.
    assert alice.username == "alice" and alice.compared == 9
    assert alice.mean_absolute_deviation == pytest.approx(1 / 3)
    assert bob.mean_absolute_deviation == pytest.approx(1 / 3)
    # alice graded d1..d4 and d6 for 3 queries: 3, 1, 0, 2, 2.
    assert alice.distribution == [3, 3, 6, 3]


def test_pairs_graded_two_or_more_apart_are_listed_with_every_raters_grade(camping):
    report = dashboards.raters_report(camping, policy="mean", as_of=None)

    assert report.disputed_total == 3
    assert {pair.document.external_id for pair in report.disputed} == {"D2"}
    assert all(pair.grades == [1, 3] and pair.spread == 2 for pair in report.disputed)


def test_agreement_as_of_a_moment_leaves_out_later_grades(camping):
    report = dashboards.raters_report(camping, policy="mean", as_of=NOV + dt.timedelta(hours=1))

    assert report.grades == 9
    assert len(report.queries) == 1


def test_the_comparisons_significance_is_reused_only_for_the_same_values():
    a = np.array([0.1, 0.5, 0.7, 0.2, 0.4, 0.9, 0.3, 0.0, 0.6, 0.8, 0.2, 0.5, 0.1, 0.7])
    b = a + np.linspace(-0.05, 0.1, len(a))
    first = significance(a, b)
    changed = b.copy()
    changed[0] = 0.9

    assert first == (
        paired_randomisation_test(a, b, n_resamples=RESAMPLES, seed=0),
        paired_bootstrap_ci(a, b, n_resamples=RESAMPLES, seed=0),
    )
    assert significance(a.copy(), b.copy()) == first
    assert significance(a, changed)[0].mean_difference == pytest.approx(np.mean(changed - a))
