"""A long import outlives gunicorn's timeout: the request returns at once, a worker runs it.

Served as docker-compose.yml serves it (gunicorn, DEBUG off, the django-tasks-db queue
and a ``db_worker`` process) with a worker timeout of a few seconds, an upload whose
import takes longer than that still completes, and its job says how it went.
"""

import json
import time
import uuid
from urllib.request import Request, urlopen

import pytest

from config.api.tokens import token_create
from judgements.models import Hit, Job, Project, Query
from tests.config.test_production import database_url, free_port, production_environment
from tests.factories import UserFactory
from tests.processes import start, stop, tail

# Short, so that the import outlasts it even on a fast machine; the app and its URLconf
# are loaded before the workers fork (--preload, tests/config/preloaded_wsgi.py), so that
# a worker's start and first imports do not count against it.
TIMEOUT = 3
# Queries of 100 hits each in the imported result list: enough that its import outlasts
# TIMEOUT on a fast machine too (100,000 hits took 2.4 s on one, and the test then
# showed nothing; 250,000 take about 6 s there).
QUERIES = 2500


@pytest.fixture
def served(tmp_path):
    """gunicorn with a short worker timeout and a task worker, both on the test database."""
    port = free_port()
    environment = production_environment(
        DATABASE_URL=database_url(), TASKS_BACKEND="database", UPLOAD_BACKGROUND_BYTES="1000000"
    )
    web = start(
        ["-m", "gunicorn", "tests.config.preloaded_wsgi:application", "--workers", "2",
         "--preload", "--timeout", str(TIMEOUT), "--bind", f"127.0.0.1:{port}"],
        environment,
        tmp_path / "web.log",
    )  # fmt: skip
    worker_command = ["manage.py", "db_worker", "--interval", "0.2", "--no-reload"]
    worker = start(worker_command, environment, tmp_path / "worker.log")
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert web.poll() is None, tail(web)
        try:
            urlopen(f"{base}/accounts/login/", timeout=5)
            break
        except OSError:
            time.sleep(0.2)
    yield base, worker
    for process in (worker, web):
        stop(process)


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    disposition = '--{}\r\nContent-Disposition: form-data; name="{}"\r\n\r\n{}\r\n'
    parts = [disposition.format(boundary, name, value).encode() for name, value in fields.items()]
    for name, (filename, content) in files.items():
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
            f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'
        )
        parts.append(head.encode() + content + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), boundary


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_import_longer_than_the_workers_timeout_completes_as_a_job(served):
    base, worker = served
    project = Project.objects.create(name="Catalogue", slug="catalogue")
    queries = Query.objects.bulk_create(
        Query(project=project, text=f"query {number}") for number in range(QUERIES)
    )
    token = token_create(user=UserFactory(username="charlie", roles=["analyst"]))
    # A result list of 250,000 hits: 8 MB, read in a moment, written in much longer.
    run = "".join(
        f"{query.pk} Q0 D{query.pk}-{rank} {rank} {1 / rank:.4f} big\n"
        for query in queries
        for rank in range(1, 101)
    ).encode()
    body, boundary = multipart({"format": "trec"}, {"file": ("big.run", run)})
    request = Request(
        f"{base}/api/projects/{project.slug}/result-lists/import/",
        data=body,
        headers={
            "Authorization": f"Token {token}",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
        },
    )
    sent = time.monotonic()
    with urlopen(request, timeout=60) as response:
        assert response.status == 202
        job = json.loads(response.read())
    assert time.monotonic() - sent < TIMEOUT
    assert job["status"] in ("queued", "running") and job["total"] == len(run)

    deadline = time.monotonic() + 600
    while job["status"] not in ("done", "failed") and time.monotonic() < deadline:
        assert worker.poll() is None, tail(worker)
        time.sleep(0.5)
        status = Request(base + job["url"], headers={"Authorization": f"Token {token}"})
        with urlopen(status, timeout=30) as response:
            job = json.loads(response.read())
    assert job["status"] == "done", job
    assert job["result"]["rows"] == job["result"]["created"] == QUERIES * 100
    assert Hit.objects.filter(result_list__project=project).count() == QUERIES * 100
    # It ran for longer than gunicorn lets a request run: in the request it would have died.
    assert Job.objects.get(pk=job["id"]).seconds > TIMEOUT
