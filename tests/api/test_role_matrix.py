"""Every endpoint against every role: exactly the allowed status codes, never data otherwise.

Anonymous callers get 401. A rater (alice) may list projects she may rate, read her
own judgements, take her next pair and post answers; everything else is 403. An
analyst (charlie) may use everything. dave, with no role, gets 403 everywhere.
"""

import json

import pytest
from django.urls import get_resolver

from judgements.engines.capture import capture_start
from judgements.engines.schedules import schedule_create
from judgements.machine.services import machine_judge_create
from judgements.models import Capture, Job, Project
from judgements.projects import settings_fields
from tests.api.conftest import NOV, upload
from tests.engines.conftest import MULTI_MATCH, make_endpoint
from tests.engines.engine_server import EngineServer
from tests.factories import QueryFactory, ResultListFactory

OK = {"GET": 200, "POST": 201, "PUT": 200, "PATCH": 200, "DELETE": 202}


def endpoints(project, result_list, query, document, job, engine, judge):
    """(name, method, path, form) for every API operation."""
    slug, run = project.slug, result_list.pk
    qid = query.pk
    settings = {name: getattr(project, name) for name in settings_fields()}
    new_judge = {"name": "New judge", "base_url": judge.base_url, "model": "m"}
    return [
        ("projects", "GET", "/api/projects/", None),
        ("projects", "POST", "/api/projects/", {"name": "New", "slug": "new-project"}),
        ("project", "GET", f"/api/projects/{slug}/", None),
        ("project", "PUT", f"/api/projects/{slug}/", settings | {"name": "Renamed"}),
        ("project", "PATCH", f"/api/projects/{slug}/", {"pool_depth": 5}),
        ("project", "DELETE", f"/api/projects/{slug}/", None),
        ("job", "GET", f"/api/jobs/{job.pk}/", None),
        ("queries", "GET", f"/api/projects/{slug}/queries/", None),
        ("queries-import", "POST", f"/api/projects/{slug}/queries/import/", "text\nhat\n"),
        ("documents", "GET", f"/api/projects/{slug}/documents/", None),
        ("documents-import", "POST", f"/api/projects/{slug}/documents/import/", '{"id": "A"}'),
        ("result-lists", "GET", f"/api/projects/{slug}/result-lists/", None),
        (
            "result-lists-import",
            "POST",
            f"/api/projects/{slug}/result-lists/import/",
            f"{qid} Q0 SKU-1 1 1 new-run\n",
        ),
        ("result-list", "GET", f"/api/result-lists/{run}/", None),
        ("hits", "GET", f"/api/result-lists/{run}/hits/", None),
        ("result-list-export", "GET", f"/api/result-lists/{run}/export/", None),
        ("judgements", "GET", "/api/judgements/", None),
        ("judgement-create", "POST", "/api/judgements/create/", {"document": document.pk}),
        ("next", "GET", f"/api/projects/{slug}/next/", None),
        ("grades", "GET", f"/api/projects/{slug}/grades/", None),
        ("consensus", "GET", f"/api/projects/{slug}/consensus/", None),
        (
            "judgements-import",
            "POST",
            f"/api/projects/{slug}/judgements/import/",
            f"{qid} 0 SKU-1 2\n",
        ),
        ("judgements-export", "GET", f"/api/projects/{slug}/judgements/export/", None),
        ("grades-export", "GET", f"/api/projects/{slug}/grades/export/", None),
        ("consensus-export", "GET", f"/api/projects/{slug}/consensus/export/", None),
        (
            "search-log-import",
            "POST",
            f"/api/projects/{slug}/search-log/import/",
            '{"type": "impression", "id": "e1", "session": "s1", '
            '"time": "2026-11-20T10:00:00Z", "query": "tent"}\n',
        ),
        ("search-log-metrics", "GET", f"/api/projects/{slug}/search-log/metrics/", None),
        (
            "search-log-metrics-export",
            "GET",
            f"/api/projects/{slug}/search-log/metrics/export/",
            None,
        ),
        ("result-list-metrics", "GET", f"/api/result-lists/{run}/metrics/", None),
        ("result-list-series", "GET", f"/api/result-lists/{run}/series/?format=csv", None),
        ("query-series", "GET", f"/api/result-lists/{run}/queries/{qid}/series/", None),
        ("query-working", "GET", f"/api/result-lists/{run}/queries/{qid}/working/", None),
        ("result-list-unjudged", "GET", f"/api/result-lists/{run}/unjudged/", None),
        ("compare", "GET", f"/api/projects/{slug}/compare/?b={run}&max_drop=0.01", None),
        *engine_operations(slug, engine),
        ("judges", "GET", f"/api/projects/{slug}/judges/", None),
        ("judges", "POST", f"/api/projects/{slug}/judges/", new_judge),
        ("judge", "GET", f"/api/judges/{judge.pk}/", None),
        ("judge-key", "PUT", f"/api/judges/{judge.pk}/key/", {"api_key_env": "RJ_JUDGE_KEY_X"}),
    ]


