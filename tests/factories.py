import datetime as dt

import factory
from django.contrib.auth.models import Group, User

from judgements.models import Document, Hit, Judgement, Project, Query, ResultList


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ["username"]
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")
    password = factory.django.Password("password")

    @factory.post_generation
    def roles(user, create, extracted, **kwargs):
        if create and extracted:
            # get_or_create so that a missing group fails loudly in the test that
            # checks the migration, not as a puzzling permission error here.
            user.groups.add(*(Group.objects.get_or_create(name=name)[0] for name in extracted))


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    name = factory.Sequence(lambda n: f"Project {n}")
    slug = factory.Sequence(lambda n: f"project-{n}")


class QueryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Query
        django_get_or_create = ["project", "text"]

    project = factory.SubFactory(ProjectFactory)
    text = factory.Sequence(lambda n: f"query {n}")


class DocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Document

    project = factory.SubFactory(ProjectFactory)
    external_id = factory.Sequence(lambda n: f"DOC-{n}")
    title = factory.LazyAttribute(lambda doc: f"Title of {doc.external_id}")


class ResultListFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ResultList

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"run {n}")
    captured_at = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


class HitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Hit

    result_list = factory.SubFactory(ResultListFactory)
    query = factory.SubFactory(
        QueryFactory, project=factory.SelfAttribute("..result_list.project")
    )
    document = factory.SubFactory(
        DocumentFactory, project=factory.SelfAttribute("..result_list.project")
    )
    rank = factory.Sequence(lambda n: n + 1)


class JudgementFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Judgement

    query = factory.SubFactory(QueryFactory)
    document = factory.SubFactory(
        DocumentFactory, project=factory.SelfAttribute("..query.project")
    )
    rater = factory.SubFactory(UserFactory, roles=["rater"])
    grade = 2
