"""The dashboards of a project that is just starting, and their links onward.

charlie (analyst) reads them. A project with no queries or result lists says what to
do next: no 400 on compare, no chart drawn without data (its axis began in 1970).
"""

import csv
import datetime as dt
import io
import re
from html import unescape

import pytest
import time_machine
from django.urls import reverse
from django.utils import timezone

from metrics.evaluate import metric_points_build, overall_point
from metrics.refresh import metric_points_store
from metrics.registry import project_spec
from tests.factories import HitFactory, JudgementFactory, ResultListFactory

pytestmark = pytest.mark.django_db
NOV = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


@pytest.fixture
def charlie(client, analyst):
    client.force_login(analyst)
    return client


def text_of(response) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", response.content.decode())))


@pytest.mark.parametrize("lists", [0, 1])
def test_compare_with_fewer_than_two_result_lists_says_what_to_do(charlie, project, lists):
    for number in range(lists):
        HitFactory(result_list__project=project, result_list__name=f"list {number}")
    response = charlie.get(reverse("metrics:compare", args=["outdoor"]))
    assert response.status_code == 200
    text = text_of(response)
    assert f"this project has {lists}." in text and "Upload a result list →" in text
    assert "<canvas" not in response.content.decode()


def test_the_overview_of_an_empty_project_draws_no_chart(charlie, project):
    response = charlie.get(reverse("metrics:overview", args=["outdoor"]))
    assert response.status_code == 200
    assert "No result lists yet: upload one →" in text_of(response)
    assert "<canvas" not in response.content.decode()
    # No moment without a date, no bootstrap of nothing.
    assert "as of UTC" not in text_of(response) and "as of now" in text_of(response)
    assert "up to UTC" not in text_of(response) and "with a different one, up to now" in text_of(
        response
    )
    assert "0 resamples" not in text_of(response)


def test_the_overview_draws_no_series_chart_before_a_point_is_stored(charlie, query_with_hits):
    html = charlie.get(reverse("metrics:overview", args=["outdoor"])).content.decode()
    assert 'id="capture-chart"' in html and 'id="series-chart"' not in html
    assert "No stored points yet" in html


@pytest.fixture
def two_lists(query_with_hits, rater, other_rater):
    project = query_with_hits.project
    old = project.result_lists.get()
    new = ResultListFactory(project=project, name="new", captured_at=NOV + dt.timedelta(days=1))
    hits = list(query_with_hits.hits.order_by("rank"))
    for rank, hit in enumerate(reversed(hits), start=1):
        HitFactory(result_list=new, query=query_with_hits, document=hit.document, rank=rank)
    JudgementFactory(query=query_with_hits, document=hits[0].document, rater=rater, grade=3)
    JudgementFactory(query=query_with_hits, document=hits[0].document, rater=other_rater, grade=0)
    return old, new


def test_compare_links_every_query_to_its_detail_in_the_candidate(charlie, two_lists):
    old, new = two_lists
    html = charlie.get(reverse("metrics:compare", args=["outdoor"])).content.decode()
    detail = reverse("metrics:query", args=["outdoor", new.pk, old.hits.first().query_id])
    assert f'href="{detail}?' in html


def test_the_raters_page_links_disputed_pairs_to_their_query(charlie, two_lists):
    _, new = two_lists
    response = charlie.get(reverse("metrics:raters", args=["outdoor"]))
    ((pair, link),) = response.context["disputed"]
    assert link == reverse("metrics:query", args=["outdoor", new.pk, pair.query_id])
    assert f'<a href="{link}">tent</a>' in response.content.decode()


def test_the_project_page_links_each_result_list_to_its_queries(charlie, two_lists):
    old, _ = two_lists
    html = charlie.get(reverse("judgements:project", args=["outdoor"])).content.decode()
    assert f'href="{reverse("metrics:queries", args=["outdoor", old.pk])}">bm25</a>' in html


def test_the_metric_series_downloads_as_csv(charlie, two_lists):
    old, new = two_lists
    spec = project_spec(old.project)
    for result_list in (old, new):
        metric_points_store(metric_points_build(result_list, spec, as_of=NOV))
        metric_points_store([overall_point(result_list, spec, as_of=NOV)])
    response = charlie.get(reverse("metrics:series_export", args=["outdoor"]))
    assert response["Content-Disposition"] == 'attachment; filename="outdoor-metric-series.csv"'
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert (
        lines[0]
        == "result_list,metric,as_of,value,ci_low,ci_high,judged,retrieved,queries,zero_idcg,"
        "grades,ci_pending,covers_until"
    )
    # A past point covers the judgements up to its as_of.
    assert [line.split(",")[:3] + line.split(",")[-3:] for line in lines[1:]] == [
        ["bm25", spec.name, "2026-11-01T00:00:00.000000Z", "human", "false", NOV_ISO],
        ["new", spec.name, "2026-11-01T00:00:00.000000Z", "human", "false", NOV_ISO],
    ]


NOV_ISO = "2026-11-01T00:00:00.000000Z"


def test_the_current_hours_point_is_dated_by_when_it_was_computed(charlie, two_lists):
    old, _ = two_lists
    spec = project_spec(old.project)
    computed = timezone.now().replace(minute=10, second=0, microsecond=0)
    end_of_hour = computed.replace(minute=0) + dt.timedelta(hours=1)
    with time_machine.travel(computed, tick=False):
        metric_points_store(metric_points_build(old, spec, as_of=end_of_hour))
        metric_points_store([overall_point(old, spec, as_of=end_of_hour)])

    response = charlie.get(reverse("metrics:series_export", args=["outdoor"]))

    [row] = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert row["as_of"] == f"{end_of_hour:%Y-%m-%dT%H:%M:%S}.000000Z"
    assert row["covers_until"] == f"{computed:%Y-%m-%dT%H:%M:%S}.000000Z"


def test_the_series_of_both_grades_is_its_own_file_even_without_machine_judges(charlie, two_lists):
    response = charlie.get(reverse("metrics:series_export", args=["outdoor"]), {"grades": "both"})

    disposition = 'attachment; filename="outdoor-metric-series-both.csv"'
    assert response["Content-Disposition"] == disposition


def test_the_project_page_links_to_each_dashboard_and_to_rating(charlie, two_lists):
    html = charlie.get(reverse("judgements:project", args=["outdoor"])).content.decode()
    for name in ("metrics:overview", "metrics:compare", "metrics:raters"):
        assert f'href="{reverse(name, args=["outdoor"])}"' in html, name
    for name in ("judgements:rate", "judgements:bulk", "judgements:uploads"):
        assert f'href="{reverse(name, args=["outdoor"])}' in html, name
