import io

import pytest
from django.core.cache import caches
from rest_framework.test import APIClient

from judgements.models import Document, Hit, Judgement, Query, ResultList
from tests.factories import JudgementFactory

# Personas as in tests/conftest.py: alice (rater) sees only her own judgements,
# bob (rater) likewise, charlie (analyst) may use every endpoint, and dave (no
# role) and anonymous visitors get nothing.


@pytest.fixture(autouse=True)
def _fresh_throttles(django_db_setup, django_db_blocker):
    # Throttle counters live in the shared cache table of the test database, whose
    # rows outlive a test that commits (live servers): every test starts from none.
    with django_db_blocker.unblock():
        caches["shared"].clear()


@pytest.fixture
def client_as():
    """An API client signed in as ``user`` (session), or anonymous for None."""

    def make(user) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_login(user)
        return client

    return make


@pytest.fixture
def judged(query_with_hits, rater, other_rater):
    """The tent query with grades: alice changed her mind on SKU-1; bob can't tell on SKU-2."""
    query = query_with_hits
    sku = {doc.external_id: doc for doc in Document.objects.filter(project=query.project)}
    JudgementFactory(query=query, document=sku["SKU-1"], rater=rater, grade=1)
    JudgementFactory(query=query, document=sku["SKU-1"], rater=rater, grade=3)
    JudgementFactory(query=query, document=sku["SKU-1"], rater=other_rater, grade=2)
    JudgementFactory(query=query, document=sku["SKU-2"], rater=rater, grade=0)
    JudgementFactory(
        query=query, document=sku["SKU-2"], rater=other_rater, grade=None, kind="cant_tell"
    )
    return query


def upload(content: bytes | str, name: str = "upload.txt") -> io.BytesIO:
    data = content.encode() if isinstance(content, str) else content
    file = io.BytesIO(data)
    file.name = name
    return file


def row_counts() -> dict[str, int]:
    models = (Query, Document, ResultList, Hit, Judgement)
    return {model.__name__: model.objects.count() for model in models}
