"""Capturing result lists from real engines' wire formats on 127.0.0.1, through the real
clients: what is stored, and every way it can fail without storing half of it."""

import socket

import numpy as np
import pytest
import pytrec_eval

from judgements.engines.capture import capture_start
from judgements.importers import HitRow, ImportRejected, LineError
from judgements.imports.result_lists import result_list_import_hits
from judgements.models import Capture, Document, Hit, QueuePair, ResultList
from metrics.evaluate import result_list_evaluate
from metrics.registry import project_spec
from tests.engines.conftest import cranfield_project, make_endpoint
from tests.engines.engine_server import ERRORS
from tests.shared import CRANFIELD

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(django_capture_on_commit_callbacks, analyst):
    """Start a capture and let its task run (the immediate backend runs it at commit)."""

    def run(endpoint, **options) -> Capture:
        with django_capture_on_commit_callbacks(execute=True):
            capture = capture_start(endpoint=endpoint, user=analyst, **options)
        capture.refresh_from_db()
        return capture

    return run


def ranking_of(result_list) -> dict[str, list[str]]:
    hits = Hit.objects.filter(result_list=result_list).order_by("query__external_id", "rank")
    ranking = {}
    for qid, docid in hits.values_list("query__external_id", "document__external_id"):
        ranking.setdefault(qid, []).append(docid)
    return ranking


def qrels() -> dict[str, dict[str, int]]:
    found = {}
    for line in (CRANFIELD / "qrels.txt").read_text().splitlines():
        qid, _, docid, grade = line.split()
        found.setdefault(qid, {})[docid] = int(grade)
    return found


@pytest.mark.parametrize("flavour", ["elastic", "opensearch", "solr", "search_api"])
def test_a_capture_stores_the_engines_ranking_as_a_result_list(flavour, request, analyst, run):
    server = request.getfixturevalue(flavour)
    project = cranfield_project(analyst, queries=30)
    endpoint = make_endpoint(project, server, analyst)

    capture = run(endpoint)

    assert capture.status == "done", capture.error
    assert capture.failed == 0 and capture.result_list is not None
    stored = ranking_of(capture.result_list)
    # The engine's own order, query by query, as the server ranks it.
    first = project.queries.get(external_id="1")
    _, expected = server.corpus.top(first.text, {"title": 2.0, "text": 1.0}, 10)
    assert stored["1"] == [server.corpus.documents[i]["id"] for i, _ in expected]
    assert len(stored) == 30 and all(len(docs) == 10 for docs in stored.values())
    # Documents were created from the hits' fields.
    document = Document.objects.get(project=project, external_id=stored["1"][0])
    assert document.title and document.snippet


def test_a_captured_lists_ndcg_is_trec_evals_number(elastic, analyst, run):
    project = cranfield_project(analyst, queries=225)
    project.metric_gain = "linear"  # trec_eval's gain
    project.save()
    capture = run(make_endpoint(project, elastic, analyst))
    spec = project_spec(project)

    grades, result = result_list_evaluate(capture.result_list, spec)

    run_dict = {
        qid: {docid: float(10 - rank) for rank, docid in enumerate(docs)}
        for qid, docs in ranking_of(capture.result_list).items()
    }
    judged = qrels()
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10"})
    theirs = evaluator.evaluate({q: d for q, d in run_dict.items() if q in judged})
    external = dict(project.queries.values_list("id", "external_id"))
    ours = {
        external[q]: v
        for q, v in zip(grades.query_ids.tolist(), result.ndcg.tolist(), strict=True)
    }
    for qid, values in theirs.items():
        assert ours[qid] == pytest.approx(values["ndcg_cut_10"], abs=1e-12)
    mean = float(np.mean([values["ndcg_cut_10"] for values in theirs.values()]))
    assert 0.2 < mean < 0.6  # BM25 on Cranfield: a real number, not a constant.


def test_new_hits_within_the_pool_depth_join_the_raters_queue(elastic, analyst, run):
    project = cranfield_project(analyst, queries=5)
    project.pool_depth = 5
    project.save()

    capture = run(make_endpoint(project, elastic, analyst))

    pooled = set(
        QueuePair.objects.filter(query__project=project).values_list("query_id", "document_id")
    )
    top = set(
        Hit.objects.filter(result_list=capture.result_list, rank__lte=5).values_list(
            "query_id", "document_id"
        )
    )
    deeper = set(
        Hit.objects.filter(result_list=capture.result_list, rank__gt=5).values_list(
            "query_id", "document_id"
        )
    )
    assert top <= pooled
    assert deeper and not deeper & pooled


