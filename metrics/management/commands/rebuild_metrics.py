import datetime as dt
import sys

from django.core.management.base import BaseCommand, CommandError

from judgements.models import Judgement, Project
from metrics.history import metrics_rebuild


class Command(BaseCommand):
    help = "Rebuild stored metric series from the judgement log as of each bucket (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--project", help="project slug (default: every project)")
        parser.add_argument("--since", type=dt.date.fromisoformat, help="YYYY-MM-DD (UTC)")
        parser.add_argument("--every", choices=["day", "hour"], default="day")

    def handle(self, *args, project=None, since=None, every="day", **options):
        projects = Project.objects.all()
        if project:
            projects = projects.filter(slug=project)
            if not projects.exists():
                raise CommandError(f"No project with slug {project!r}.")
        for each in projects:
            start = self._start(each, since)
            if start is None:
                self.stdout.write(f"{each.slug}: no judgements yet, nothing to rebuild.")
                continue
            written = metrics_rebuild(
                project=each, since=start, every=every, progress=self._progress(each.slug)
            )
            self.stdout.write(self.style.SUCCESS(f"{each.slug}: {written} per-query points."))

    def _start(self, project, since):
        if since is not None:
            return dt.datetime.combine(since, dt.time(), tzinfo=dt.UTC)
        first = Judgement.objects.for_project(project).human().order_by("created_at").first()
        return first.created_at if first else None

    def _progress(self, slug):
        def show(done: int, total: int, as_of) -> None:
            filled = int(30 * done / total)
            bar = "#" * filled + "-" * (30 - filled)
            end = "\n" if done == total or not sys.stdout.isatty() else "\r"
            self.stdout.write(
                f"{slug} [{bar}] {done}/{total} as of {as_of:%Y-%m-%d %H:%M}", ending=end
            )
            self.stdout.flush()

        return show
