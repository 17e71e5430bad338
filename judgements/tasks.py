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


@task()
def machine_canaries_task(judge_id: int, per_kind: int) -> int:
    """Ask a machine judge its canaries: see judgements.machine.canaries."""
    from judgements.machine.canaries import machine_canaries_run
    from judgements.models import MachineJudge

    return machine_canaries_run(judge=MachineJudge.objects.get(pk=judge_id), per_kind=per_kind)
