"""Tries: NDCG at once against a baseline, nothing stored or queued unless kept."""

import pytest

from judgements.engines import tries
from judgements.engines.capture import capture_start
from judgements.engines.services import template_save
from judgements.models import Capture, Document, QueuePair, ResultList
from metrics.dashboards.result_list import result_list_metrics
from metrics.registry import project_spec
from tests.engines.conftest import cranfield_project, make_endpoint
from tests.engines.engine_server import Corpus

pytestmark = pytest.mark.django_db

TITLE_ONLY = '{"query": {"multi_match": {"query": "{{query}}", "fields": ["title"]}}}'


@pytest.fixture
def start(django_capture_on_commit_callbacks, analyst):
    def start(endpoint, **options) -> Capture:
        with django_capture_on_commit_callbacks(execute=True):
            capture = capture_start(endpoint=endpoint, user=analyst, **options)
        capture.refresh_from_db()
        return capture

    return start


@pytest.fixture
def setting(elastic, analyst, start):
    project = cranfield_project(analyst, queries=60)
    endpoint = make_endpoint(project, elastic, analyst)
    baseline = start(endpoint, name="production").result_list
    return project, endpoint, baseline


def test_a_try_of_the_same_template_has_the_baselines_ndcg(setting, start):
    project, endpoint, baseline = setting

    capture = start(endpoint, kind="try", baseline=baseline)
    report = tries.try_evaluate(capture)

    shown = result_list_metrics(project, baseline, project_spec(project), as_of=None)
    assert report.mean == pytest.approx(shown.summary.mean, abs=1e-12)
    assert report.difference == pytest.approx(0.0, abs=1e-12)
    assert report.wins == report.losses == 0 and report.ties == report.queries > 0


def test_a_try_of_another_template_shows_its_change_per_query(setting, start, analyst):
    project, endpoint, baseline = setting
    queues = QueuePair.objects.filter(query__project=project).count()
    lists = ResultList.objects.filter(project=project).count()
    template = template_save(endpoint=endpoint, body=TITLE_ONLY, user=analyst)

    capture = start(endpoint, kind="try", baseline=baseline, template=template)
    report = tries.try_evaluate(capture)

    assert capture.status == "done" and capture.result_list is None
    assert report.wins + report.losses > 0
    assert report.difference == pytest.approx(report.mean_paired - report.mean_baseline)
    worst = report.rows[0]
    assert worst.delta == min(row.delta for row in report.rows if row.delta is not None)
    assert report.unjudged > 0
    # Nothing was stored, nothing joined the queue.
    assert ResultList.objects.filter(project=project).count() == lists
    assert QueuePair.objects.filter(query__project=project).count() == queues


def test_keeping_a_try_stores_it_and_queues_its_unjudged_hits(setting, start, analyst):
    project, endpoint, baseline = setting
    template = template_save(endpoint=endpoint, body=TITLE_ONLY, user=analyst)
    capture = start(endpoint, kind="try", baseline=baseline, template=template)
    report = tries.try_evaluate(capture)

    kept = tries.try_keep(capture=capture, name="title only")

    assert kept.name == "title only" and "kept try" in kept.engine
    pooled = set(
        QueuePair.objects.filter(query__project=project).values_list("query_id", "document_id")
    )
    assert len(report.unjudged_pairs) > 0
    queued = {
        (query, project.documents.get(external_id=key).pk) for query, key in report.unjudged_pairs
    }
    assert queued <= pooled
    with pytest.raises(Exception, match="kept already"):
        tries.try_keep(capture=capture, name="again")


def test_a_try_describes_each_document_once_and_keeping_it_describes_them_all(
    setting, start, analyst
):
    project, endpoint, _ = setting
    capture = start(endpoint, kind="try")
    hits = [hit for _, ranked in capture.ranking for hit in ranked]
    returned = {hit["id"] for hit in hits}
    described = [hit["id"] for hit in hits if "title" in hit]
    # Cranfield's queries share documents: some came back for several queries.
    assert len(hits) > len(returned)
    assert sorted(described) == sorted(returned)

    tries.try_keep(capture=capture, name="kept")

    titles = dict(
        Document.objects.filter(project=project, external_id__in=returned).values_list(
            "external_id", "title"
        )
    )
    corpus = {document["id"]: document for document in Corpus.load().documents}
    assert titles == {key: corpus[key]["title"].strip() for key in returned}
