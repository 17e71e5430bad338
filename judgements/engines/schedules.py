"""Captures on a schedule: daily, weekly or at the times of a cron expression (UTC).

Each firing is a deferred task (``run_after``) of the task worker: when it runs, it
queues the next firing first, then starts the capture, so that a capture which fails
or a worker that dies mid-capture does not end the chain. Nothing is added to the
worker: django-tasks-db's ``db_worker`` (and ``task_worker``) runs deferred tasks at
their time. Each arming draws a new token, and a firing whose token is no longer the
schedule's (it was paused, resumed or changed since) does nothing, so a schedule never
has two chains.

Where the task backend cannot defer (the immediate backend of development), the
management command ``capture_schedules`` fires the schedules that are due; run it from
cron every minute there. With the database backend it also re-arms a schedule whose
firing was lost (a purged task table).
"""

import uuid
from datetime import UTC, datetime

from cronsim import CronSim, CronSimError
from django.core.exceptions import ValidationError
from django.db import transaction
from django.tasks import default_task_backend
from django.utils import timezone

from judgements.engines.capture import capture_start
from judgements.models import Capture, CaptureSchedule, SearchEndpoint

PRESETS = {"daily": "0 3 * * *", "weekly": "0 3 * * 1"}


def expression_of(every: str, expression: str = "") -> str:
    """The cron expression of a choice: ``daily`` (03:00 UTC), ``weekly`` (Mondays
    03:00 UTC) or ``cron`` with its own expression; raises ValidationError."""
    text = PRESETS.get(every) or " ".join(expression.split())
    try:
        CronSim(text, timezone.now())
    except CronSimError as error:
        message = f'"{text}" is not a cron expression (minute hour day month weekday): {error}.'
        raise ValidationError({"expression": [message]}) from None
    return text


def explain(expression: str) -> str:
    """The expression in words, as cronsim says it."""
    try:
        return CronSim(expression, timezone.now()).explain() + " (UTC)"
    except (CronSimError, ValueError):
        return expression


def next_after(expression: str, moment: datetime) -> datetime:
    return next(CronSim(expression, moment.astimezone(UTC)))


@transaction.atomic
def schedule_create(*, endpoint: SearchEndpoint, expression: str, user) -> CaptureSchedule:
    schedule = CaptureSchedule.objects.create(
        endpoint=endpoint,
        expression=expression,
        created_by=user if user is not None and user.is_authenticated else None,
    )
    schedule_arm(schedule)
    return schedule


def schedule_arm(schedule: CaptureSchedule) -> None:
    """Set the next firing (after now) and queue it, under a new token."""
    from judgements.engines.tasks import schedule_fire_task

    schedule.token = uuid.uuid4()
    schedule.next_run_at = next_after(schedule.expression, timezone.now())
    schedule.paused = False
    schedule.save(update_fields=["token", "next_run_at", "paused"])
    if default_task_backend.supports_defer:
        fire = schedule_fire_task.using(run_after=schedule.next_run_at)
        args = (schedule.pk, str(schedule.token))
        transaction.on_commit(lambda: fire.enqueue(*args))


@transaction.atomic
def schedule_pause(*, schedule: CaptureSchedule) -> None:
    schedule.paused, schedule.token, schedule.next_run_at = True, None, None
    schedule.save(update_fields=["paused", "token", "next_run_at"])


@transaction.atomic
def schedule_resume(*, schedule: CaptureSchedule) -> None:
    schedule_arm(schedule)


def schedule_fire(schedule_id: int, token: str) -> str:
    """Fire the schedule if ``token`` is still its own: queue the next firing, then start
    the capture. Returns "fired", "stale" or a failure's message."""
    with transaction.atomic():
        schedule = (
            CaptureSchedule.objects.select_for_update()
            .select_related("endpoint__project")
            .filter(pk=schedule_id)
            .first()
        )
        if schedule is None or schedule.paused or str(schedule.token) != token:
            return "stale"
        moment = schedule.next_run_at or timezone.now()
        schedule_arm(schedule)
    endpoint = schedule.endpoint
    try:
        capture_start(
            endpoint=endpoint,
            user=schedule.created_by,
            kind=Capture.Kind.SCHEDULED,
            schedule=schedule,
            name=_name(endpoint, moment),
        )
    except ValidationError as error:
        return " ".join(error.messages)
    return "fired"


def _name(endpoint: SearchEndpoint, moment: datetime) -> str:
    base = f"{endpoint.name} scheduled {moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    taken = set(
        endpoint.project.result_lists.filter(name__startswith=base).values_list("name", flat=True)
    )
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base} ({number})"
    return name


def schedules_due(now: datetime | None = None) -> list[str]:
    """Fire every schedule whose time has come (or re-arm one whose firing was lost);
    returns what each said."""
    now = now or timezone.now()
    due = CaptureSchedule.objects.filter(paused=False, next_run_at__lte=now).order_by("pk")
    return [schedule_fire(schedule.pk, str(schedule.token)) for schedule in due]
