"""Query sets drawn from traffic: strata with their cuts, seeded and repeatable, the top N;
and NDCG's mean weighted by the traffic kept (weight=traffic)."""

import numpy as np
import pytest
from django.core.management import call_command

from judgements.models import Query
from metrics.dashboards.evaluations import counted_as
from metrics.registry import MetricSpec
from searchlogs.models import QueryTraffic, SearchEvent
from searchlogs.sampling import queries_from_traffic, strata
from searchlogs.services import search_log_ingest
from tests.factories import ProjectFactory, QueryFactory
from tests.searchlogs.conftest import impression, jsonl


def traffic_log(counts: dict[str, int]) -> bytes:
    events, number = [], 0
    for text, pages in counts.items():
        for _ in range(pages):
            number += 1
            events.append(impression(f"e{number}", f"s{number}", "2026-11-20T10:00:00Z", text))
    return jsonl(*events)


# 40 texts of Zipf-like traffic: "text 0" has 200 pages, "text 39" 5.
COUNTS = {f"text {n}": int(200 / (n + 1)) + 4 for n in range(40)}


@pytest.fixture
def logged(db):
    project = ProjectFactory()
    QueryFactory(project=project, text="Text 0")  # Matches "text 0" by normalised text.
    search_log_ingest(project=project, upload=[traffic_log(COUNTS)])
    return project


def test_strata_cut_the_traffic_in_thirds():
    pages = np.array(sorted(COUNTS.values(), reverse=True))
    # 1,002 pages: a third is 334. Before text 2 come 204 + 104 = 308 pages (< 334: head),
    # before text 3 378 (torso); before text 12 666 (< 668: torso), before text 13 685.
    assert pages[:4].tolist() == [204, 104, 70, 54] and pages.sum() == 1002
    assert np.bincount(strata(pages)).tolist() == [3, 10, 27]


def test_a_stratified_sample_draws_from_each_stratum_and_again_the_same(logged):
    first = queries_from_traffic(project=logged, size=9, seed=3)
    kept = sorted(QueryTraffic.objects.values_list("query__text", "impressions", "stratum"))
    again = queries_from_traffic(project=logged, size=9, seed=3)
    other = queries_from_traffic(project=logged, size=9, seed=4)

    assert [cut.stratum for cut in first.cuts] == ["head", "torso", "tail"]
    assert sum(cut.pages for cut in first.cuts) == sum(COUNTS.values())
    assert sorted(stratum for *_, stratum in first.drawn) == ["head"] * 3 + ["tail"] * 3 + [
        "torso"] * 3  # fmt: skip
    assert again.drawn == first.drawn and other.drawn != first.drawn
    assert len(kept) == 9 and all(COUNTS[text.lower()] == pages for text, pages, _ in kept)
    # The query the project had is reused; the others are made, and their pages matched.
    assert Query.objects.filter(project=logged, text__iexact="text 0").count() == 1
    drawn = Query.objects.filter(traffic__isnull=False)
    for query in drawn:
        assert SearchEvent.objects.filter(query=query).count() == query.traffic.impressions


def test_the_top_n_and_a_stratum_too_small_to_fill(logged):
    top = queries_from_traffic(project=logged, size=3, method="top")
    assert [text for text, _, _ in top.drawn] == ["text 0", "text 1", "text 2"]
    assert {stratum for *_, stratum in top.drawn} == {"top"} and top.seed is None
    # The head has only a few texts: asked for many, it gives all it has.
    cuts = {cut.stratum: cut.texts for cut in top.cuts}
    whole = queries_from_traffic(project=logged, size=30, seed=1)
    drawn = [stratum for *_, stratum in whole.drawn]
    assert drawn.count("head") == cuts["head"] and len(drawn) == 30


def test_the_command_prints_the_cuts_and_the_queries(logged, capsys):
    call_command("sample_queries", logged.slug, "6", "--seed", "2")
    out = capsys.readouterr().out
    assert " head: " in out and "torso: " in out and " tail: " in out
    assert "Drew 6 queries (stratified, seed 2):" in out


def test_an_empty_log_has_nothing_to_draw(db):
    with pytest.raises(ValueError, match="no results page"):
        queries_from_traffic(project=ProjectFactory(), size=3)


def test_the_weighted_mean_weighs_each_query_by_its_traffic(logged):
    queries_from_traffic(project=logged, size=3, method="top")
    ids = np.array(sorted(QueryTraffic.objects.values_list("query_id", flat=True)))
    pages = dict(QueryTraffic.objects.values_list("query_id", "impressions"))
    from metrics.dashboards.evaluations import Evaluation

    evaluation = Evaluation(
        result_list=None, query_ids=ids, ndcg=np.array([1.0, 0.5, 0.0]), dcg=np.zeros(3),
        idcg=np.ones(3), judged=np.ones(3), retrieved=np.ones(3), judgements=np.ones(3, int),
        all_irrelevant=np.zeros(3, bool), as_of=None, source=None,
    )  # fmt: skip
    (plain,) = counted_as(logged, MetricSpec(), [evaluation], fresh=None)
    spec = MetricSpec(weight="traffic")
    (weighted,) = counted_as(logged, spec, [evaluation], fresh=None)
    expected = sum(pages[i] * v for i, v in zip(ids.tolist(), [1.0, 0.5, 0.0], strict=True))
    assert plain.mean == pytest.approx(0.5)
    assert weighted.mean == pytest.approx(expected / sum(pages.values()))
    assert MetricSpec(weight="traffic").name.endswith(" judged traffic")
    assert MetricSpec.parse(MetricSpec(weight="traffic").name).weight == "traffic"
