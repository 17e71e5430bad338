"""Scheduled captures: a deferred task of the real task worker fires each one and queues
the next; a paused (or re-armed) schedule's old firing does nothing."""

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from judgements.engines import schedules
from judgements.models import Capture
from tests.engines.conftest import cranfield_project, make_endpoint


def test_presets_and_cron_expressions_are_checked():
    assert schedules.expression_of("daily") == "0 3 * * *"
    assert schedules.expression_of("weekly") == "0 3 * * 1"
    assert schedules.expression_of("cron", " 30  */6 * * * ") == "30 */6 * * *"
    with pytest.raises(ValidationError, match="is not a cron expression"):
        schedules.expression_of("cron", "61 * * * *")
    start = dt.datetime(2026, 11, 20, 3, 0, tzinfo=dt.UTC)
    assert schedules.next_after("0 3 * * *", start) == start + dt.timedelta(days=1)


@pytest.fixture
def fire(django_capture_on_commit_callbacks):
    def fire(schedule, token=None):
        with django_capture_on_commit_callbacks(execute=True):
            return schedules.schedule_fire(schedule.pk, str(token or schedule.token))

    return fire


@pytest.mark.django_db
def test_a_firing_captures_labelled_as_scheduled_and_arms_the_next(elastic, analyst, fire):
    project = cranfield_project(analyst, queries=3)
    endpoint = make_endpoint(project, elastic, analyst)
    schedule = schedules.schedule_create(endpoint=endpoint, expression="0 3 * * *", user=analyst)
    first_token, first_time = schedule.token, schedule.next_run_at

    assert fire(schedule) == "fired"

    capture = Capture.objects.get(schedule=schedule)
    assert capture.kind == "scheduled" and capture.status == "done"
    assert capture.result_list.name == f"{endpoint.name} scheduled {first_time:%Y-%m-%d %H:%M} UTC"
    assert capture.result_list.engine.endswith("· scheduled")
    schedule.refresh_from_db()
    assert schedule.token != first_token and schedule.next_run_at > timezone.now()
    # The firing that ran is stale now: it never captures twice.
    assert fire(schedule, first_token) == "stale"
    assert Capture.objects.filter(schedule=schedule).count() == 1


@pytest.mark.django_db
def test_a_paused_schedule_does_not_fire_until_resumed(elastic, analyst, fire):
    project = cranfield_project(analyst, queries=2)
    schedule = schedules.schedule_create(
        endpoint=make_endpoint(project, elastic, analyst), expression="0 3 * * *", user=analyst
    )
    token = schedule.token

    schedules.schedule_pause(schedule=schedule)

    assert fire(schedule, token) == "stale"
    assert not Capture.objects.exists()
    schedules.schedule_resume(schedule=schedule)
    assert fire(schedule) == "fired"


@pytest.mark.django_db
def test_the_command_fires_schedules_that_are_due(
    elastic, analyst, django_capture_on_commit_callbacks
):
    project = cranfield_project(analyst, queries=2)
    schedule = schedules.schedule_create(
        endpoint=make_endpoint(project, elastic, analyst), expression="0 3 * * *", user=analyst
    )
    type(schedule).objects.filter(pk=schedule.pk).update(
        next_run_at=timezone.now() - dt.timedelta(minutes=1)
    )

    with django_capture_on_commit_callbacks(execute=True):
        call_command("capture_schedules")

    assert Capture.objects.get(schedule=schedule).status == "done"


@pytest.fixture
def database_tasks(settings):
    """The task backend of production (django-tasks-db), which can defer a task."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_task_worker_fires_a_schedule_at_its_time(database_tasks, elastic, analyst):
    project = cranfield_project(analyst, queries=3)
    endpoint = make_endpoint(project, elastic, analyst)
    schedule = schedules.schedule_create(endpoint=endpoint, expression="*/5 * * * *", user=analyst)
    [deferred] = DBTaskResult.objects.filter(task_path__endswith="schedule_fire_task")
    assert deferred.run_after == schedule.next_run_at
    # Its time has come (rather than waiting five minutes for it).
    DBTaskResult.objects.filter(pk=deferred.pk).update(run_after=timezone.now())

    call_command("db_worker", "--batch", "--no-startup-delay", "--interval", "0.1")

    capture = Capture.objects.get(schedule=schedule)
    assert capture.status == "done" and capture.result_list.hits.exists()
    schedule.refresh_from_db()
    waiting = DBTaskResult.objects.filter(task_path__endswith="schedule_fire_task", status="READY")
    [following] = waiting
    assert following.args_kwargs["args"] == [schedule.pk, str(schedule.token)]
    assert following.run_after == schedule.next_run_at > timezone.now()
