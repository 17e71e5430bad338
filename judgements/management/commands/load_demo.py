from django.core.management.base import BaseCommand

from judgements.demo import build_demo
from judgements.loads import DEMO_PASSWORD, demo_load
from judgements.machine.demo import demo_judge_load
from judgements.models import Project
from metrics.history import metrics_rebuild
from metrics.models import MetricPoint
from metrics.registry import project_spec
from searchlogs.demo import demo_search_log_load


class Command(BaseCommand):
    help = "Load the demo project (outdoor gear shop); running it again changes nothing."

    def handle(self, *args, **options):
        data = build_demo()
        created = demo_load(data=data)
        summary = ", ".join(f"{count} {kind}" for kind, count in created.items())
        self.stdout.write(f"Demo project '{data.project['name']}': created {summary}.")
        project = Project.objects.get(slug=data.project["slug"])
        if created["judgements"] or not series_stored(project):
            # The demo's judgements span two weeks: show NDCG moving day by day. A demo
            # loaded before its metric's series existed (a new metric parameter) gets
            # its series on the next run.
            first = min(judgement["created_at"] for judgement in data.judgements)
            written = metrics_rebuild(project=project, since=first, every="day")
            self.stdout.write(f"Metric series rebuilt: {written} per-query points.")
        answered = demo_judge_load(project)
        self.stdout.write(f"Demo machine judge (a word-overlap rule): {answered} new answers.")
        logged = demo_search_log_load(Project.objects.get(slug=data.project["slug"]))
        self.stdout.write(f"Search log: {logged.created} new events of {logged.rows}.")
        self.stdout.write(f"Demo logins (password for all: {DEMO_PASSWORD}):")
        for user in data.users:
            self.stdout.write(f"  {user['username']:<10} {user['role']}")


def series_stored(project: Project) -> bool:
    """Whether the project's own metric has a stored series (overall points)."""
    spec = project_spec(project)
    points = MetricPoint.objects.filter(result_list__project=project, metric=spec.name)
    return points.filter(query__isnull=True).exists()
