"""Where a machine judge's key comes from (issue 36, point 1): a variable whose name has
the operator's prefix (MACHINE_JUDGE_KEY_PREFIX, RJ_JUDGE_KEY_ by default) or a key
entered in the app and stored sealed; no other variable of the server can be named."""

import importlib

import pytest
from django.apps import apps
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from judgements.machine.runs import machine_run_start
from judgements.models import MachineJudge, MachineRun
from tests.config.test_production import production_environment, settings_import
from tests.machine.conftest import judge_form, machine_events, make_judge, pool_project

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

# What the server's own variables hold while these tests run: none may ever be sent.
SERVER_SECRETS = {
    "SECRET_KEY": "s3cret-key-of-the-server",
    "DATABASE_URL": "postgres://app:db-pa55word@db/app",
    "PATH": "/opt/server-path-marker/bin",
}


@pytest.fixture
def server_secrets(monkeypatch):
    for name, value in SERVER_SECRETS.items():
        monkeypatch.setenv(name, value)
    return SERVER_SECRETS


def everything_sent(server) -> str:
    return repr(server.requests) + repr(server.headers)


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "PATH"])
def test_naming_a_server_variable_is_refused_by_the_form_with_the_reason(
    charlie, model_server, server_secrets, name
):
    project = pool_project(1, 1)
    url = reverse("judgements:machine_judges", args=[project.slug])

    response = charlie.post(url, judge_form(model_server, api_key_env=name))

    assert response.status_code == 400
    errors = response.context["form"].errors["api_key_env"]
    assert errors == [
        f"{name} cannot be named: a judge's key variable must start with RJ_JUDGE_KEY_ "
        "(e.g. RJ_JUDGE_KEY_OPENAI), so that no other variable of the server is sent out; "
        "or enter the key itself, which is stored encrypted."
    ]
    assert not MachineJudge.objects.exists()


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "PATH"])
def test_naming_a_server_variable_is_refused_by_the_api_with_the_reason(
    charlie_api, model_server, server_secrets, name
):
    project = pool_project(1, 1)

    response = charlie_api.post(
        f"/api/projects/{project.slug}/judges/",
        {**judge_form(model_server, api_key_env=name), "concurrency": 1},
        format="json",
    )

    assert response.status_code == 400, response.content
    [error] = response.json()["errors"]
    assert error["field"] == "api_key_env"
    assert error["message"].startswith(f"{name} cannot be named: a judge's key variable must")
    assert not MachineJudge.objects.exists()


def test_the_api_creates_a_judge_with_a_stored_key_it_never_shows(
    charlie_api, model_server, analyst
):
    project = pool_project(1, 1)
    form = {**judge_form(model_server, api_key="sk-api-key-99"), "concurrency": 1}

    created = charlie_api.post(f"/api/projects/{project.slug}/judges/", form, format="json")

    assert created.status_code == 201, created.content
    body = created.json()
    assert body["has_api_key"] is True and "api_key" not in body
    assert "sk-api-key-99" not in charlie_api.get(f"/api/judges/{body['id']}/").content.decode()
    judge = MachineJudge.objects.get(pk=body["id"])
    machine_run_start(judge=judge, user=analyst)
    assert model_server.headers[-1]["authorization"] == "Bearer sk-api-key-99"

    refused = charlie_api.put(
        f"/api/judges/{judge.pk}/key/", {"api_key_env": "DATABASE_URL"}, format="json"
    )
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "api_key_env"
    changed = charlie_api.put(
        f"/api/judges/{judge.pk}/key/", {"api_key_env": "RJ_JUDGE_KEY_B"}, format="json"
    )
    assert changed.status_code == 200
    assert (changed.json()["api_key_env"], changed.json()["has_api_key"]) == (
        "RJ_JUDGE_KEY_B",
        False,
    )


