from django.tasks import task

from judgements.jobs import job_execute


@task()
def job_run(job_id: str) -> str:
    """Run a background job (a large upload, a deletion): see judgements.jobs."""
    return job_execute(job_id)
