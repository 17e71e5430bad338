"""Exit 0 when the database answers a query, 1 when not: the task worker's health check
in docker-compose.yml (the web service's is its /health/ page)."""

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from config.health import DATABASE_DOWN


class Command(BaseCommand):
    help = "Check that the database answers; exit 1 when it does not."
    requires_system_checks = []

    def handle(self, *args, **options):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        except DATABASE_DOWN as error:
            raise CommandError(f"The database is unavailable: {error}") from None
        self.stdout.write("The database answers.")