def test_a_chosen_subset_of_queries_is_captured(elastic, analyst, run):
    project = cranfield_project(analyst, queries=20)
    wanted = list(project.queries.filter(external_id__in=["3", "7"]).values_list("id", flat=True))

    capture = run(make_endpoint(project, elastic, analyst), query_ids=wanted)

    assert sorted(ranking_of(capture.result_list)) == ["3", "7"]
    assert capture.total == 2


def test_a_documents_stored_fields_are_updated_and_unread_ones_kept(elastic, analyst, run):
    project = cranfield_project(analyst, queries=1)
    query = project.queries.get()
    [(top, _)] = elastic.corpus.top(query.text, {"title": 2.0, "text": 1.0}, 1)[1]
    key = elastic.corpus.documents[top]["id"]
    Document.objects.update_or_create(
        project=project,
        external_id=key,
        defaults={"title": "old", "url": "https://example.org/d", "fields": {"team": "kept"}},
    )
    endpoint = make_endpoint(project, elastic, analyst, kept_fields=["author"])

    run(endpoint)

    document = Document.objects.get(project=project, external_id=key)
    assert document.title == elastic.corpus.documents[top]["title"]
    assert document.url == "https://example.org/d"
    assert document.fields["team"] == "kept" and document.fields["author"]


def test_hits_read_for_their_ids_alone_create_bare_documents(elastic, analyst, run):
    project = cranfield_project(analyst, queries=5)
    before = set(project.documents.values_list("external_id", flat=True))
    endpoint = make_endpoint(project, elastic, analyst, title_field="", snippet_field="")

    capture = run(endpoint)

    assert capture.status == "done", capture.error
    created = project.documents.exclude(external_id__in=before)
    assert created.exists()
    # A hit's score is the hit's, not a field of its document.
    assert {(d.title, d.snippet, str(d.fields)) for d in created} == {("", "", "{}")}
    assert Hit.objects.filter(result_list=capture.result_list).count() == 50


def test_a_failed_query_is_listed_with_its_status_and_the_engines_message(elastic, analyst, run):
    project = cranfield_project(analyst, queries=10)
    bad = project.queries.get(external_id="4")
    error = dict(ERRORS["es_parsing_exception"], status=400)
    elastic.item_errors[bad.text] = error

    capture = run(make_endpoint(project, elastic, analyst))

    assert capture.status == "done" and capture.failed == 1
    [failure] = capture.failures
    assert failure == {
        "query": bad.text,
        "status": 400,
        "message": "parsing_exception: unknown query [mtch]",
    }
    assert "4" not in ranking_of(capture.result_list)
    assert len(ranking_of(capture.result_list)) == 9


def test_a_capture_in_which_every_query_failed_stores_nothing_and_says_why(solr, analyst, run):
    project = cranfield_project(analyst, queries=5)
    endpoint = make_endpoint(project, solr, analyst, template='{"q": "({{query}}"}')

    capture = run(endpoint)

    assert capture.status == "failed" and capture.failed == 5
    assert "Every query failed (5 of 5), so nothing was stored" in capture.error
    assert "org.apache.solr.search.SyntaxError: Cannot parse" in capture.error
    assert not ResultList.objects.filter(project=project).exists()


def test_credentials_refused_stop_the_capture_at_once(elastic, analyst, run):
    project = cranfield_project(analyst, queries=60)
    elastic.auth = ("basic", "elastic", "right")
    endpoint = make_endpoint(
        project, elastic, analyst, auth="basic", username="elastic", secret="wrong"
    )

    capture = run(endpoint)

    assert capture.status == "failed"
    assert capture.error.startswith("HTTP 401: security_exception: missing authentication")
    # Fifteen batches of four queries; those in flight finish, no other is sent.
    assert len(elastic.requests) <= 2 * endpoint.concurrency < 15
    assert not ResultList.objects.filter(project=project).exists()


