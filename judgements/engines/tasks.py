"""The engines' background tasks, run by the task worker like every other."""

from django.tasks import task


@task()
def capture_task(capture_id: int) -> str:
    """Run a capture or a try: see judgements.engines.capture."""
    from judgements.engines.capture import capture_run

    return capture_run(capture_id)


@task()
def schedule_fire_task(schedule_id: int, token: str) -> str:
    """Fire a capture schedule and queue its next firing: see judgements.engines.schedules."""
    from judgements.engines.schedules import schedule_fire

    return schedule_fire(schedule_id, token)
