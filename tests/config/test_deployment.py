"""docker-compose.yml and the Dockerfile cannot run in CI (no Docker engine); these
tests check what can be checked: the settings they produce and the commands they name."""

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_PROBE = """
import json
from django.conf import settings
db = settings.DATABASES["default"]
print(json.dumps({
    "engine": db["ENGINE"], "host": db["HOST"], "name": db["NAME"], "user": db["USER"],
    "debug": settings.DEBUG, "tasks": settings.TASKS["default"]["BACKEND"],
    "middleware": settings.MIDDLEWARE, "allowed_hosts": settings.ALLOWED_HOSTS,
}))
"""


def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def resolve(value: str, env: dict) -> str:
    """Expand ${NAME}, ${NAME:-default} and ${NAME:?error} as docker compose does."""

    def one(match):
        name, default = match.group(1), match.group(3) or ""
        return env.get(name) or ("" if match.group(2) == ":?" else default)

    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, value)


def settings_under(environment: dict) -> dict:
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings"} | environment
    probe = f"import django; django.setup()\n{SETTINGS_PROBE}"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_web_service_settings_point_at_the_compose_database():
    web = compose()["services"]["web"]
    env = {"SECRET_KEY": "test-secret", "POSTGRES_PASSWORD": "pw"}
    environment = {key: resolve(str(value), env) for key, value in web["environment"].items()}
    settings = settings_under(environment)
    assert settings["engine"] == "django.db.backends.postgresql"
    assert (settings["host"], settings["name"], settings["user"]) == (
        "db",
        "relevance_judge",
        "judge",
    )
    assert settings["debug"] is False
    assert settings["tasks"] == "django_tasks_db.DatabaseBackend"
    assert "whitenoise.middleware.WhiteNoiseMiddleware" in settings["middleware"]


def test_the_worker_shares_the_web_environment_and_runs_a_real_command():
    services = compose()["services"]
    assert services["worker"]["environment"] == services["web"]["environment"]
    command = services["worker"]["command"].split()
    assert command[:2] == ["python", "manage.py"]
    assert command[2] in get_commands()


def test_the_database_service_is_postgresql_16_with_a_health_check():
    db = compose()["services"]["db"]
    assert db["image"] == "postgres:16"
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])


def test_settings_refuse_to_start_without_a_secret_key_when_debug_is_off():
    env = {"PATH": "/usr/bin:/bin", "DEBUG": "0", "DATABASE_URL": "postgres://u@h/n"}
    out = subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert "Set SECRET_KEY" in out.stderr


def test_the_dockerfile_serves_the_wsgi_application_that_exists():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "FROM python:3.12" in dockerfile
    assert "config.wsgi:application" in dockerfile
    assert (ROOT / "config" / "wsgi.py").exists()


def test_web_and_worker_restart_and_check_their_health_against_the_database():
    services = compose()["services"]
    for name in ("web", "worker"):
        assert services[name]["restart"] == "unless-stopped", name
        assert services[name]["healthcheck"]["test"], name
    assert "/health/" in " ".join(services["web"]["healthcheck"]["test"])
    assert services["worker"]["command"].split()[2] == "task_worker"
    check = services["worker"]["healthcheck"]["test"]
    assert check == ["CMD", "python", "manage.py", "healthcheck"]
    assert "healthcheck" in get_commands()


def test_gunicorns_timeout_is_set_the_same_in_compose_and_the_dockerfile():
    web = " ".join(compose()["services"]["web"]["command"].split())
    timeouts = re.findall(r"--timeout (\d+)", web)
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert timeouts and timeouts == re.findall(r'"--timeout", "(\d+)"', dockerfile)
    assert 30 < int(timeouts[0]) <= 300
