from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import override_settings
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from tests.factories import (
    DocumentFactory,
    HitFactory,
    ProjectFactory,
    ResultListFactory,
    UserFactory,
)

# Personas. Who may see what:
# alice (rater) grades pairs and sees only her own judgements;
# bob (rater) is alice's colleague: neither sees the other's grades;
# charlie (analyst) sees every rater's grades, dashboards and exports;
# dave has an account but no role: he may log in and see nothing else.


# Property tests have no wall-clock deadline: on a loaded two-core CI machine the first
# example of a numpy test can take longer than Hypothesis's 200 ms default, and the run
# then fails as "flaky" on timing alone (seen in test_properties). Every example still runs.
hypothesis_settings.register_profile("relevance-judge", deadline=None)
hypothesis_settings.load_profile("relevance-judge")

FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    settings.PASSWORD_HASHERS = FAST_HASHERS


@pytest.fixture
def rater(db):
    return UserFactory(username="alice", roles=["rater"])


@pytest.fixture
def other_rater(db):
    return UserFactory(username="bob", roles=["rater"])


@pytest.fixture
def analyst(db):
    return UserFactory(username="charlie", roles=["analyst"])


@pytest.fixture
def outsider(db):
    return UserFactory(username="dave")


@pytest.fixture
def project(db):
    return ProjectFactory(name="Outdoor gear", slug="outdoor")


@pytest.fixture
def query_with_hits(project):
    """A query with five ranked hits in one result list."""
    result_list = ResultListFactory(project=project, name="bm25")
    hits = [
        HitFactory(
            result_list=result_list,
            query__project=project,
            query__text="tent",
            document=DocumentFactory(project=project, external_id=f"SKU-{rank}"),
            rank=rank,
        )
        for rank in range(1, 6)
    ]
    return hits[0].query


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture(scope="module")
def demo_once(django_db_setup, django_db_blocker):
    """The demo, loaded once for a whole module and rolled back after it.

    Each test that uses the demo still runs in its own savepoint inside this
    transaction (pytest-django's ``db``), so what a test writes goes with it. A
    module that uses this should not also hold tests that need an empty database."""
    with django_db_blocker.unblock(), transaction.atomic():
        with override_settings(PASSWORD_HASHERS=FAST_HASHERS):
            call_command("load_demo", stdout=StringIO())
        yield
        transaction.set_rollback(True)
