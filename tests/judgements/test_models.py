import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from judgements.models import Hit, Judgement, Project, scale_errors
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)


def test_the_default_scale_is_zero_to_three_with_labels(project):
    assert project.grade_values == [0, 1, 2, 3]
    assert project.grade_label(3) == "Perfect"
    assert project.grade_label(None) == "Can't tell"


def test_a_scale_with_repeated_values_is_refused():
    scale = [{"value": 0, "label": "No"}, {"value": 0, "label": "Also no"}]
    assert scale_errors(scale) == ["Grade values must be distinct."]


def test_a_project_with_a_one_grade_scale_fails_validation(db):
    project = Project(name="Tiny", slug="tiny", scale=[{"value": 1, "label": "Yes"}])
    with pytest.raises(ValidationError, match="at least two grades"):
        project.full_clean()


def test_query_text_is_unique_within_a_project(project):
    QueryFactory(project=project, text="tent")
    with pytest.raises(IntegrityError), transaction.atomic():
        project.queries.create(text="tent")


def test_the_same_query_text_may_exist_in_two_projects(project):
    QueryFactory(project=project, text="tent")
    assert ProjectFactory().queries.create(text="tent").pk


def test_document_external_id_is_unique_within_a_project(project):
    DocumentFactory(project=project, external_id="SKU-1")
    with pytest.raises(IntegrityError), transaction.atomic():
        project.documents.create(external_id="SKU-1")


def test_rank_zero_is_refused_by_the_database(query_with_hits):
    hit = Hit.objects.filter(query=query_with_hits).first()
    with pytest.raises(IntegrityError, match="hit_rank_gte_1"), transaction.atomic():
        Hit.objects.create(
            result_list=hit.result_list, query=hit.query, document=DocumentFactory(), rank=0
        )


def test_two_hits_at_one_rank_are_refused(query_with_hits):
    hit = Hit.objects.filter(query=query_with_hits, rank=1).get()
    document = DocumentFactory(project=hit.query.project)
    with pytest.raises(IntegrityError, match="hit_unique_rank"), transaction.atomic():
        Hit.objects.create(result_list=hit.result_list, query=hit.query, document=document, rank=1)


def test_one_document_twice_in_a_ranking_is_refused(query_with_hits):
    hit = Hit.objects.filter(query=query_with_hits, rank=1).get()
    with pytest.raises(IntegrityError, match="hit_unique_document"), transaction.atomic():
        Hit.objects.create(
            result_list=hit.result_list, query=hit.query, document=hit.document, rank=9
        )


def unsaved_judgement(*, grade, scale=None):
    project = ProjectFactory(**({"scale": scale} if scale else {}))
    return Judgement(
        query=QueryFactory(project=project),
        document=DocumentFactory(project=project),
        rater=UserFactory(roles=["rater"]),
        grade=grade,
    )


def test_a_grade_event_without_a_grade_is_refused_by_the_database(db):
    judgement = unsaved_judgement(grade=None)
    with pytest.raises(IntegrityError, match="judgement_grade_iff_kind"), transaction.atomic():
        judgement.save()


def test_a_cant_tell_event_carrying_a_grade_is_refused_by_the_database(db):
    judgement = JudgementFactory(grade=1)
    with pytest.raises(IntegrityError, match="judgement_grade_iff_kind"), transaction.atomic():
        Judgement.objects.create(
            query=judgement.query,
            document=judgement.document,
            rater=judgement.rater,
            kind=Judgement.Kind.CANT_TELL,
            grade=1,
        )


def test_judgements_cannot_be_updated_in_the_database(db):
    judgement = JudgementFactory(grade=1)
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        Judgement.objects.filter(pk=judgement.pk).update(grade=3)
    judgement.refresh_from_db()
    assert judgement.grade == 1


def test_clean_names_the_scale_when_the_grade_is_outside_it(db):
    with pytest.raises(ValidationError, match="Grade 4 is outside the scale 0-3"):
        unsaved_judgement(grade=4).clean()


def test_a_project_scale_may_include_negative_grades(db):
    scale = [
        {"value": -1, "label": "Spam"},
        {"value": 0, "label": "No"},
        {"value": 1, "label": "Yes"},
    ]
    unsaved_judgement(grade=-1, scale=scale).full_clean()
    with pytest.raises(ValidationError, match="Grade 2 is outside the scale -1-1"):
        unsaved_judgement(grade=2, scale=scale).full_clean()


def test_hits_order_by_rank(project):
    result_list = ResultListFactory(project=project)
    query = QueryFactory(project=project)
    for rank in (3, 1, 2):
        HitFactory(result_list=result_list, query=query, rank=rank)
    assert list(query.hits.values_list("rank", flat=True)) == [1, 2, 3]


def test_result_lists_order_by_capture_time(project):
    late = ResultListFactory(project=project, captured_at=dt.datetime(2026, 11, 9, tzinfo=dt.UTC))
    early = ResultListFactory(project=project, captured_at=dt.datetime(2026, 11, 1, tzinfo=dt.UTC))
    assert list(project.result_lists.all()) == [early, late]
