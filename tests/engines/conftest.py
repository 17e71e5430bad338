import json

import pytest
from django.test import Client

from judgements.engines.services import endpoint_create
from judgements.imports import document_import, judgement_import, query_import
from tests.engines.engine_server import EngineServer
from tests.factories import ProjectFactory
from tests.shared import CRANFIELD

MULTI_MATCH = {"query": {"multi_match": {"query": "{{query}}", "fields": ["title^2", "text"]}}}


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    """The operator's allowance for the test engines on 127.0.0.1 (OUTBOUND_ALLOW), as
    any deployment with an engine on its own machine would set it."""
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    settings.SEARCH_ENDPOINT_ALLOW = []


def _server(flavour: str, index: str):
    server = EngineServer(flavour=flavour, index=index).start()
    yield server
    server.stop()


@pytest.fixture
def elastic():
    yield from _server("elasticsearch", "cranfield")


@pytest.fixture
def opensearch():
    yield from _server("opensearch", "cranfield")


@pytest.fixture
def solr():
    yield from _server("solr", "cranfield")


@pytest.fixture
def search_api():
    yield from _server("json", "")


@pytest.fixture
def charlie(analyst):
    """An analyst's signed-in client (analysts configure endpoints; raters may not)."""
    client = Client()
    client.force_login(analyst)
    return client


def cranfield_project(user, *, queries: int | None = None, slug: str = "cranfield"):
    """A project with Cranfield's queries (the first ``queries``), documents with their
    ids only (the captures fill in the rest) and the human grades of those queries."""
    project = ProjectFactory(name="Cranfield", slug=slug)
    lines = (CRANFIELD / "queries.csv").read_text().splitlines()
    kept = lines[: 1 + queries] if queries else lines
    query_import(project=project, upload=_bytes("\n".join(kept) + "\n"), file_format="csv")
    ids = {line.split(",", 1)[0] for line in kept[1:]}
    qrels = [
        line
        for line in (CRANFIELD / "qrels.txt").read_text().splitlines()
        if line.split()[0] in ids
    ]
    judgement_import(
        project=project,
        upload=_bytes("\n".join(qrels) + "\n"),
        file_format="qrels",
        uploaded_by=user,
        create_missing=True,
    )
    return project


def with_documents(project):
    documents = (CRANFIELD / "documents.jsonl").read_bytes()
    document_import(project=project, upload=_bytes(documents))


def _bytes(text):
    import io

    return io.BytesIO(text if isinstance(text, bytes) else text.encode())


def make_endpoint(project, server, user=None, **fields):
    kind = fields.pop("kind", server.flavour)
    defaults = {
        "elasticsearch": {"index": "cranfield", "title_field": "title", "snippet_field": "text"},
        "opensearch": {"index": "cranfield", "title_field": "title", "snippet_field": "text"},
        "solr": {"index": "cranfield", "title_field": "title", "snippet_field": "text"},
        "json": {
            "index": "/api/search",
            "id_field": "docid",
            "title_field": "name",
            "snippet_field": "summary",
            "url_field": "link",
            "hits_path": "data.results",
        },
    }[kind]
    template = fields.pop("template", None) or json.dumps(
        {
            "elasticsearch": MULTI_MATCH,
            "opensearch": MULTI_MATCH,
            "solr": {"q": "{{query}}", "defType": "edismax", "qf": "title^2 text"},
            "json": {"q": "{{query}}", "size": "{{depth}}"},
        }[kind]
    )
    base_url = server.url + ("/solr" if kind == "solr" else "")
    return endpoint_create(
        project=project,
        user=user,
        template=template,
        name=fields.pop("name", f"{kind} test"),
        kind=kind,
        base_url=fields.pop("base_url", base_url),
        **{**defaults, **fields},
    )
