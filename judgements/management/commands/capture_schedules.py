"""Fire the capture schedules that are due (see judgements.engines.schedules)."""

from django.core.management.base import BaseCommand

from judgements.engines.schedules import schedules_due


class Command(BaseCommand):
    help = (
        "Fire every capture schedule that is due. With a task backend that cannot defer "
        "(the immediate one), run it from cron every minute; with the database backend the "
        "worker fires schedules itself, and this only re-arms one whose firing was lost."
    )

    def handle(self, *args, **options):
        for outcome in schedules_due():
            self.stdout.write(outcome)
