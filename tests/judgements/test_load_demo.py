from io import StringIO

from django.contrib.auth import authenticate
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from judgements.derived.oracles import differences
from judgements.loads import DEMO_PASSWORD
from judgements.models import Document, Hit, Judgement, Project, Query, QueuePair, ResultList
from judgements.roles import Role, has_role

MODELS = (Project, Query, Document, ResultList, Hit, Judgement)


def counts():
    return {model.__name__: model.objects.count() for model in MODELS}


def test_it_loads_a_realistic_project(db):
    call_command("load_demo", stdout=StringIO())
    project = Project.objects.get(slug="outdoor-gear")
    assert project.queries.count() >= 30
    assert project.documents.count() >= 300
    assert project.result_lists.count() == 2
    raters = Judgement.objects.human().values("rater__username").distinct().count()
    assert raters == 3
    # And a demo machine judge (a word-overlap rule) that graded the whole pool.
    (judge,) = project.machine_judges.all()
    pool = QueuePair.objects.filter(project=project).count()
    assert judge.demo and judge.runs.get().graded == pool > 0


def test_running_it_twice_changes_nothing(db):
    call_command("load_demo", stdout=StringIO())
    first = counts()
    call_command("load_demo", stdout=StringIO())
    assert counts() == first


def test_demo_raters_disagree_on_some_pairs(db):
    call_command("load_demo", stdout=StringIO())
    rows = list(Judgement.objects.consensus())
    spread = [row for row in rows if row["max_grade"] > row["min_grade"]]
    assert 0 < len(spread) < len(rows) / 2


def test_demo_accounts_log_in_with_their_roles(db, rf):
    call_command("load_demo", stdout=StringIO())

    def log_in(username):
        # The login lockout (django-axes) reads the client's address from the request.
        request = rf.post("/accounts/login/")
        return authenticate(request, username=username, password=DEMO_PASSWORD)

    for username, role in (("rater_ann", Role.RATER), ("analyst", Role.ANALYST)):
        user = log_in(username)
        assert user is not None and has_role(user, role)
    admin = log_in("admin")
    assert admin.is_superuser and has_role(admin, Role.ADMIN)
    assert not has_role(log_in("rater_ann"), Role.ANALYST)


def test_it_prints_the_demo_logins(db, capsys):
    call_command("load_demo")
    output = capsys.readouterr().out
    assert "rater_ann" in output and "analyst" in output and DEMO_PASSWORD in output


def test_judgements_are_written_in_one_statement_and_the_derived_tables_rebuilt_once(db):
    # The triggers skip the load (judgements.defer_derived) and one rebuild counts every
    # pair, so the derived tables equal their recomputation from the log.
    with CaptureQueriesContext(connection) as statements:
        call_command("load_demo", stdout=StringIO())
    sql = [query["sql"] for query in statements.captured_queries]
    # The demo machine judge's answers are one statement more (the triggers skip them).
    inserts = [text for text in sql if text.startswith('INSERT INTO "judgements_judgement"')]
    assert len([text for text in inserts if "'machine'" not in text]) == 1
    assert sum(text.startswith("\nCREATE TEMPORARY TABLE rebuild_answers") for text in sql) == 1
    project = Project.objects.get(slug="outdoor-gear")
    assert list(differences(project)) == []


def test_a_demo_whose_metric_has_no_stored_series_gets_it_on_the_next_run(db):
    # As after migration 0003 of metrics: the stored series kept their old names, and
    # the project's metric (a mean over judged queries) had none.
    from metrics.models import LatestMetricPoint, MetricPoint
    from metrics.registry import project_spec

    call_command("load_demo", stdout=StringIO())
    project = Project.objects.get(slug="outdoor-gear")
    MetricPoint.objects.all().delete()
    LatestMetricPoint.objects.all().delete()
    first = counts()

    call_command("load_demo", stdout=StringIO())

    spec = project_spec(project)
    overall = MetricPoint.objects.filter(metric=spec.name, query__isnull=True)
    assert overall.count() >= 2 * 14  # two lists, a fortnight of daily buckets
    assert counts() == first
