import pytest
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


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


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
