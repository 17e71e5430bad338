from django.core.management.base import BaseCommand

from judgements.demo import build_demo
from judgements.services import DEMO_PASSWORD, demo_load


class Command(BaseCommand):
    help = "Load the demo project (outdoor gear shop); running it again changes nothing."

    def handle(self, *args, **options):
        data = build_demo()
        created = demo_load(data=data)
        summary = ", ".join(f"{count} {kind}" for kind, count in created.items())
        self.stdout.write(f"Demo project '{data.project['name']}': created {summary}.")
        self.stdout.write(f"Demo logins (password for all: {DEMO_PASSWORD}):")
        for user in data.users:
            self.stdout.write(f"  {user['username']:<10} {user['role']}")
