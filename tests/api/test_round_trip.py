"""Exporting a project's judgements and importing them elsewhere gives the same consensus."""

import pytest

from judgements.models import Judgement, Project
from tests.api.conftest import upload
from tests.factories import DocumentFactory, JudgementFactory, ProjectFactory, QueryFactory

TEXTS = ["tent", "boots", 'stove, "compact"']


@pytest.fixture
def charlie(client_as, analyst):
    return client_as(analyst)


def catalogue(project: Project) -> None:
    for text in TEXTS:
        QueryFactory(project=project, text=text)
    for number in range(4):
        DocumentFactory(project=project, external_id=f"SKU-{number}")


def graded(raters) -> Project:
    """A project where several raters graded, changed their minds, and could not tell."""
    project = ProjectFactory(slug="source")
    catalogue(project)
    pairs = [
        (query, document)
        for query in project.queries.all()
        for document in project.documents.all()
    ]
    for step, (query, document) in enumerate(pairs):
        for offset, rater in enumerate(raters):
            JudgementFactory(
                query=query, document=document, rater=rater, grade=(step + offset) % 4
            )
            if (step + offset) % 3 == 0:
                JudgementFactory(query=query, document=document, rater=rater, grade=step % 2)
            if (step + offset) % 5 == 0:
                JudgementFactory(
                    query=query, document=document, rater=rater, grade=None, kind="cant_tell"
                )
    return project


def consensus(project: Project) -> dict:
    rows = Judgement.objects.for_project(project).consensus()
    names = {query.pk: query.text for query in project.queries.all()}
    documents = {document.pk: document.external_id for document in project.documents.all()}
    return {
        (names[row["query_id"]], documents[row["document_id"]]): row["consensus"] for row in rows
    }


def round_trip(client, source: Project, dataset: str, file_format: str, **extra) -> Project:
    response = client.get(f"/api/projects/{source.slug}/{dataset}/export/?format={file_format}")
    content = b"".join(response.streaming_content)
    target = ProjectFactory(slug="target")
    catalogue(target)
    response = client.post(
        "/api/projects/target/judgements/import/",
        {"file": upload(content), "format": file_format, **extra},
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    return target


@pytest.mark.parametrize("file_format", ["jsonl", "csv"])
def test_the_event_log_round_trips_with_every_rater(
    charlie, rater, other_rater, analyst, file_format
):
    source = graded([rater, other_rater, analyst])
    target = round_trip(charlie, source, "judgements", file_format)
    assert consensus(target) == consensus(source)
    assert len(consensus(source)) == len(TEXTS) * 4


@pytest.mark.parametrize("file_format", ["quepid", "rre", "ltr", "qrels"])
def test_one_raters_grades_round_trip_through_every_pair_format(charlie, rater, file_format):
    source = graded([rater])
    extra = {}
    if file_format == "qrels":
        ids = "".join(
            f'{query.pk},"{query.text.replace('"', '""')}"\n' for query in source.queries.all()
        )
        extra["queries"] = upload("id,text\n" + ids)
    target = round_trip(charlie, source, "grades", file_format, **extra)
    assert consensus(target) == consensus(source)


def test_a_consensus_of_whole_grades_round_trips_through_quepid(charlie, rater, other_rater):
    source = graded([rater])
    target = round_trip(charlie, source, "consensus", "quepid")
    assert consensus(target) == consensus(source)
