"""The machine judges' pages. Who may see them: analysts (and admins); raters get 403,
anonymous users the login page. Raters never see a machine grade anywhere."""

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from judgements import leases
from judgements.machine import certification, gate, runs
from judgements.machine.forms import (
    GateForm,
    KeyForm,
    MachineJudgeForm,
    OverruleForm,
    RunForm,
)
from judgements.machine.services import (
    machine_grade_overrule,
    machine_judge_create,
    machine_judge_key_set,
)
from judgements.models import Judgement, MachineJudge, MachineRun, Project
from judgements.roles import Role, role_required

RECENT_ANSWERS = 50


@role_required(Role.ANALYST)
def judges(request, slug):
    project = get_object_or_404(Project, slug=slug)
    form = MachineJudgeForm(request.POST or None, project=project)
    gate_form = GateForm(instance=gate.gate_of(project))
    if request.method == "POST" and form.is_valid():
        try:
            judge = machine_judge_create(project=project, **form.cleaned_data)
        except ValidationError as error:
            _add_errors(form, error)
        else:
            messages.success(request, f"Judge {judge.name} created: start a run below.")
            return redirect(judge)
    admitted = {judge.pk for judge in gate.admitted_judges(project)}
    rows = [
        (judge, judge.runs.first(), judge.pk in admitted)
        for judge in project.machine_judges.order_by("name")
    ]
    ctx = {"project": project, "form": form, "gate_form": gate_form, "rows": rows}
    ctx["key_prefix"] = settings.MACHINE_JUDGE_KEY_PREFIX
    status = 400 if form.errors else 200
    return render(request, "judgements/machine/judges.html", ctx, status=status)


def _add_errors(form, error: ValidationError) -> None:
    for field, messages_ in error.message_dict.items():
        form.add_error(field if field in form.fields else None, messages_)


@role_required(Role.ANALYST)
@require_POST
def key_settings(request, slug, judge_id):
    """Set where the judge's key comes from (a stored key, a prefixed variable, none)."""
    judge = _judge(slug, judge_id)
    form = KeyForm(request.POST)
    if form.is_valid():
        try:
            machine_judge_key_set(judge=judge, **form.cleaned_data)
        except ValidationError as error:
            _add_errors(form, error)
    if form.errors:
        errors = "; ".join(f"{field}: {' '.join(e)}" for field, e in form.errors.items())
        messages.error(request, f"The key was not changed: {errors}")
    else:
        messages.success(request, "The judge's key was set.")
    return redirect(judge)


@role_required(Role.ANALYST)
@require_POST
def gate_settings(request, slug):
    project = get_object_or_404(Project, slug=slug)
    form = GateForm(request.POST, instance=gate.gate_of(project))
    if form.is_valid():
        form.save()
        messages.success(request, f"Consensus from: {form.instance.get_admit_display()}.")
    else:
        errors = "; ".join(f"{field}: {' '.join(e)}" for field, e in form.errors.items())
        messages.error(request, f"The gate was not changed: {errors}")
    return redirect("judgements:machine_judges", slug=slug)


def _judge(slug: str, pk: int) -> MachineJudge:
    return get_object_or_404(
        MachineJudge.objects.select_related("project", "rater"), pk=pk, project__slug=slug
    )


@role_required(Role.ANALYST)
def judge(request, slug, judge_id):
    judge = _judge(slug, judge_id)
    run = judge.runs.first()
    answers = (
        Judgement.objects.filter(rater=judge.rater)
        .select_related("query", "document", "machine_answer")
        .order_by("-created_at", "-id")[:RECENT_ANSWERS]
    )
    ctx = {
        "project": judge.project,
        "judge": judge,
        "run": run,
        "run_form": RunForm(),
        "key_form": KeyForm(initial={"api_key_env": judge.api_key_env}),
        "key_prefix": settings.MACHINE_JUDGE_KEY_PREFIX,
        "answers": answers,
        "overrule_form": OverruleForm(project=judge.project),
        "spending": certification.judge_spending(judge),
        "lease_seconds": leases.lease_seconds(),
    }
    return render(request, "judgements/machine/judge.html", ctx)