def test_a_row_naming_a_server_variable_is_never_sent(model_server, analyst, server_secrets):
    """A row written past the form and the service (an old row, the admin, SQL): the
    worker checks the name again where it reads the key."""
    project = pool_project(1, 2)
    judge = make_judge(project, model_server)
    for name in server_secrets:
        MachineJudge.objects.filter(pk=judge.pk).update(api_key_env=name)
        judge.refresh_from_db()
        MachineRun.objects.filter(judge=judge).delete()

        run = machine_run_start(judge=judge, user=analyst)

        run.refresh_from_db()
        assert run.status == "paused"
        assert f"{name} cannot be named" in run.reason
    assert model_server.requests == []


def test_a_prefixed_variable_is_sent_and_nothing_of_the_servers(
    model_server, analyst, server_secrets, monkeypatch
):
    monkeypatch.setenv("RJ_JUDGE_KEY_HOSTED", "sk-from-the-variable")
    project = pool_project(1, 2)
    judge = make_judge(project, model_server, api_key_env="RJ_JUDGE_KEY_HOSTED")

    machine_run_start(judge=judge, user=analyst)

    assert [h["authorization"] for h in model_server.headers] == [
        "Bearer sk-from-the-variable"
    ] * 2
    sent = everything_sent(model_server)
    assert not [value for value in server_secrets.values() if value in sent]


def test_the_prefix_is_the_operators(model_server, analyst, settings, monkeypatch):
    settings.MACHINE_JUDGE_KEY_PREFIX = "ACME_LLM_"
    monkeypatch.setenv("ACME_LLM_KEY", "sk-acme")
    project = pool_project(1, 1)

    judge = make_judge(project, model_server, api_key_env="ACME_LLM_KEY")
    machine_run_start(judge=judge, user=analyst)

    assert model_server.headers[-1]["authorization"] == "Bearer sk-acme"
    with pytest.raises(Exception, match="must start with ACME_LLM_"):
        make_judge(project, model_server, name="Other", api_key_env="RJ_JUDGE_KEY_X")


def test_a_stored_key_is_sealed_in_the_row_never_shown_and_sent_as_bearer(
    charlie, model_server, analyst
):
    project = pool_project(1, 1)
    url = reverse("judgements:machine_judges", args=[project.slug])

    response = charlie.post(url, judge_form(model_server, api_key="sk-stored-7f3a"))

    judge = MachineJudge.objects.get()
    assert response.status_code == 302
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT row_to_json(j)::text FROM judgements_machinejudge j WHERE id = %s",
            [judge.pk],
        )
        (row,) = cursor.fetchone()
    assert "sk-stored-7f3a" not in row and judge.api_key_encrypted in row
    page = charlie.get(judge.get_absolute_url()).content.decode()
    assert "sk-stored-7f3a" not in page and "a stored key (encrypted, not shown)" in page

    machine_run_start(judge=judge, user=analyst)

    assert model_server.headers[-1]["authorization"] == "Bearer sk-stored-7f3a"
    assert machine_events(judge).get().grade == 0


def test_the_key_or_its_variable_not_both(charlie, model_server):
    project = pool_project(1, 1)
    url = reverse("judgements:machine_judges", args=[project.slug])
    form = judge_form(model_server, api_key="sk-1", api_key_env="RJ_JUDGE_KEY_A")

    response = charlie.post(url, form)

    assert response.status_code == 400
    assert response.context["form"].errors["api_key"] == [
        "Enter the key or name its variable, not both."
    ]


def test_the_key_form_replaces_the_key_and_refuses_a_server_variable(
    charlie, model_server, analyst
):
    project = pool_project(1, 1)
    judge = make_judge(project, model_server, api_key_env="RJ_JUDGE_KEY_OLD")
    url = reverse("judgements:machine_key", args=[project.slug, judge.pk])

    refused = charlie.post(url, {"api_key_env": "SECRET_KEY"}, follow=True)
    judge.refresh_from_db()
    assert judge.api_key_env == "RJ_JUDGE_KEY_OLD"
    assert "The key was not changed" in refused.content.decode()

    charlie.post(url, {"api_key": "sk-new-key", "api_key_env": ""})
    judge.refresh_from_db()
    assert (judge.api_key_env, judge.has_api_key) == ("", True)
    machine_run_start(judge=judge, user=analyst)
    assert model_server.headers[-1]["authorization"] == "Bearer sk-new-key"


