from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from judgements import bulk
from judgements.loadgen import LoadPlan, candidate_documents
from judgements.models import Document, Hit, Judgement, PairGrade, Project, QueuePair


def generate(**options):
    defaults = {"queries": 20, "hits_per_query": 10, "judgements": 500, "raters": 4}
    call_command("generate_load", stdout=StringIO(), **(defaults | options))
    return Project.objects.get(slug=options.get("slug", "generated-load"))


def index_names():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename LIKE 'judgements_%%' ORDER BY 1"
        )
        return [name for (name,) in cursor.fetchall()]


def test_it_builds_the_requested_sizes(db):
    project = generate(result_lists=2)
    assert project.queries.count() == 20
    assert Hit.objects.filter(result_list__project=project).count() == 2 * 20 * 10
    assert Judgement.objects.for_project(project).count() == 500
    ranks = Hit.objects.filter(result_list__project=project).values_list("rank", flat=True)
    assert set(ranks) == set(range(1, 11))


def test_the_same_seed_gives_the_same_judgements(db):
    def fingerprint(project):
        rows = Judgement.objects.for_project(project).values_list(
            "query__text", "document__external_id", "rater__username", "grade", "created_at"
        )
        return sorted(rows)

    first = fingerprint(generate(seed=7, slug="a"))
    assert fingerprint(generate(seed=7, slug="b")) == first
    assert fingerprint(generate(seed=8, slug="c")) != first


def test_running_it_again_replaces_the_project(db):
    generate(judgements=100)
    project = generate(judgements=50)
    assert Project.objects.filter(slug="generated-load").count() == 1
    assert Judgement.objects.count() == 50
    assert Document.objects.filter(project=project).count() == project.documents.count()


def test_indexes_and_constraints_are_all_back_after_a_bulk_load(db):
    before = index_names()
    generate()  # Empty tables, so the indexes are dropped and rebuilt.
    assert index_names() == before


def test_graded_events_stay_within_the_scale(db):
    project = generate()
    grades = set(Judgement.objects.for_project(project).values_list("grade", flat=True))
    assert grades <= {0, 1, 2, 3}


def test_candidates_of_a_query_are_distinct_documents():
    plan = LoadPlan(queries=50, hits_per_query=40, judgements=0)
    candidates = candidate_documents(plan)
    assert all(len(set(row)) == plan.candidates for row in candidates.tolist())


def test_a_zero_size_is_refused_with_the_option_named(db):
    with pytest.raises(CommandError, match="--queries must be at least 1"):
        generate(queries=0)


def test_replacing_a_project_removes_the_rows_other_apps_keep_for_it(db, django_user_model):
    from metrics.models import LatestMetricPoint, MetricPoint, StaleQuery
    from metrics.refresh import metrics_refresh
    from searchlogs.models import SearchEvent
    from searchlogs.services import search_log_ingest
    from tests.searchlogs.conftest import impression, jsonl

    first = generate()
    metrics_refresh(project=first)
    query = first.queries.order_by("pk").first()
    StaleQuery.objects.create(query=query, project=query.project)
    first.raters.add(django_user_model.objects.create(username="restricted"))
    search_log_ingest(
        project=first, upload=[jsonl(impression("e1", "s1", "2026-11-20T10:00:00Z", query.text))]
    )
    assert MetricPoint.objects.exists() and LatestMetricPoint.objects.exists()
    assert SearchEvent.objects.filter(query=query).exists()
    # Ids, not joins: a join to a deleted row would hide the rows left behind.
    lists = list(first.result_lists.values_list("pk", flat=True))
    queries = list(first.queries.values_list("pk", flat=True))

    second = generate(seed=1)

    assert second.pk != first.pk
    for model in (MetricPoint, LatestMetricPoint):
        assert not model.objects.filter(result_list_id__in=lists).exists()
        assert not model.objects.filter(query_id__in=queries).exists()
    assert not StaleQuery.objects.filter(query_id__in=queries).exists()
    assert not SearchEvent.objects.filter(project_id=first.pk).exists()
    assert not Project.raters.through.objects.filter(project_id=first.pk).exists()


def test_500_queries_load_with_the_triggers_deferred_and_every_derived_table_matches(db):
    # The bulk path of issue 16 at a size where per-statement triggers fell off a cliff
    # (213 s): every derived table is rebuilt once and equals its recomputation.
    project = generate(queries=500, hits_per_query=100, judgements=50_000, raters=20)
    assert QueuePair.objects.filter(project=project).count() > 500
    assert PairGrade.objects.filter(project=project).count() > 10_000
    output = StringIO()
    call_command("derived_state", check=True, project=project.slug, stdout=output)
    assert "every derived table matches" in output.getvalue()


def test_a_load_leaves_the_deferral_off_for_the_rest_of_the_transaction(db):
    generate()
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('judgements.defer_derived', true)")
        assert cursor.fetchone()[0] in (None, "", "off")


def generate_saying(**options) -> str:
    output = StringIO()
    defaults = {"queries": 20, "hits_per_query": 10, "judgements": 500, "raters": 4}
    call_command("generate_load", stdout=output, **(defaults | options))
    return output.getvalue()


def test_indexes_are_rebuilt_while_the_tables_hold_less_than_twice_the_load(db):
    generate(slug="first")  # 600 hits and 500 events
    bulk.analyze(Hit, Judgement)

    # More than half as many rows again: building every index once costs less than
    # adding each row to them.
    said = generate_saying(slug="second", queries=12, judgements=300)
    assert "judgements_hit, judgements_judgement dropped, built again at the end" in said
    bulk.analyze(Hit, Judgement)
    # A tenth of what the tables hold: the rows are added to the indexes.
    said = generate_saying(slug="third", queries=5, hits_per_query=10, judgements=100)
    assert "indexes kept" in said


def test_keep_indexes_leaves_them_in_place_and_the_derived_tables_right(db):
    before = index_names()

    said = generate_saying(slug="kept", keep_indexes=True)

    assert "indexes kept" in said
    assert index_names() == before
    output = StringIO()
    call_command("derived_state", check=True, project="kept", stdout=output)
    assert "every derived table matches" in output.getvalue()


def test_judgements_indexes_are_built_again_beside_up_to_five_times_as_many_rows(monkeypatch):
    """Each table's own break-even: a judgement added to its five indexes costs about six
    times its share of building them, a hit about three times."""
    monkeypatch.setattr(bulk, "estimated_rows", lambda model: 2_350_000)

    assert bulk.rebuild_pays(1_000_000, Judgement)
    assert not bulk.rebuild_pays(400_000, Judgement)
    assert not bulk.rebuild_pays(1_000_000, Hit)
    assert bulk.rebuild_pays(1_200_000, Hit)