@pytest.mark.parametrize(
    "auth, credentials",
    [("basic", ("elastic", "s3cret")), ("api_key", ("a2V5OnZhbHVl",)), ("bearer", ("tok",))],
)
def test_each_authentication_is_sent_as_the_engine_expects(
    elastic, analyst, run, auth, credentials
):
    project = cranfield_project(analyst, queries=2)
    elastic.auth = (auth, *credentials)
    username = credentials[0] if auth == "basic" else ""
    endpoint = make_endpoint(
        project, elastic, analyst, auth=auth, username=username, secret=credentials[-1]
    )

    assert credentials[-1] not in endpoint.secret_encrypted
    assert run(endpoint).status == "done"


def test_a_429_is_waited_out_as_its_retry_after_says(elastic, analyst, run):
    project = cranfield_project(analyst, queries=3)
    elastic.statuses = [(429, {"Retry-After": "1"}, ERRORS["es_rejected"])]
    import time

    started = time.monotonic()
    capture = run(make_endpoint(project, elastic, analyst))

    assert capture.status == "done" and capture.failed == 0
    assert time.monotonic() - started >= 1.0
    # Three queries, one per _msearch at this size, and the throttled one sent again.
    assert len(elastic.requests) == 4


def test_a_429_that_never_ends_fails_its_queries(elastic, analyst, run, settings):
    project = cranfield_project(analyst, queries=2)
    elastic.statuses = [(429, {"Retry-After": "0"}, ERRORS["es_rejected"])] * 10

    capture = run(make_endpoint(project, elastic, analyst))

    assert capture.status == "failed"
    assert "HTTP 429 Too Many Requests, 4 times" in capture.error


def test_a_5xx_fails_the_queries_it_answered(search_api, analyst, run):
    project = cranfield_project(analyst, queries=4)
    search_api.statuses = [(503, {}, {"error": "overloaded"})]

    capture = run(make_endpoint(project, search_api, analyst, concurrency=1))

    assert capture.status == "done" and capture.failed == 1
    assert capture.failures[0]["status"] == 503
    assert capture.failures[0]["message"] == "overloaded"


def test_an_answer_that_is_not_json_is_a_clear_failure(solr, analyst, run):
    project = cranfield_project(analyst, queries=2)
    solr.statuses = [(200, {}, b"<html><body>proxy error</body></html>")] * 2

    capture = run(make_endpoint(project, solr, analyst))

    assert capture.status == "failed"
    assert "The answer is not JSON (text/html, 37 bytes)." in capture.error
    assert "proxy error" not in capture.error


def test_a_hit_without_the_id_field_fails_its_query(search_api, analyst, run):
    project = cranfield_project(analyst, queries=3)
    search_api.no_id.add(project.queries.get(external_id="2").text)

    capture = run(make_endpoint(project, search_api, analyst))

    assert capture.failed == 1
    assert capture.failures[0]["message"] == 'Hit 1 has no id field "docid".'


def test_an_endpoint_that_returns_ten_thousand_hits_keeps_the_depth(search_api, analyst, run):
    project = cranfield_project(analyst, queries=2)
    search_api.many = 10_000

    capture = run(make_endpoint(project, search_api, analyst, depth=20))

    assert capture.status == "done"
    assert {len(docs) for docs in ranking_of(capture.result_list).values()} == {20}
    assert capture.notes == [
        "2 queries returned more hits than the depth (up to 10,000); the first of each were kept."
    ]


def test_an_unreachable_host_is_one_clear_error(analyst, run, elastic):
    project = cranfield_project(analyst, queries=3)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    endpoint = make_endpoint(project, elastic, analyst, base_url=f"http://127.0.0.1:{port}")

    capture = run(endpoint)

    assert capture.status == "failed"
    assert capture.error == (
        f"http://127.0.0.1:{port}: could not connect to the server (refused or unreachable)."
    )


def test_a_tls_failure_is_one_clear_error(analyst, run, opensearch):
    project = cranfield_project(analyst, queries=3)
    port = opensearch.httpd.server_address[1]
    endpoint = make_endpoint(project, opensearch, analyst, base_url=f"https://127.0.0.1:{port}")

    capture = run(endpoint)

    assert capture.status == "failed"
    assert "the TLS connection failed" in capture.error