def test_the_migration_clears_unprefixed_variables_and_says_why(charlie, model_server, analyst):
    """0035's data step, run on rows as an older release left them."""
    migration = importlib.import_module("judgements.migrations.0035_machinejudge_keys")
    project = pool_project(1, 1)
    old = make_judge(project, model_server, name="Old")
    kept = make_judge(project, model_server, name="Kept", api_key_env="RJ_JUDGE_KEY_K")
    run = MachineRun.objects.create(judge=old, status="running", total=1)
    MachineJudge.objects.filter(pk=old.pk).update(api_key_env="OPENAI_API_KEY")

    migration._clear_unprefixed(apps, None)

    old.refresh_from_db()
    kept.refresh_from_db()
    run.refresh_from_db()
    assert old.api_key_env == "" and "OPENAI_API_KEY" in old.key_problem
    assert kept.api_key_env == "RJ_JUDGE_KEY_K" and kept.key_problem == ""
    assert (run.status, run.reason) == ("paused", old.key_problem)
    page = charlie.get(old.get_absolute_url()).content.decode()
    assert "must now start with RJ_JUDGE_KEY_" in page
    listing = charlie.get(reverse("judgements:machine_judges", args=[project.slug]))
    assert listing.content.decode().count("key to set again") == 1
    # Until the key is set again, a run pauses at once with the same reason.
    run.delete()
    second = machine_run_start(judge=old, user=analyst)
    second.refresh_from_db()
    assert (second.status, second.reason) == ("paused", old.key_problem)
    assert model_server.requests == []


@pytest.mark.parametrize("persona", ["anonymous", "rater", "outsider"])
def test_only_analysts_reach_the_judges_api(model_server, rater, outsider, persona):
    project = pool_project(1, 1)
    judge = make_judge(project, model_server)
    client = APIClient()
    if persona != "anonymous":
        client.force_authenticate({"rater": rater, "outsider": outsider}[persona])
    status = 401 if persona == "anonymous" else 403
    form = {"api_key_env": "RJ_JUDGE_KEY_X"}

    answers = [
        client.get(f"/api/projects/{project.slug}/judges/"),
        client.post(f"/api/projects/{project.slug}/judges/", {"name": "X"}, format="json"),
        client.get(f"/api/judges/{judge.pk}/"),
        client.put(f"/api/judges/{judge.pk}/key/", form, format="json"),
    ]

    assert [answer.status_code for answer in answers] == [status] * 4
    judge.refresh_from_db()
    assert judge.api_key_env == "" and MachineJudge.objects.count() == 1


@pytest.mark.parametrize("prefix", ["_", "RJ", "RJ-KEY_", "9_"])
def test_a_malformed_prefix_stops_the_app_at_start(prefix):
    environment = production_environment(
        DATABASE_URL="postgres://u@h/n", MACHINE_JUDGE_KEY_PREFIX=prefix
    )
    done = settings_import(environment)
    assert done.returncode != 0
    assert "MACHINE_JUDGE_KEY_PREFIX must be a variable-name prefix" in done.stderr


def test_an_empty_prefix_is_the_default_not_none():
    environment = production_environment(
        DATABASE_URL="postgres://u@h/n", MACHINE_JUDGE_KEY_PREFIX=""
    )
    code = "import config.settings as s; print(s.MACHINE_JUDGE_KEY_PREFIX)"
    done = settings_import(environment, code)
    assert done.stdout.strip() == "RJ_JUDGE_KEY_", done.stderr


def test_the_new_judge_form_says_where_a_key_may_come_from(charlie, settings):
    settings.MACHINE_JUDGE_KEY_PREFIX = "ACME_MODEL_KEY_"
    project = pool_project(1, 1)

    page = charlie.get(reverse("judgements:machine_judges", args=[project.slug]))

    text = page.content.decode()
    assert "stored encrypted, never shown again" in text
    assert "<code>ACME_MODEL_KEY_OPENAI</code>" in text
    assert "OPENAI_API_KEY" not in text
