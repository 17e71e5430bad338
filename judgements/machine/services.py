"""Writes about machine judges other than runs: creating one, overruling its grade."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from config.encryption import SecretsUnavailable, seal
from judgements.machine.prompting import template_errors
from judgements.models import Judgement, MachineJudge, Project
from judgements.models.machine import key_variable_problem
from judgements.roles import is_analyst


@transaction.atomic
def machine_judge_create(
    *, project: Project, name: str, api_key: str = "", **config
) -> MachineJudge:
    """A judge of ``project`` and its own account (no password, no role: it cannot sign
    in, and raters' pages never list it). ``api_key``, if given, is stored sealed.
    Raises ``ValidationError``, writing nothing, when a field is invalid."""
    errors = (
        template_errors(config.get("prompt_template", "")) if "prompt_template" in config else []
    )
    if errors:
        raise ValidationError({"prompt_template": errors})
    judge = MachineJudge(project=project, name=name, **config)
    _set_key(judge, api_key_env=judge.api_key_env, api_key=api_key)
    judge.full_clean(exclude=["rater"])
    judge.rater = _account(project, name)
    judge.save()
    return judge


@transaction.atomic
def machine_judge_key_set(*, judge: MachineJudge, api_key_env: str, api_key: str = "") -> None:
    """Where ``judge``'s key comes from from now on: the key itself (stored sealed,
    replacing any stored one), a variable with the operator's prefix, or neither (a
    local server that wants none). Clears the judge's ``key_problem``. Raises
    ``ValidationError`` naming the field."""
    _set_key(judge, api_key_env=api_key_env, api_key=api_key)
    judge.key_problem = ""
    judge.full_clean(exclude=["rater", "project"])
    judge.save(update_fields=["api_key_env", "api_key_encrypted", "key_problem"])


def _set_key(judge: MachineJudge, *, api_key_env: str, api_key: str) -> None:
    api_key_env, api_key = (api_key_env or "").strip(), (api_key or "").strip()
    if api_key and api_key_env:
        raise ValidationError(
            {"api_key": "Enter the key or name its variable, not both: which would be sent?"}
        )
    if problem := key_variable_problem(api_key_env):
        raise ValidationError({"api_key_env": problem})
    judge.api_key_env, judge.api_key_encrypted = api_key_env, ""
    if api_key:
        try:
            judge.api_key_encrypted = seal(api_key)
        except SecretsUnavailable as error:
            raise ValidationError(
                {"api_key": f"{error} Name a variable with the key instead."}
            ) from None


def _account(project: Project, name: str):
    users = get_user_model()
    base = f"machine.{project.slug}.{slugify(name) or 'judge'}"[:140]
    username, number = base, 1
    while users.objects.filter(username=username).exists():
        number += 1
        username = f"{base}.{number}"
    account = users(username=username, first_name=name[:150])
    account.set_unusable_password()
    account.save()
    return account


@transaction.atomic
def machine_grade_overrule(*, analyst, judgement: Judgement, grade: int | None) -> Judgement:
    """An analyst's own answer on a pair a machine judge graded: a new human event of
    source "overrule" (``grade`` None: can't tell). The machine's event stays in the log,
    and the analyst's grade counts as any human rater's."""
    if not is_analyst(analyst):
        raise ValidationError("Only analysts may overrule a machine judge.")
    if judgement.source != Judgement.Source.MACHINE:
        raise ValidationError("Only a machine judge's grade can be overruled.")
    project = judgement.query.project
    if grade is not None and grade not in project.grade_values:
        raise ValidationError(f"{grade} is not a grade of the scale {project.grade_values}.")
    kind = Judgement.Kind.GRADE if grade is not None else Judgement.Kind.CANT_TELL
    event = Judgement(
        query=judgement.query,
        document=judgement.document,
        rater=analyst,
        kind=kind,
        grade=grade,
        note=f"Overrules machine judge {judgement.rater.get_username()} (event {judgement.pk}).",
        source=Judgement.Source.OVERRULE,
    )
    event.full_clean()
    event.save()
    from metrics.refresh import metrics_schedule_refresh

    metrics_schedule_refresh(project_id=project.pk, query_ids=[judgement.query_id])
    return event