def engine_operations(slug, engine):
    """The search engines' operations, on the setting's endpoint, its finished try and
    its schedule."""
    endpoint, capture, schedule = engine
    new = {
        "name": "new",
        "kind": "elasticsearch",
        "base_url": endpoint.base_url,
        "index": "cranfield",
        "template": json.dumps(MULTI_MATCH),
    }
    at, try_at, every = (f"/api/{kind}/{pk}/" for kind, pk in (
        ("endpoints", endpoint.pk), ("captures", capture.pk), ("schedules", schedule.pk)
    ))  # fmt: skip
    return [
        ("endpoints", "GET", f"/api/projects/{slug}/endpoints/", None),
        ("endpoints", "POST", f"/api/projects/{slug}/endpoints/", new),
        ("endpoint", "GET", at, None),
        ("endpoint", "PATCH", at, {"name": "renamed"}),
        ("endpoint", "DELETE", at, None),
        ("endpoint-templates", "POST", at + "templates/", {"body": json.dumps(MULTI_MATCH)}),
        ("endpoint-captures", "POST", at + "captures/", {"name": "captured"}),
        ("endpoint-schedules", "GET", at + "schedules/", None),
        ("endpoint-schedules", "POST", at + "schedules/", {"every": "weekly"}),
        ("endpoint-live", "GET", at + "live/?query=tent", None),
        ("capture", "GET", try_at, None),
        ("capture", "DELETE", try_at, None),
        ("capture-keep", "POST", try_at + "keep/", {"name": "kept"}),
        ("schedule", "GET", every, None),
        ("schedule", "PATCH", every, {"paused": True}),
        ("schedule", "DELETE", every, None),
    ]


RATER_MAY = {"projects", "project", "judgements", "judgement-create", "next"}
RATER_MAY_ONLY_READ = {"projects", "project"}
FORMATS = {
    "queries-import": "csv",
    "result-lists-import": "trec",
    "judgements-import": "qrels",
    "search-log-import": "ours",
}


def call(client, name, method, path, form, query):
    if method == "GET":
        return client.get(path)
    if method in ("PUT", "PATCH", "DELETE"):
        return getattr(client, method.lower())(path, form, format="json")
    if name == "projects":
        return client.post(path, form, format="json")
    if isinstance(form, dict):
        return client.post(path, {"query": query.pk, "grade": 2, **form}, format="json")
    data = {"file": upload(form), "format": FORMATS.get(name, "jsonl")}
    return client.post(path, data, format="multipart")


@pytest.fixture(scope="module")
def engine_server():
    server = EngineServer(flavour="elasticsearch", index="cranfield").start()
    yield server
    server.stop()


@pytest.fixture
def setting(query_with_hits, analyst, engine_server, settings, django_capture_on_commit_callbacks):
    first = query_with_hits.hits.get(rank=1)
    project = query_with_hits.project
    job = Job.objects.create(kind=Job.Kind.QUERIES, label="queries.csv", project=project)
    # A second list, so that a comparison has a baseline.
    ResultListFactory(project=project, name="baseline", captured_at=NOV)
    # A search endpoint on the test engine (allowed on 127.0.0.1, as an operator would),
    # a try it ran to the end and a schedule.
    settings.OUTBOUND_ALLOW, settings.SEARCH_ENDPOINT_ALLOW = ["127.0.0.1"], []
    endpoint = make_endpoint(project, engine_server, analyst)
    # The engine holds Cranfield's abstracts: a query it has hits for.
    flow = QueryFactory(project=project, text="boundary layer flow")
    with django_capture_on_commit_callbacks(execute=True):
        tried = capture_start(
            endpoint=endpoint, user=analyst, kind=Capture.Kind.TRY, query_ids=[flow.pk]
        )
    tried.refresh_from_db()
    assert tried.status == Capture.Status.DONE, tried.error
    schedule = schedule_create(endpoint=endpoint, expression="0 3 * * 1", user=analyst)
    engine = (endpoint, tried, schedule)
    # A machine judge (its base URL allowed as the endpoint's is).
    judge = machine_judge_create(project=project, name="J", base_url=endpoint.base_url, model="m")
    return project, first.result_list, query_with_hits, first.document, job, engine, judge


PERSONAS = ["anonymous", "dave", "alice", "charlie"]


# What an analyst's call answers where it is not OK[method]: the deletions of an
# endpoint, a capture and a schedule answer 204 (nothing is left to poll); a capture
# answers 202 (it runs in a task: poll its url).
ANALYST_GETS = {"endpoint DELETE": 204, "capture DELETE": 204, "schedule DELETE": 204}
ANALYST_GETS["endpoint-captures"] = 202


