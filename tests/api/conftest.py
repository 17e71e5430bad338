import datetime as dt
import io

import pytest
from rest_framework.test import APIClient

from config.api.throttles import rate_limits_clear
from judgements.models import Document, Hit, Judgement, Query, ResultList
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)

# Personas as in tests/conftest.py: alice (rater) sees only her own judgements,
# bob (rater) likewise, charlie (analyst) may use every endpoint, and dave (no
# role) and anonymous visitors get nothing.


@pytest.fixture(autouse=True)
def _fresh_throttles(django_db_setup, django_db_blocker):
    # Rate-limit histories live in a table of the test database, whose
    # rows outlive a test that commits (live servers): every test starts from none.
    with django_db_blocker.unblock():
        rate_limits_clear()


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
def charlie(client_as, analyst):
    """An API client signed in as charlie, the analyst."""
    return client_as(analyst)


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


NOV = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
# Grades (alice, bob) per query and document number; None: no answer, "?": can't tell.
SHOP_GRADES = {
    "tent": {1: (3, 3), 2: (1, 3), 3: (0, 0), 4: (2, None), 5: (None, 1), 6: (2, None)},
    "stove": {1: (2, 1), 2: (0, None), 3: (3, 2), 6: ("?", 1)},
    "lamp": {1: (0, 0), 2: (1, 1), 5: (3, None), 9: (2, 2)},
    "rope": {7: ("?", None)},
    "map": {1: (2, None)},
}
SHOP_HITS = {
    "prod": {"tent": [1, 2, 3, 4, 5], "stove": [2, 3, 1, 6], "lamp": [5, 4, 3, 2, 1, 9],
             "rope": [7, 8]},
    "candidate": {"tent": [2, 1, 7, 4], "stove": [1, 2, 3], "lamp": [1, 2, 3, 4, 5],
                  "rope": [8, 7]},
}  # fmt: skip
SHOP_EXTERNAL_IDS = {"tent": "T-1", "stove": "", "lamp": "L-3", "rope": "R-4", "map": "M-5"}


@pytest.fixture
def shop(db):
    """Two result lists graded by alice and bob on 2 November, revised on 4 November.

    Mean and median consensus are fractional on several pairs; rope has hits but only a
    "can't tell"; map has a grade but no hits; stove has no external id. On 4 November
    alice lowers tent's D2 from 1 to 0 and bob grades lamp's D5 1.
    """
    project = ProjectFactory(name="Shop", slug="shop", judges_per_pair=2, pool_depth=3)
    raters = [UserFactory(username=name, roles=["rater"]) for name in ("alice", "bob")]
    docs = {n: DocumentFactory(project=project, external_id=f"D{n}") for n in range(1, 10)}
    queries = {
        text: QueryFactory(project=project, text=text, external_id=external_id)
        for text, external_id in SHOP_EXTERNAL_IDS.items()
    }
    for day, (name, hits) in enumerate(SHOP_HITS.items()):
        run = ResultListFactory(
            project=project, name=name, captured_at=NOV + dt.timedelta(day * 4)
        )
        for text, numbers in hits.items():
            for rank, n in enumerate(numbers, start=1):
                HitFactory(result_list=run, query=queries[text], document=docs[n], rank=rank)
    moment = NOV + dt.timedelta(days=1, hours=10)
    for text, grades in SHOP_GRADES.items():
        for n, answers in grades.items():
            for rater, answer in zip(raters, answers, strict=True):
                _answer(queries[text], docs[n], rater, answer, moment)
    revised = NOV + dt.timedelta(days=3, hours=10)
    _answer(queries["tent"], docs[2], raters[0], 0, revised)
    _answer(queries["lamp"], docs[5], raters[1], 1, revised)
    return project


def _answer(query, document, rater, answer, moment) -> None:
    if answer is None:
        return
    if answer == "?":
        JudgementFactory(
            query=query, document=document, rater=rater, grade=None, kind="cant_tell",
            created_at=moment,
        )  # fmt: skip
        return
    JudgementFactory(query=query, document=document, rater=rater, grade=answer, created_at=moment)
