from django.core.management.base import BaseCommand

from judgements.demo import build_demo
from judgements.models import Project
from judgements.services import DEMO_PASSWORD, demo_load
from metrics.services import metrics_rebuild
from searchlogs.demo import demo_search_log_load


class Command(BaseCommand):
    help = "Load the demo project (outdoor gear shop); running it again changes nothing."

    def handle(self, *args, **options):
        data = build_demo()
        created = demo_load(data=data)
        summary = ", ".join(f"{count} {kind}" for kind, count in created.items())
        self.stdout.write(f"Demo project '{data.project['name']}': created {summary}.")
        if created["judgements"]:
            # The demo's judgements span two weeks: show NDCG moving day by day.
            first = min(judgement["created_at"] for judgement in data.judgements)
            project = Project.objects.get(slug=data.project["slug"])
            written = metrics_rebuild(project=project, since=first, every="day")
            self.stdout.write(f"Metric series rebuilt: {written} per-query points.")
        logged = demo_search_log_load(Project.objects.get(slug=data.project["slug"]))
        self.stdout.write(f"Search log: {logged.created} new events of {logged.rows}.")
        self.stdout.write(f"Demo logins (password for all: {DEMO_PASSWORD}):")
        for user in data.users:
            self.stdout.write(f"  {user['username']:<10} {user['role']}")
