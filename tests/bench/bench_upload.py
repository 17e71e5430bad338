"""Benchmark large uploads through the background path: request time, job time, memory.

Run as ``.venv/bin/python tests/bench/bench_upload.py``. It is not a pytest test, and it
works on the development database. The app is served as docker-compose.yml serves it:
gunicorn (one sync worker, DEBUG off) with the django-tasks-db queue, and a
``db_worker`` process, both started on 127.0.0.1 in subprocesses. Documents files
(JSON Lines, 500 bytes a line) of 10, 50 and 200 MB are posted to the API's documents
import with a token, as a script would.

Reported per size: how long the request took (it stores the file in PostgreSQL and
queues the job, so it must stay far below gunicorn's 30 s timeout), how long the job
ran, and the peak resident set size (RSS) of the gunicorn worker and of the task worker,
from Linux's high-water mark (``VmHWM``). Target: memory flat, the 200 MB peaks within 50 MB of
the 10 MB peaks. The project "bench-upload" is deleted afterwards.
"""

import datetime as dt
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import psutil  # noqa: E402
from django.contrib.auth.models import Group, User  # noqa: E402
from django.db import connection  # noqa: E402

from judgements.api.tokens import token_create  # noqa: E402
from judgements.bulk import project_delete_fast  # noqa: E402
from judgements.models import Project  # noqa: E402
from judgements.roles import Role  # noqa: E402

SLUG = "bench-upload"
SIZES_MB = (10, 50, 200)
TARGET_MEMORY_MB = 50


def documents_file(folder: Path, megabytes: int) -> Path:
    path = folder / f"documents-{megabytes}.jsonl"
    padding = "a long description of a good tent " * 12
    written = number = 0
    with path.open("w") as out:
        while written < megabytes * 1_000_000:
            line = f'{{"id": "D{number}", "title": "Tent {number}", "snippet": "{padding}"}}\n'
            written += out.write(line)
            number += 1
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(folder: Path) -> tuple[str, list[subprocess.Popen]]:
    port = free_port()
    environment = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": "bench",
        "ALLOWED_HOSTS": "127.0.0.1",
        "TASKS_BACKEND": "database",
    }
    log = (folder / "servers.log").open("wb")
    web = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--workers", "1",
         "--bind", f"127.0.0.1:{port}"],
        cwd=REPOSITORY, env=environment, stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "db_worker", "--interval", "0.1", "--no-reload"],
        cwd=REPOSITORY, env=environment, stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{base}/api/", timeout=5)
        except urllib.error.HTTPError:
            return base, [web, worker]  # it answered (a 404 for no endpoint)
        except OSError:
            time.sleep(0.2)
    raise SystemExit("gunicorn did not start; see " + str(folder / "servers.log"))


def peak_rss(process: psutil.Process) -> float:
    """The peak resident set size, in MB, of a process and its children (gunicorn's
    worker), from Linux's own high-water mark (VmHWM): no sampling to miss a peak."""
    peaks = []
    for each in [process, *process.children(recursive=True)]:
        status = Path(f"/proc/{each.pid}/status").read_text()
        kilobytes = next(
            line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")
        )
        peaks.append(int(kilobytes) / 1024)
    return max(peaks)


def post_file(base: str, token: str, path: Path) -> tuple[dict, float]:
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="{path.name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
    ).encode()
    body = head + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(
        f"{base}/api/projects/{SLUG}/documents/import/",
        data=body,
        headers={
            "Authorization": f"Token {token}",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
        },
    )
    del body
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        job = json.loads(response.read())
    return job, time.perf_counter() - started


def wait_for(base: str, token: str, job: dict) -> dict:
    while job["status"] not in ("done", "failed"):
        time.sleep(0.5)
        request = urllib.request.Request(
            base + job["url"], headers={"Authorization": f"Token {token}"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            job = json.loads(response.read())
    return job


def moment(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def analyst_token() -> str:
    user, _ = User.objects.get_or_create(username="bench_analyst")
    user.groups.add(Group.objects.get(name=Role.ANALYST.value))
    return token_create(user=user)


def measure(folder: Path, token: str, megabytes: int) -> tuple[float, float, dict]:
    """Request seconds, job seconds and peak RSS by process, of one upload to fresh
    servers (a process keeps the memory an earlier, larger upload freed)."""
    path = documents_file(folder, megabytes)
    base, servers = serve(folder)
    web, worker = (psutil.Process(server.pid) for server in servers)
    try:
        job, request_seconds = post_file(base, token, path)
        job = wait_for(base, token, job)
        peaks = {"gunicorn": peak_rss(web), "task worker": peak_rss(worker)}
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=60)
    assert job["status"] == "done", job["errors"]
    seconds = (moment(job["finished_at"]) - moment(job["started_at"])).total_seconds()
    path.unlink()
    with connection.cursor() as cursor:
        project = Project.objects.get(slug=SLUG)
        cursor.execute("DELETE FROM judgements_document WHERE project_id = %s", [project.pk])
    return request_seconds, seconds, peaks


def main() -> None:
    project_delete_fast(SLUG)
    Project.objects.create(name="Upload benchmark", slug=SLUG)
    token = analyst_token()
    print(f"machine load (1, 5, 15 min): {os.getloadavg()}")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for megabytes in SIZES_MB:
            rows.append((megabytes, *measure(folder, token, megabytes)))
    project_delete_fast(SLUG)
    print(f"{'file':>8} {'request':>9} {'job':>9} {'gunicorn peak':>14} {'worker peak':>12}")
    for megabytes, request_seconds, seconds, peaks in rows:
        print(
            f"{megabytes:>5} MB {request_seconds:>8.2f}s {seconds:>8.1f}s "
            f"{peaks['gunicorn']:>11.0f} MB {peaks['task worker']:>9.0f} MB"
        )
    growth = {name: rows[-1][3][name] - rows[0][3][name] for name in ("gunicorn", "task worker")}
    flat = all(value <= TARGET_MEMORY_MB for value in growth.values())
    print(
        f"peak growth from {SIZES_MB[0]} to {SIZES_MB[-1]} MB: "
        + ", ".join(f"{name} {value:+.0f} MB" for name, value in growth.items())
        + f" (target within {TARGET_MEMORY_MB} MB: {'met' if flat else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
