import pytest
from django.test import Client
from rest_framework.test import APIClient

from judgements.machine.services import machine_judge_create
from judgements.models import Judgement
from tests.factories import DocumentFactory, HitFactory, ProjectFactory, ResultListFactory
from tests.model_server import ModelServer


@pytest.fixture
def model_server():
    server = ModelServer().start()
    yield server
    server.stop()


@pytest.fixture
def charlie(analyst):
    """An analyst's signed-in client."""
    client = Client()
    client.force_login(analyst)
    return client


@pytest.fixture
def charlie_api(analyst):
    """An analyst's API client."""
    client = APIClient()
    client.force_authenticate(analyst)
    return client


@pytest.fixture(autouse=True)
def _quick_backoff(settings):
    settings.MACHINE_JUDGE_BACKOFF_SECONDS = 0.01


@pytest.fixture(autouse=True)
def _local_model_server(settings):
    """The test model servers listen on 127.0.0.1, which the outbound policy refuses
    unless the operator allows it (tests/machine/test_keys_and_outbound.py checks that)."""
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]


def pool_project(queries: int, hits: int, *, slug: str = "shop"):
    """A project whose pool holds ``queries`` x ``hits`` pairs; document titles name them
    ("q3 d2"), so the model server's table can answer by title."""
    project = ProjectFactory(name="Shop", slug=slug)
    result_list = ResultListFactory(project=project, name="prod")
    for q in range(queries):
        for d in range(hits):
            HitFactory(
                result_list=result_list,
                query__text=f"query {q}",
                document=DocumentFactory(
                    project=project, external_id=f"q{q}d{d}", title=f"q{q} d{d}"
                ),
                rank=d + 1,
            )
    return project


def make_judge(project, server, **config):
    return machine_judge_create(
        project=project,
        name=config.pop("name", "Judge"),
        base_url=server.url,
        model=config.pop("model", "tiny-grader"),
        **config,
    )


def judge_form(server, **fields) -> dict:
    """The judge page's form, filled for ``server``, ``fields`` overriding."""
    return {
        "name": "Hosted",
        "base_url": server.url,
        "model": "m",
        "prompt_template": "Query: {query}\nTitle: {title}",
        "temperature": "0",
        "concurrency": "1",
        "timeout_seconds": "5",
        "max_retries": "0",
        "cost_input_per_1k": "0",
        "cost_output_per_1k": "0",
        **fields,
    }


def machine_events(judge):
    return Judgement.objects.filter(rater=judge.rater).order_by("id")
