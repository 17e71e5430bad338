from django.tasks import task

from judgements.jobs import job_execute


@task()
def job_run(job_id: str) -> str:
    """Run a background job (a large upload, a deletion): see judgements.jobs."""
    return job_execute(job_id)


@task()
def machine_run_task(run_id: int) -> str:
    """Work on a machine judge's run until it is done, paused or out of budget: see
    judgements.machine.runs."""
    from judgements.machine.runs import machine_run_work

    return machine_run_work(run_id)
