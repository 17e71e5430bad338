from io import StringIO

from django.core.management import call_command

from judgements.models import Project
from searchlogs.dashboards import online_overview
from searchlogs.demo import DAYS
from searchlogs.models import SearchEvent


def load_demo() -> str:
    out = StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def test_the_demo_has_a_fortnight_of_search_log_and_loading_again_adds_nothing(db):
    # One test, since load_demo is slow: the log fills the panel, and is idempotent.
    output = load_demo()
    project = Project.objects.get(slug="outdoor-gear")
    stored = SearchEvent.objects.filter(project=project).count()
    assert f"Search log: {stored} new events of {stored}." in output
    panel = online_overview(project)
    assert len(panel.rows) == DAYS
    assert all(row.clicks > 0 and row.successful_sessions > 0 for row in panel.rows)
    assert panel.unmatched > 0 and panel.unmatched_texts[0][0] in {"tnet", "gas canister"}

    again = load_demo()

    assert SearchEvent.objects.filter(project=project).count() == stored
    assert f"Search log: 0 new events of {stored}." in again