def expected(persona: str, name: str, method: str) -> int:
    if persona == "anonymous":
        return 401
    if persona == "charlie":
        return ANALYST_GETS.get(operation_key(name, method), OK[method])
    if persona == "alice" and name in RATER_MAY:
        return OK[method] if method == "GET" or name not in RATER_MAY_ONLY_READ else 403
    return 403


OPERATIONS = [
    "projects", "projects POST", "project", "project PUT", "project PATCH", "project DELETE",
    "job", "queries", "queries-import", "documents", "documents-import",
    "result-lists", "result-lists-import", "result-list", "hits", "result-list-export",
    "judgements", "judgement-create", "next", "grades", "consensus", "judgements-import",
    "judgements-export", "grades-export", "consensus-export", "search-log-import",
    "search-log-metrics", "search-log-metrics-export", "result-list-metrics",
    "result-list-series", "query-series", "query-working", "result-list-unjudged", "compare",
    "endpoints", "endpoints POST", "endpoint", "endpoint PATCH", "endpoint DELETE",
    "endpoint-templates", "endpoint-captures", "endpoint-schedules",
    "endpoint-schedules POST", "endpoint-live", "capture", "capture DELETE", "capture-keep",
    "schedule", "schedule PATCH", "schedule DELETE",
    "judges", "judges POST", "judge", "judge-key",
]  # fmt: skip
# The operations whose URL takes several methods, of which more than one is in the matrix.
SEVERAL_METHODS = {"projects", "project", "endpoints", "endpoint", "endpoint-schedules"}
SEVERAL_METHODS |= {"capture", "schedule", "judges"}


def operation_key(name: str, method: str) -> str:
    """How OPERATIONS names an operation: its URL name, and the method where that URL
    takes several that change something."""
    return f"{name} {method}" if name in SEVERAL_METHODS and method != "GET" else name


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("operation", OPERATIONS)
def test_each_role_gets_exactly_the_allowed_status(
    client_as, rater, analyst, outsider, setting, persona, operation
):
    users = {"anonymous": None, "dave": outsider, "alice": rater, "charlie": analyst}
    found = {operation_key(*operation[:2]): operation for operation in endpoints(*setting)}
    name, method, path, form = found[operation]
    with_project = Project.objects.filter(slug=setting[0].slug)
    response = call(client_as(users[persona]), name, method, path, form, setting[2])
    assert response.status_code == expected(persona, name, method), (operation, response.content)
    if response.status_code >= 400:
        assert list(response.json()) == ["errors"]
        assert with_project.exists()


def test_the_matrix_covers_every_api_endpoint(setting):
    api = get_resolver().url_patterns
    names = {
        pattern.name
        for include in api
        if getattr(include, "namespace", None) == "api"
        for pattern in include.url_patterns
        if pattern.name and pattern.name != "token"
    }
    assert names == {name for name, *_ in endpoints(*setting)}
    assert {operation_key(name, method) for name, method, *_ in endpoints(*setting)} == set(
        OPERATIONS
    )


def test_a_rater_never_receives_another_raters_grades(client_as, rater, judged):
    alice = client_as(rater)
    events = alice.get("/api/judgements/?page_size=1000").json()["results"]
    assert {event["rater"] for event in events} == {"alice"}
    assert alice.get("/api/judgements/?rater=bob").json()["results"] == []
    for path in ("grades/", "consensus/", "grades/export/", "judgements/export/"):
        assert alice.get(f"/api/projects/outdoor/{path}").status_code == 403


def test_an_analyst_reads_every_raters_events(client_as, analyst, judged):
    events = client_as(analyst).get("/api/judgements/").json()["results"]
    assert {event["rater"] for event in events} == {"alice", "bob"}


def test_a_rater_outside_a_projects_named_raters_may_not_rate_it(
    client_as, rater, other_rater, setting
):
    project, _, query, document, *_ = setting
    project.raters.add(other_rater)
    alice = client_as(rater)
    assert alice.get("/api/projects/").json()["results"] == []
    assert alice.get(f"/api/projects/{project.slug}/").status_code == 404
    body = {"query": query.pk, "document": document.pk, "grade": 1}
    refusals = [
        alice.get(f"/api/projects/{project.slug}/next/"),
        alice.post("/api/judgements/create/", body, format="json"),
    ]
    for response in refusals:
        # Not found, as an unknown project is: a 403 would name the project.
        assert response.status_code == 404
        assert project.name not in response.content.decode()
    unknown = alice.get("/api/projects/no-such-project/next/")
    assert unknown.json() == refusals[0].json()
