"""The production path: DEBUG off, the collected static files, gunicorn.

A page that only works with DEBUG on is broken. These tests build the static files as
the Dockerfile does, then serve the app as docker-compose.yml does (gunicorn, DEBUG
off) on 127.0.0.1, against the test database with the demo loaded, and load every
page and the static files it names.
"""

import contextlib
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from http.cookiejar import CookieJar
from io import StringIO
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import quote, urlencode
from urllib.request import HTTPCookieProcessor, HTTPRedirectHandler, Request, build_opener

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection

from judgements.models import Job, Project
from tests import routes

ROOT = Path(__file__).resolve().parents[2]
SOURCE_MAP = re.compile(rb"[#@] sourceMappingURL=([^\s*]+)")
STATIC_REFERENCE = re.compile(r"""(?:src|href)="(/static/[^"]+)\"""")


def production_environment(**extra) -> dict:
    """The variables docker-compose.yml gives the web service, DEBUG off."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "0",
        "SECRET_KEY": "production-path-test",
        "ALLOWED_HOSTS": "127.0.0.1",
        **extra,
    }


def settings_import(environment: dict, code: str = "import config.settings"):
    """A Python process that runs ``code`` (by default, reads the settings) with only
    ``environment``; its exit status and output, for tests of what stops the app."""
    command = [sys.executable, "-c", code]
    return subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True)


@pytest.fixture(scope="module")
def static_root(tmp_path_factory) -> Path:
    """collectstatic exactly as the Dockerfile runs it: no database, manifest storage."""
    root = tmp_path_factory.mktemp("staticfiles")
    environment = production_environment(
        STATIC_ROOT=str(root), DATABASE_URL="postgres://build@localhost/build"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--no-input"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return root


def test_collectstatic_with_debug_off_writes_a_manifest_naming_every_script(static_root):
    manifest = (static_root / "staticfiles.json").read_text()
    for script in ("vendor/chartjs/chart.umd.js", "vendor/htmx/htmx.min.js", "css/app.css"):
        assert f'"{script}"' in manifest


def test_every_source_map_a_static_file_names_is_there():
    # The manifest storage rewrites these references and fails on a missing file.
    for path in (ROOT / "static").rglob("*"):
        if path.suffix not in (".js", ".css"):
            continue
        for name in SOURCE_MAP.findall(path.read_bytes()):
            assert (path.parent / name.decode()).exists(), f"{path} names missing {name!r}"


def test_settings_default_to_debug_off():
    environment = production_environment(DATABASE_URL="postgres://u@h/n")
    del environment["DEBUG"]
    probe = "from django.conf import settings; print(settings.DEBUG)"
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {probe}"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("secret_key", [None, "", "   "])
def test_settings_refuse_a_missing_or_blank_secret_key_when_debug_is_unset(secret_key):
    environment = production_environment(DATABASE_URL="postgres://u@h/n")
    del environment["DEBUG"], environment["SECRET_KEY"]
    if secret_key is not None:
        environment["SECRET_KEY"] = secret_key
    done = settings_import(environment)
    assert done.returncode != 0
    assert "Set SECRET_KEY" in done.stderr


def database_url() -> str:
    """The test database as a URL, for a server process of its own."""
    db = connection.settings_dict
    user = quote(db["USER"] or "")
    password = quote(db["PASSWORD"] or "")
    credentials = f"{user}:{password}@" if user else ""
    host = db["HOST"] or ""
    if host.startswith("/"):
        return f"postgresql://{credentials}/{quote(db['NAME'])}?host={quote(host)}"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgresql://{credentials}{host}{port}/{quote(db['NAME'])}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def gunicorn(static_root):
    """The app under gunicorn with DEBUG off, as docker-compose.yml serves it."""
    with serving(static_root) as url:
        yield url


@contextlib.contextmanager
def serving(static_root: Path, *, workers: int = 2, **environment):
    """gunicorn on 127.0.0.1 with DEBUG off, against the test database unless
    ``environment`` names another DATABASE_URL; yields its base URL."""
    port = free_port()
    environment = production_environment(
        **{"STATIC_ROOT": str(static_root), "DATABASE_URL": database_url(), **environment}
    )
    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application"]
    server = subprocess.Popen(
        [*command, "--workers", str(workers), "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert server.poll() is None, server.stderr.read().decode()[-2000:]
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


class Browser:
    """Just enough of a browser for Django: cookies, the CSRF token, status codes."""

    def __init__(self, base: str):
        self.base, self.cookies = base, CookieJar()
        self.opener = build_opener(HTTPCookieProcessor(self.cookies))

    def get(self, path: str) -> tuple[int, str, str]:
        return self._open(Request(self.base + path))

    def log_in(self, username: str) -> None:
        self.get("/accounts/login/")
        token = next(cookie.value for cookie in self.cookies if cookie.name == "csrftoken")
        form = {"username": username, "password": "relevance", "csrfmiddlewaretoken": token}
        request = Request(self.base + "/accounts/login/", data=urlencode(form).encode())
        status, _, _ = self._open(request)
        assert status == 200 and any(cookie.name == "sessionid" for cookie in self.cookies)

    def _open(self, request: Request) -> tuple[int, str, str]:
        try:
            with self.opener.open(request, timeout=30) as response:
                body = response.read().decode("utf-8", "replace")
                return response.status, response.headers.get("Content-Type", ""), body
        except HTTPError as error:
            body = error.read().decode("utf-8", "replace")
            return error.code, error.headers.get("Content-Type", ""), body


def page_paths(project: Project) -> list[str]:
    """Every URL the app routes, outside the admin and the API, filled from the demo."""
    result_list = project.result_lists.order_by("pk").first()
    values = {
        "slug": project.slug,
        "result_list_id": result_list.pk,
        "pk": result_list.pk,
        "query_id": result_list.hits.order_by("pk").first().query_id,
        # The password reset link's parts: a wrong link renders its own page.
        "uidb64": "MQ",
        "token": "set-password",
        "kind": "queries",
        "job_id": Job.objects.create(kind="queries", label="queries.csv", project=project).pk,
        "judge_id": project.machine_judges.get().pk,
        "run_id": project.machine_judges.get().runs.get().pk,
        **engine_rows(project, result_list),
    }
    paths = []
    for route in routes.routes():
        if route.startswith(("admin/", "api/")) or not route.endswith("/"):
            continue
        paths.append("/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values[m[1]]), route))
    assert len(paths) >= 15, paths
    return paths


def engine_rows(project: Project, result_list) -> dict:
    """A search endpoint with a finished try of its own and a schedule, for its pages.
    Its base URL is a loopback port the server's outbound policy refuses, so that the
    live page shows the refusal and nothing is sent."""
    from judgements.engines.schedules import schedule_create
    from judgements.engines.services import endpoint_create
    from judgements.models import Capture

    endpoint = endpoint_create(
        project=project,
        user=None,
        template='{"q": "{{query}}"}',
        name="demo search",
        kind="json",
        base_url="http://127.0.0.1:9",
        index="/search",
    )
    ranking = {}
    for query_id, key in result_list.hits.values_list("query_id", "document__external_id"):
        ranking.setdefault(query_id, []).append({"id": key, "score": None})
    capture = Capture.objects.create(
        endpoint=endpoint,
        template=endpoint.template,
        kind=Capture.Kind.TRY,
        name="demo try",
        status=Capture.Status.DONE,
        ranking=[[query_id, hits] for query_id, hits in ranking.items()],
        baseline=result_list,
        total=len(ranking),
        done=len(ranking),
    )
    schedule = schedule_create(endpoint=endpoint, expression="0 3 * * *", user=None)
    return {"endpoint_id": endpoint.pk, "capture_id": capture.pk, "schedule_id": schedule.pk}


def load_demo_for_production(*usernames: str) -> None:
    """The demo, with these users' passwords hashed as production checks them.

    The suite hashes passwords with MD5 for speed; the server keeps Django's default
    hashers, which do not read MD5.
    """
    call_command("load_demo", stdout=StringIO())
    hasher = PBKDF2PasswordHasher()
    for username in usernames:
        password = hasher.encode("relevance", hasher.salt())
        User.objects.filter(username=username).update(password=password)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_gunicorn_with_debug_off_renders_every_page_and_its_static_files(gunicorn):
    load_demo_for_production("analyst")
    project = Project.objects.get(slug="outdoor-gear")
    anonymous = Browser(gunicorn)
    status, content_type, body = anonymous.get("/accounts/login/")
    assert status == 200 and "text/html" in content_type and 'name="password"' in body

    analyst = Browser(gunicorn)
    analyst.log_in("analyst")
    assets, failures = set(), []
    for path in page_paths(project):
        status, content_type, body = analyst.get(path)
        # POST-only actions answer 405 to a GET; nothing may answer 5xx.
        if status >= 500 or status not in (200, 405):
            failures.append(f"{path}: {status}")
        if "text/html" in content_type:
            assets.update(STATIC_REFERENCE.findall(body))
    assert not failures, failures
    assert any("chart.umd." in asset for asset in assets), assets
    for asset in sorted(assets):
        # The manifest's hashed names, served by WhiteNoise.
        assert re.search(r"\.[0-9a-f]{12}\.\w+$", asset), asset
        assert analyst.get(asset)[0] == 200, asset

    status, content_type, body = analyst.get(f"/metrics/{project.slug}/")
    assert status == 200 and "NDCG" in body
    status, content_type, body = analyst.get("/api/projects/")
    assert status == 200 and "application/json" in content_type and project.slug in body
    status, content_type, _ = analyst.get("/api/no-such-endpoint/")
    assert status == 404 and "application/json" in content_type


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_gunicorn_with_debug_off_renders_the_admin(gunicorn):
    load_demo_for_production("admin")
    admin = Browser(gunicorn)
    admin.log_in("admin")
    for path in ("/admin/", "/admin/judgements/project/", "/api/docs/"):
        status, _, body = admin.get(path)
        assert status == 200, (path, status)
        assert "Traceback" not in body


def test_check_deploy_is_clean_with_production_settings_and_tls_on():
    environment = production_environment(
        SECRET_KEY=secrets.token_urlsafe(60),
        HTTPS="1",
        ALLOWED_HOSTS="judge.example.org",
        DATABASE_URL="postgres://u@h/n",
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "no issues" in done.stdout


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_gunicorn_sends_the_security_headers_and_a_strict_csp(static_root):
    with serving(static_root, HTTPS="1", TRUSTED_PROXIES="1") as base:
        request = Request(f"{base}/accounts/login/", headers={"X-Forwarded-Proto": "https"})
        with build_opener().open(request, timeout=30) as response:
            headers = response.headers
        policy = headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert headers["Strict-Transport-Security"].startswith("max-age=31536000")
        assert "Secure" in headers["Set-Cookie"]
        # Plain HTTP is sent to HTTPS; the health check is not.
        with pytest.raises(HTTPError) as redirect:
            build_opener(NoRedirect).open(f"{base}/accounts/login/", timeout=30)
        assert redirect.value.code == 301
        assert redirect.value.headers["Location"].startswith("https://")
        with build_opener().open(f"{base}/health/", timeout=30) as health:
            assert health.status == 200


class NoRedirect(HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