def test_the_metadata_address_is_refused_before_any_request(analyst, run, elastic, settings):
    project = cranfield_project(analyst, queries=2)
    endpoint = make_endpoint(project, elastic, analyst, base_url="http://169.254.169.254:9200")

    capture = run(endpoint)

    assert capture.status == "failed"
    assert "169.254.169.254:9200 is the cloud metadata address" in capture.error


def test_loopback_is_refused_without_the_operators_allowance(analyst, run, solr, settings):
    project = cranfield_project(analyst, queries=2)
    endpoint = make_endpoint(project, solr, analyst)
    settings.OUTBOUND_ALLOW = []

    capture = run(endpoint)

    assert capture.status == "failed" and "OUTBOUND_ALLOW" in capture.error
    assert solr.requests == []


def test_search_endpoint_allow_narrows_the_outbound_policy(analyst, run, elastic, settings):
    project = cranfield_project(analyst, queries=2)
    endpoint = make_endpoint(project, elastic, analyst)
    settings.SEARCH_ENDPOINT_ALLOW = ["search.example.org", "10.0.0.0/8"]

    capture = run(endpoint)

    assert capture.status == "failed"
    assert "127.0.0.1 is not among the hosts SEARCH_ENDPOINT_ALLOW allows" in capture.error
    assert elastic.requests == []
    settings.SEARCH_ENDPOINT_ALLOW = ["127.0.0.0/8"]
    assert run(endpoint, name="allowed").status == "done"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_deleting_a_project_or_a_captured_list_takes_the_engines_rows_along(elastic, analyst, run):
    from judgements import jobs
    from judgements.engines.schedules import schedule_create
    from judgements.models import CaptureSchedule, Job, SearchEndpoint, SearchTemplate

    project = cranfield_project(analyst, queries=3)
    endpoint = make_endpoint(project, elastic, analyst)
    first = run(endpoint, name="first")
    second = run(endpoint, name="second", kind="try", baseline=first.result_list)
    schedule_create(endpoint=endpoint, expression="0 3 * * *", user=analyst)

    job = jobs.result_list_delete_start(result_list=first.result_list, user=analyst)

    assert Job.objects.get(pk=job.pk).status == "done"
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.result_list is None and second.baseline is None
    job = jobs.project_delete_start(project=project, user=analyst)
    assert Job.objects.get(pk=job.pk).status == "done"
    for model in (SearchEndpoint, SearchTemplate, Capture, CaptureSchedule):
        assert not model.objects.exists()


def test_solrs_401_page_is_named_by_its_status_not_echoed(solr, analyst, run):
    project = cranfield_project(analyst, queries=2)
    solr.auth = ("basic", "solr", "SolrRocks")

    capture = run(make_endpoint(project, solr, analyst))

    assert capture.status == "failed"
    assert capture.error == "HTTP 401 (Unauthorized)"


def test_a_json_apis_own_error_message_is_shown(search_api, analyst, run):
    project = cranfield_project(analyst, queries=2)
    search_api.auth = ("bearer", "right")

    capture = run(make_endpoint(project, search_api, analyst, auth="bearer", secret="wrong"))

    assert capture.error == "HTTP 401: unauthorised"


def test_hits_read_already_are_stored_in_their_order_all_or_nothing(analyst):
    project = cranfield_project(analyst, queries=2)
    first, second = project.queries.order_by("id")
    hits = [
        HitRow(1, first.pk, "new-a", 1, 1.0),
        HitRow(2, first.pk, "new-b", 2, 3.0),  # A higher score, kept second all the same.
        HitRow(1, second.pk, "new-a", 1, None),
    ]

    with pytest.raises(ImportRejected, match="must be finite"):
        result_list_import_hits(
            project=project, hits=[*hits, LineError(3, "score", "must be finite.")], name="x"
        )
    assert not project.result_lists.exists()
    assert not project.documents.filter(external_id__startswith="new-").exists()

    stored = result_list_import_hits(project=project, hits=hits, name="x").result_list
    ranked = stored.hits.order_by("query_id", "rank").values_list(
        "query_id", "document__external_id", "rank"
    )
    assert list(ranked) == [
        (first.pk, "new-a", 1),
        (first.pk, "new-b", 2),
        (second.pk, "new-a", 1),
    ]
    with pytest.raises(ImportRejected, match="named"):
        result_list_import_hits(project=project, hits=hits, name="x")
