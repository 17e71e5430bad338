"""Reads never write: every page and read endpoint, as of now and as of a past moment,
with stale marks present (a grade whose refresh has not run), leaves every table as it
was: the counts of rows inserted, updated and deleted in the transaction
(``pg_stat_xact_user_tables``) do not move. Derived rows are written by their one
writer; a read that finds them stale reads the level below (docs/derived-state.md)."""

import datetime as dt

import pytest
from django.db import connection

from judgements.models import Judgement, Project, QueryGrades
from metrics.models import StaleQuery
from tests import routes
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

# Routes whose GET is an action, not a read: the rating page and the API's next pair hand
# a pair out (a lease on it, judgements.queue).
ACTIONS = ("rate/<slug:slug>/", "api/projects/<slug:slug>/next/")

COUNTS_SQL = """
SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_xact_user_tables
WHERE n_tup_ins + n_tup_upd + n_tup_del > 0
"""


def _written() -> dict[str, tuple[int, int, int]]:
    with connection.cursor() as cursor:
        cursor.execute(COUNTS_SQL)
        return {name: tuple(counts) for name, *counts in cursor.fetchall()}


@pytest.fixture
def demo(demo_once, db):
    return Project.objects.get(slug="outdoor-gear")


@pytest.fixture
def stale(demo):
    """A grade recorded without its refresh: its query is marked stale for the packed
    rows and for the stored series."""
    judgement = Judgement.objects.filter(query__project=demo, kind="grade").first()
    Judgement.objects.create(
        query=judgement.query,
        document=judgement.document,
        rater=judgement.rater,
        grade=(judgement.grade + 1) % 4,
    )
    StaleQuery.objects.get_or_create(query=judgement.query, defaults={"project": demo})
    assert QueryGrades.objects.filter(query=judgement.query, stale=True).exists()
    return judgement.query


def _values(project, query) -> dict[str, str]:
    result_list = project.result_lists.order_by("pk").first()
    judgement = Judgement.objects.filter(query=query).first()
    return {
        "slug": project.slug,
        "pk": str(result_list.pk),
        "result_list_id": str(result_list.pk),
        "query_id": str(query.pk),
        "object_id": str(judgement.pk),
        "app_label": "judgements",
        "uidb64": "MQ",
        "token": "set-password",
        "content_type_id": "1",
        "url": "x",
        "kind": "queries",
        "job_id": "6f1c2a3e-0000-4000-8000-000000000000",
        "judge_id": "1",
        "run_id": "1",
    }


def _past(project) -> dt.datetime:
    times = Judgement.objects.filter(query__project=project).values_list("created_at", flat=True)
    times = sorted(times)
    return times[len(times) // 2]


@pytest.mark.parametrize("moment", ["now", "past"])
def test_no_read_writes_a_row(client, demo, stale, moment):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    values = _values(demo, stale)
    extra = {} if moment == "now" else {"as_of": _past(demo).strftime("%Y-%m-%dT%H:%M:%S")}
    paths = [
        routes.filled(route, values)
        for route in routes.routes()
        if route not in ACTIONS and not route.startswith("admin/")
    ]
    before = _written()
    answered = {}
    for path in paths:
        response = client.get(path, extra)
        answered[path] = response.status_code
        written = _written()
        assert written == before, f"GET {path} wrote: {set(written.items()) - set(before.items())}"
    # The sweep read pages: most answered 200.
    assert sum(status == 200 for status in answered.values()) >= 30, answered