@role_required(Role.ANALYST)
def run_progress(request, slug, judge_id):
    """The judge's newest run, for the progress bar (JSON)."""
    run = _judge(slug, judge_id).runs.first()
    if run is None:
        return JsonResponse({"status": None})
    return JsonResponse(
        {
            "status": run.status,
            "label": run.get_status_display(),
            "total": run.total,
            "graded": run.graded,
            "failed": run.failed,
            "percent": run.percent,
            "cost": str(run.cost),
            "reason": run.reason,
            "worker_lost": run.worker_lost,
        }
    )


@role_required(Role.ANALYST)
@require_POST
def run_start(request, slug, judge_id):
    judge = _judge(slug, judge_id)
    form = RunForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(f"{field}: {' '.join(e)}" for field, e in form.errors.items())
        messages.error(request, f"No run was started: {errors}")
        return redirect(judge)
    try:
        run = runs.machine_run_start(judge=judge, user=request.user, **form.cleaned_data)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect(judge)
    run.refresh_from_db()
    messages.success(request, f"Run started on {run.total} pairs.")
    return redirect(judge)


@role_required(Role.ANALYST)
@require_POST
def run_pause(request, slug, judge_id, run_id):
    run = get_object_or_404(MachineRun, pk=run_id, judge=_judge(slug, judge_id))
    if not runs.machine_run_pause(run=run):
        messages.error(request, "Only a running run can be paused.")
    return redirect(run.judge)


@role_required(Role.ANALYST)
@require_POST
def run_resume(request, slug, judge_id, run_id):
    run = get_object_or_404(MachineRun, pk=run_id, judge=_judge(slug, judge_id))
    if not runs.machine_run_resume(run=run):
        messages.error(request, "Only a paused run can be resumed.")
    return redirect(run.judge)


@role_required(Role.ANALYST)
@require_POST
def overrule(request, slug, judge_id):
    judge = _judge(slug, judge_id)
    form = OverruleForm(request.POST, project=judge.project)
    if not form.is_valid():
        errors = "; ".join(f"{field}: {' '.join(e)}" for field, e in form.errors.items())
        messages.error(request, f"Nothing was recorded: {errors}")
        return redirect(judge)
    event = Judgement.objects.filter(pk=form.cleaned_data["judgement"], rater=judge.rater).first()
    if event is None:
        messages.error(request, "Nothing was recorded: that event is not this judge's.")
        return redirect(judge)
    machine_grade_overrule(analyst=request.user, judgement=event, grade=form.chosen_grade)
    label = judge.project.grade_label(form.chosen_grade)
    messages.success(request, f"Your grade ({label}) now counts for {event.document}.")
    return redirect(judge)


@role_required(Role.ANALYST)
def certification_page(request, slug, judge_id):
    judge = _judge(slug, judge_id)
    project = judge.project
    result = certification.judge_agreement(judge)
    the_gate = gate.gate_of(project)
    labels = [f"{step['value']} {step['label']}" for step in project.scale]
    ctx = {
        "project": project,
        "judge": judge,
        "result": result,
        "rows": list(zip(labels, result.matrix.tolist(), result.per_grade.tolist(), strict=True)),
        "labels": labels,
        "gate": the_gate,
        "certified": gate.certified(result, the_gate),
        "canaries": certification.canary_rates(judge),
        "recent_canaries": judge.canaries.select_related("query", "document")[:20],
        "policy": project.get_consensus_display(),
    }
    return render(request, "judgements/machine/certification.html", ctx)


@role_required(Role.ANALYST)
@require_POST
def canaries_run(request, slug, judge_id):
    from judgements.tasks import machine_canaries_task

    judge = _judge(slug, judge_id)
    transaction.on_commit(lambda: machine_canaries_task.enqueue(judge.pk, 10))
    messages.success(request, "Canaries asked (ten of each kind, where gold pairs allow).")
    return redirect("judgements:machine_certification", slug=slug, judge_id=judge_id)
