"""The online panel on the overview and the query detail (analysts only, as the pages)."""

import pytest
from django.test import Client

from searchlogs.services import search_log_ingest
from tests.factories import JudgementFactory
from tests.searchlogs.conftest import WORKED_LOG, jsonl


@pytest.fixture
def charlie(analyst):
    client = Client()
    client.force_login(analyst)
    return client


@pytest.fixture
def graded(queries, rater):
    # The overview fails (500) for a project without any judgement, in
    # metrics.selectors.pair_grades, which is not this app's; one grade avoids that.
    hit = queries["tent"].hits.get(rank=1)
    JudgementFactory(query=hit.query, document=hit.document, rater=rater, grade=2)
    return queries


@pytest.fixture
def logged(graded):
    queries = graded
    search_log_ingest(project=queries["tent"].project, upload=[jsonl(*WORKED_LOG)])
    return queries


def panel(response) -> str:
    html = response.content.decode()
    start = html.index('id="online-metrics"')
    return html[start : html.index("</section>", start)]


def test_the_overview_shows_the_worked_day_and_the_unmatched_texts(charlie, logged):
    response = charlie.get("/metrics/outdoor/")

    assert response.status_code == 200
    shown = panel(response)
    assert 'id="online-chart"' in shown and 'id="online-data"' in shown
    assert "<td>2026-11-20</td>" in shown
    assert '<td class="num">0.400</td>' in shown  # CTR 2/5
    assert '<td class="num">0.667</td>' in shown  # 2 of 3 sessions
    assert "2 results pages matched no query of this project" in shown
    assert "“sleeping bag” (2)" in shown


def test_the_query_detail_shows_the_querys_own_figures(charlie, logged):
    tent = logged["tent"]
    result_list = tent.hits.first().result_list

    shown = panel(charlie.get(f"/metrics/outdoor/{result_list.pk}/queries/{tent.pk}/"))

    assert "Searchers of “tent”" in shown
    # Its pages: s1's first (one short click) and s2's: CTR 1/2; s1 and s2 began
    # with "tent" and both succeeded.
    assert '<td class="num">0.500</td>' in shown
    assert '<td class="num">1.000</td>' in shown
    assert f"by=day_query&amp;query={tent.pk}" in shown


def test_without_a_log_the_panel_links_to_the_uploads_page(charlie, graded):
    shown = panel(charlie.get("/metrics/outdoor/"))

    assert "No search log yet" in shown
    assert 'href="/projects/outdoor/uploads/#search_log"' in shown
    assert "manage.py" not in shown and "/api/" not in shown
    assert 'id="online-chart"' not in shown


def test_a_rater_still_gets_403(client, rater, logged):
    client.force_login(rater)

    assert client.get("/metrics/outdoor/").status_code == 403
