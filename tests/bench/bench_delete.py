"""Benchmark deletions at scale: a result list, then its whole project, as background jobs.

Run as ``.venv/bin/python tests/bench/bench_delete.py``. It is not a pytest test, and it
works on the development database. A generate_load project of 1,000 queries, two result
lists of 100 hits per query (200,000 hits) and 20,000 judgements is made, then served as
docker-compose.yml serves it (gunicorn with DEBUG off, the django-tasks-db queue and a
``db_worker`` process, see bench_upload.py). Through the API, as a script would:

- one result list is deleted through its page, signed in as an analyst (its 100,000
  hits leave the rating queue through the triggers), then the project through the
  API's ``DELETE`` (every row of it);
- for each: how long the request took (target: well under a second, whatever the
  size), how long the job ran, how many distinct progress values a poller saw, and
  whether the project stayed off the home page while its deletion ran.
"""

import http.cookiejar
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from io import StringIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_upload import REPOSITORY, analyst_token, moment, serve
from django.contrib.auth.models import User
from django.core.management import call_command

from judgements.bulk import project_delete_fast
from judgements.models import Hit, Project

SLUG = "bench-delete"
PASSWORD = "bench-analyst-password"
REQUEST_TARGET_SECONDS = 1.0


class Browser:
    """Signs in with the login page and posts forms with their CSRF token, as a browser."""

    def __init__(self, base: str, username: str, password: str):
        self.base, self.cookies = base, http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))
        self.post("/accounts/login/", {"username": username, "password": password})

    def post(self, path: str, fields: dict) -> tuple[str, float]:
        """POST ``fields``; returns where it led (after redirects) and the seconds the POST
        itself took."""
        self.opener.open(self.base + path, timeout=60).read()
        token = next(cookie.value for cookie in self.cookies if cookie.name == "csrftoken")
        data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(self.base + path, data=data, method="POST")
        no_redirect = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.cookies), _NoRedirect
        )
        started = time.perf_counter()
        with no_redirect.open(request, timeout=120) as response:
            response.read()
            return response.headers.get("Location", ""), time.perf_counter() - started


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def http_error_302(self, request, response, code, message, headers):
        return response


def api(base: str, token: str, method: str, path: str) -> tuple[dict, float]:
    request = urllib.request.Request(
        base + path, method=method, headers={"Authorization": f"Token {token}"}
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read()), time.perf_counter() - started


def follow(base: str, token: str, job: dict, *, project: int | None) -> tuple[dict, set, bool]:
    """Poll the job to its end; the progress values seen, and whether the project was
    listed by the projects API at any moment while the job ran."""
    seen, listed = set(), False
    while job["status"] not in ("done", "failed"):
        time.sleep(0.05)
        job, _ = api(base, token, "GET", job["url"])
        if job["status"] == "running" and job["percent"] is not None:
            seen.add(job["percent"])
        if project is not None and job["status"] == "running":
            projects, _ = api(base, token, "GET", "/api/projects/?page_size=500")
            listed |= any(item["slug"] == SLUG for item in projects["results"])
    return job, seen, listed


def report(what: str, request_seconds: float, job: dict, seen: set) -> None:
    assert job["status"] == "done", job["errors"]
    seconds = (moment(job["finished_at"]) - moment(job["started_at"])).total_seconds()
    ok = "met" if request_seconds < REQUEST_TARGET_SECONDS else "NOT met"
    print(
        f"{what:<34} request {request_seconds:6.3f}s ({ok}) · job {seconds:6.1f}s · "
        f"{len(seen)} progress values seen: {sorted(seen)}"
    )


def main() -> None:
    print(f"machine load (1, 5, 15 min): {os.getloadavg()}")
    started = time.perf_counter()
    call_command(
        "generate_load", slug=SLUG, queries=1000, hits_per_query=100, result_lists=2,
        judgements=20_000, stdout=StringIO(),
    )  # fmt: skip
    project = Project.objects.get(slug=SLUG)
    hits = Hit.objects.filter(result_list__project=project).count()
    print(f"generated {hits:,} hits in {time.perf_counter() - started:.0f} s")
    token = analyst_token()
    analyst = User.objects.get(username="bench_analyst")
    analyst.set_password(PASSWORD)
    analyst.save()
    # The pages need the static files' manifest with DEBUG off, as in the Dockerfile.
    production = {**os.environ, "DEBUG": "0", "SECRET_KEY": "bench"}
    collectstatic = [sys.executable, "manage.py", "collectstatic", "--no-input", "-v", "0"]
    subprocess.run(collectstatic, env=production, cwd=REPOSITORY, check=True)
    with tempfile.TemporaryDirectory() as folder:
        base, servers = serve(Path(folder))
        try:
            result_list = project.result_lists.order_by("pk").first()
            browser = Browser(base, "bench_analyst", PASSWORD)
            path = f"/projects/{SLUG}/result-lists/{result_list.pk}/delete/"
            job_page, request_seconds = browser.post(path, {})
            job_id = job_page.rstrip("/").rsplit("/", 1)[-1]
            job, _ = api(base, token, "GET", f"/api/jobs/{job_id}/")
            job, seen, _ = follow(base, token, job, project=None)
            report(f"result list ({hits // 2:,} hits)", request_seconds, job, seen)

            job, request_seconds = api(base, token, "DELETE", f"/api/projects/{SLUG}/")
            job, seen, listed = follow(base, token, job, project=project.pk)
            report(f"project ({hits // 2:,} hits left)", request_seconds, job, seen)
            print(f"project listed while its deletion ran: {listed}")
            assert not Project.objects.filter(slug=SLUG).exists()
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=60)
            project_delete_fast(SLUG)


if __name__ == "__main__":
    main()
