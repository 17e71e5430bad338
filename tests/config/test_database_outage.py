"""A database outage, for real: gunicorn and the task worker pointed at a PostgreSQL of
their own, which the test stops and starts again.

While it is down, the API answers JSON 503 with Retry-After, pages a plain 503 page,
/health/ 503, and the worker keeps trying; once it is back, everything recovers by
itself: the same server processes answer again and the worker runs a queued task.
"""

import importlib
import json
import subprocess
import sys
import time
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import parse_qs, urlsplit
from urllib.request import Request, urlopen

import psycopg2
import pytest

from tests.config.test_production import ROOT, production_environment, serving, static_root

pgserver = pytest.importorskip("pgserver")
RATE_LIMIT_TABLE = importlib.import_module("judgements.migrations.0024_rate_limit_table")
__all__ = ["static_root"]  # a fixture, used by name


class SecondServer:
    """An embedded PostgreSQL apart from the suite's, with a database "outage"."""

    def __init__(self, pgdata: Path):
        self.pgdata = pgdata
        self.server = pgserver.get_server(pgdata, cleanup_mode="stop")
        uri = self.server.get_uri()
        self.socket_dir = parse_qs(urlsplit(uri).query)["host"][0]
        self.server.psql("CREATE DATABASE outage;")
        self.url = f"postgresql://postgres:@/outage?host={self.socket_dir}"

    def stop(self) -> None:
        self._pg_ctl("-m", "fast", "stop")

    def start(self) -> None:
        options = ["-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.pgdata / "log")]
        self._pg_ctl(*options, "start")

    def _pg_ctl(self, *args: str) -> None:
        pgserver.pg_ctl(["-w", *args], pgdata=self.pgdata, user=self.server.system_user)


def manage(url: str, *args: str, **environment) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=production_environment(DATABASE_URL=url, **environment),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def second_server(tmp_path_factory):
    server = SecondServer(tmp_path_factory.mktemp("outage") / "pgdata")
    # Just what the requests below read: sessions, the rate limits' table, tasks.
    for app in ("auth", "sessions", "django_tasks_database"):
        manage(server.url, "migrate", app, "--no-input")
    with psycopg2.connect(server.url) as database, database.cursor() as cursor:
        cursor.execute(RATE_LIMIT_TABLE.FORWARD)
    yield server
    server.server.cleanup()


def get(url: str, **headers) -> tuple[int, dict, bytes]:
    try:
        with urlopen(Request(url, headers=headers), timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except HTTPError as error:
        return error.code, dict(error.headers), error.read()


SESSION = {"Cookie": "sessionid=someonessession"}


def wait_for(condition, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


def test_an_outage_is_a_503_with_retry_after_and_the_app_and_worker_recover(
    second_server, static_root, tmp_path
):
    done_file = tmp_path / "task-ran"
    worker_log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "task_worker", "--interval", "0.2", "--retry-max", "1"],
        cwd=ROOT,
        env=production_environment(DATABASE_URL=second_server.url, TASKS_BACKEND="database"),
        stdout=worker_log,
        stderr=subprocess.STDOUT,
    )
    try:
        with serving(static_root, DATABASE_URL=second_server.url) as base:
            # Up: the health check, the API (401 to an anonymous client) and a page (the
            # login page for an unknown session) answer as usual.
            assert get(f"{base}/health/")[0] == 200
            assert get(f"{base}/api/projects/")[0] == 401
            assert get(f"{base}/", **SESSION)[0] in (200, 302)

            second_server.stop()
            status, headers, body = get(f"{base}/api/projects/")
            assert status == 503 and headers["Content-Type"] == "application/json"
            assert headers["Retry-After"] == "10"
            message = json.loads(body)["errors"][0]["message"]
            assert message == "The database is unavailable; retry in 10 seconds."
            status, headers, body = get(f"{base}/", **SESSION)
            assert status == 503 and headers["Content-Type"].startswith("text/html")
            assert headers["Retry-After"] == "10"
            assert b"Back in a moment" in body and b"Traceback" not in body
            status, _, body = get(f"{base}/health/")
            assert status == 503 and json.loads(body)["database"] == "unavailable"
            time.sleep(3)  # The worker meets the outage and keeps trying.
            assert worker.poll() is None

            second_server.start()
            wait_for(lambda: get(f"{base}/health/")[0] == 200)
            assert get(f"{base}/api/projects/")[0] == 401
            assert get(f"{base}/", **SESSION)[0] in (200, 302)
        # The worker, still the same process, runs a task queued after the outage.
        manage(
            second_server.url,
            "shell",
            "-c",
            f"from tests.config.outage_tasks import touch; touch.enqueue({str(done_file)!r})",
            TASKS_BACKEND="database",
        )
        wait_for(done_file.exists)
        assert worker.poll() is None
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        worker_log.close()
    log = (tmp_path / "worker.log").read_text()
    assert "The database is unavailable" in log and "tries again" in log
