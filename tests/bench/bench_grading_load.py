"""Benchmark raters grading through the API against gunicorn, at 1, 10 and 50 at once.

Run as ``.venv/bin/python tests/bench/bench_grading_load.py [--seconds 20]``. It is not
a pytest test, and it works on the development database: when the project
"bench-grading" is missing it is built first with ``generate_load --slug bench-grading
--queries 2000 --hits-per-query 20 --judgements 10000`` and given ``judges_per_pair``
3, so that about 60k slots stay open for the graders.

The app is served as docker-compose.yml serves it: gunicorn with the compose file's
worker count and timeout, DEBUG off, the database task queue (each grade enqueues a
metrics refresh; no worker runs, as the web service's share of the work is what is
measured). Fifty users "bench_grader_NN" with the rater role sign in with API tokens.
Each simulated rater loops: ``GET /api/projects/bench-grading/next/`` (lease the next
pair), then ``POST /api/judgements/create/`` with a grade for it; one grade is that
round trip, and its latency is the two calls together. Each client is a thread with
its own connection, on this machine. The token rate limit is raised so that it never
refuses a call, but it is still checked (and costs what it costs) on every call.

Before the runs, the graders' current answers from earlier runs are retracted, so
every run starts from the same queue, and the server is warmed up (untimed): rounds
of API calls, two per worker at once, until a round's slowest call takes under a
second, since gunicorn opens its port before its workers have loaded Django. After
each level, the stored events are counted against the 201 answers: every grade
stored exactly once. The "409s" column counts grades of handed pairs the
judges_per_pair rule refused, which should be none: the rater's lease holds a slot
on the pair.

Where the time goes: for each level, the CPU time per grade stored of the web server
(gunicorn's processes), the database server (PostgreSQL's), the simulated raters (this
process) and the rest of the machine (other work on it), read from /proc.

``--profile`` also runs 200 grades of one rater in this process through Django's test
client (the whole middleware stack, DEBUG off) under cProfile, and prints where the
time goes: the functions with the most cumulative time and the SQL per call.

Target (issue 12): at 50 raters, at least 50 grades/s with p95 at most 1 s.
"""

import argparse
import cProfile
import http.client
import itertools
import json
import os
import pstats
import random
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["DEBUG"] = "False"
os.environ.setdefault("SECRET_KEY", "bench-only-not-secret-" * 3)
os.environ["TASKS_BACKEND"] = "database"
# High enough never to refuse, so that the limit is checked on every call but the
# benchmark measures grading, not the limit.
os.environ["API_THROTTLE_TOKEN"] = "1000000/minute"

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from helpers import raters_named  # noqa: E402

from judgements.models import Judgement, Project, QueueLease  # noqa: E402

SLUG = "bench-grading"
GRADERS = 50
LEVELS = (1, 10, 50)
TARGET_RATE = 50.0
TARGET_P95 = 1.0


def bench_project() -> Project:
    project = Project.objects.filter(slug=SLUG).first()
    if project is None:
        print("Building the bench project (about a minute) ...", flush=True)
        call_command(
            "generate_load", slug=SLUG, queries=2_000, hits_per_query=20, judgements=10_000
        )
        project = Project.objects.get(slug=SLUG)
    if project.judges_per_pair != 3:
        project.judges_per_pair = 3
        project.save(update_fields=["judges_per_pair"])
    return project


def api_token(user: User) -> str:
    """A new API token for ``user`` (their earlier ones are revoked)."""
    from config.api import tokens

    return tokens.token_create(user=user)


def answers_retract(users: list[User], project: Project) -> int:
    """Retract the graders' current answers, reopening their pairs for the next run."""
    current = (
        Judgement.objects.for_project(project)
        .filter(rater__in=users)
        .exclude(kind=Judgement.Kind.RETRACT)
        .still_current()
        .values_list("query_id", "document_id", "rater_id")
    )
    retractions = [
        Judgement(
            query_id=query_id,
            document_id=document_id,
            rater_id=rater_id,
            kind=Judgement.Kind.RETRACT,
            grade=None,
        )
        for query_id, document_id, rater_id in current
    ]
    QueueLease.objects.filter(rater__in=users).delete()
    return len(Judgement.objects.bulk_create(retractions))


def database_url() -> str:
    db = connection.settings_dict
    user = quote(db["USER"] or "")
    password = quote(db["PASSWORD"] or "")
    credentials = f"{user}:{password}@" if user else ""
    host = db["HOST"] or ""
    if host.startswith("/"):
        return f"postgresql://{credentials}/{quote(db['NAME'])}?host={quote(host)}"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgresql://{credentials}{host}{port}/{quote(db['NAME'])}"


def _workers(options: list[str]) -> int:
    """The worker count the options give gunicorn (the last --workers wins)."""
    counts = [int(value) for name, value in itertools.pairwise(options) if name == "--workers"]
    return counts[-1] if counts else 1


def compose_gunicorn_options() -> list[str]:
    """The web service's gunicorn options (workers, timeout) from docker-compose.yml."""
    compose = (REPOSITORY / "docker-compose.yml").read_text()
    options = []
    for name in ("workers", "timeout"):
        found = re.search(rf"--{name}[ =](\d+)", compose)
        if found:
            options += [f"--{name}", found[1]]
    return options


def gunicorn_start(port: int, options: list[str]) -> subprocess.Popen:
    environment = {
        **os.environ,
        "DEBUG": "0",
        "DATABASE_URL": database_url(),
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", *options]
    server = subprocess.Popen(
        [*command, "--bind", f"127.0.0.1:{port}"],
        cwd=REPOSITORY,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(server.stderr.read().decode()[-2000:])
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return server
        time.sleep(0.1)
    server.kill()
    raise SystemExit("gunicorn did not start in 30 s")


def warm_up(port: int, token: str, workers: int) -> int:
    """Send rounds of ``2 x workers`` API calls at once until a round's slowest call
    takes under a second, so that every worker has booted (gunicorn opens the port
    before its workers have loaded Django) and each has its database connection.
    Returns the rounds sent."""
    headers = {"Authorization": f"Token {token}"}

    def call(_) -> float:
        started = time.perf_counter()
        client = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            client.request("GET", "/api/projects/", headers=headers)
            client.getresponse().read()
        finally:
            client.close()
        return time.perf_counter() - started

    with ThreadPoolExecutor(max_workers=2 * workers) as pool:
        for rounds in range(1, 61):
            if max(pool.map(call, range(2 * workers))) < 1.0:
                return rounds
    raise SystemExit("gunicorn's workers were still slow after 60 rounds of warm-up calls")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Rater(threading.Thread):
    """One rater's loop: next pair, grade it, until the deadline."""

    def __init__(self, port: int, token: str, deadline: float, seed: int):
        super().__init__(daemon=True)
        self.port, self.deadline = port, deadline
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.random = random.Random(seed)
        self.grades: list[float] = []  # seconds per grade (next + create)
        self.calls: list[float] = []  # seconds per call
        self.errors: list[str] = []
        self.created: list[int] = []
        self.exhausted = False

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            payload = json.dumps(body) if body is not None else None
            connection.request(method, path, payload, self.headers)
            response = connection.getresponse()
            content = response.read()
        finally:
            connection.close()
        self.calls.append(time.perf_counter() - started)
        return response.status, content

    def run(self) -> None:
        while time.perf_counter() < self.deadline:
            started = time.perf_counter()
            status, content = self.call("GET", f"/api/projects/{SLUG}/next/")
            if status == 204:
                self.exhausted = True
                return
            if status != 200:
                self.errors.append(f"next: {status} {content[:200]!r}")
                continue
            pair = json.loads(content)
            body = {
                "query": pair["query"]["id"],
                "document": pair["document"]["id"],
                "grade": self.random.randint(0, 3),
            }
            status, content = self.call("POST", "/api/judgements/create/", body)
            if status != 201:
                self.errors.append(f"create: {status} {content[:200]!r}")
                continue
            self.created.append(json.loads(content)["id"])
            self.grades.append(time.perf_counter() - started)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # the process ended
        return None
    return text.rsplit(")", 1)[1].split()


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if (
            entry.name.isdigit()
            and (fields := _stat(int(entry.name)))
            and int(fields[1]) == parent
        ):
            found.append(int(entry.name))
    return found


def _cpu(pids: list[int]) -> dict[int, float]:
    """CPU seconds (user and system) each process has used so far."""
    return {pid: (int(f[11]) + int(f[12])) / TICK for pid in pids if (f := _stat(pid))}


def _machine_busy() -> float:
    """CPU seconds every core of the machine has spent busy so far (not idle or waiting)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / TICK


class CpuShares:
    """Where the CPU went during a level: the web server (gunicorn's processes), the
    database server (all of PostgreSQL's processes), the simulated raters (this
    process) and everything else on the machine (other work, the benchmark's own
    checks aside), read from /proc before and after. Processes are counted one by one,
    so that one that ends meanwhile (the benchmark's own database connection) takes
    nothing away; one that starts counts from zero."""

    def __init__(self, server_pid: int):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (backend,) = cursor.fetchone()
        self.server_pid, self.postmaster = server_pid, int(_stat(backend)[1])

    def sample(self) -> dict:
        web = [self.server_pid, *_children(self.server_pid)]
        database = [self.postmaster, *_children(self.postmaster)]
        times = os.times()
        return {
            "web": _cpu(web),
            "database": _cpu(database),
            "raters": times.user + times.system,
            "machine": _machine_busy(),
        }

    @staticmethod
    def per_grade(before: dict, after: dict, grades: int) -> dict[str, float]:
        """Milliseconds of CPU per grade stored, by part; "other" is the rest of the
        machine's busy time."""
        spent = {
            part: sum(seconds - before[part].get(pid, 0) for pid, seconds in after[part].items())
            if isinstance(after[part], dict)
            else after[part] - before[part]
            for part in before
        }
        spent["other"] = spent.pop("machine") - spent["web"] - spent["database"] - spent["raters"]
        return {part: seconds * 1000 / max(grades, 1) for part, seconds in spent.items()}


def run_level(port: int, tokens: list[str], raters: int, seconds: float, cpu: CpuShares) -> dict:
    before = Judgement.objects.filter(source=Judgement.Source.API).count()
    cpu_before = cpu.sample()
    started = time.perf_counter()
    threads = [Rater(port, tokens[n], started + seconds, seed=n) for n in range(raters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    cpu_after = cpu.sample()
    grades = [value for thread in threads for value in thread.grades]
    calls = [value for thread in threads for value in thread.calls]
    created = [value for thread in threads for value in thread.created]
    stored = Judgement.objects.filter(source=Judgement.Source.API).count() - before
    errors = [error for thread in threads for error in thread.errors]
    return {
        "raters": raters,
        "grades": len(grades),
        "cpu": CpuShares.per_grade(cpu_before, cpu_after, len(grades)),
        "rate": len(grades) / elapsed,
        "p50": statistics.median(grades),
        "p95": p95(grades),
        "call_p95": p95(calls),
        "stored_once": stored == len(created) == len(set(created)),
        "errors": errors,
        "refused": sum(error.startswith("create: 409") for error in errors),
        "exhausted": any(thread.exhausted for thread in threads),
    }


def profile(users: list[User], project: Project, grades: int = 200) -> None:
    """Where one rater's grade spends its time, in process, DEBUG off."""
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Token {api_token(users[0])}", HTTP_HOST="127.0.0.1")
    path = f"/api/projects/{SLUG}/next/"

    def grade_once(capture: list | None = None) -> None:
        with CaptureQueriesContext(connection) as queries:
            pair = client.get(path).json()
        body = {"query": pair["query"]["id"], "document": pair["document"]["id"], "grade": 2}
        with CaptureQueriesContext(connection) as created:
            client.post("/api/judgements/create/", body, content_type="application/json")
        if capture is not None:
            capture += [("next", queries.captured_queries), ("create", created.captured_queries)]

    for _ in range(20):  # warm up: imports, caches, connections
        grade_once()
    captured: list = []
    grade_once(captured)
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for _ in range(grades):
        grade_once()
    profiler.disable()
    elapsed = time.perf_counter() - started
    print(f"\nIn process, one rater: {elapsed / grades * 1000:.1f} ms per grade (next + create)")
    for name, queries in captured:
        print(f"  {name}: {len(queries)} SQL statements")
        for query in queries:
            print(f"    {float(query['time']) * 1000:6.2f} ms  {query['sql'][:110]}")
    stats = pstats.Stats(profiler).sort_stats("cumulative")
    stats.print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="per concurrency level")
    parser.add_argument("--workers", type=int, help="gunicorn workers (default: compose's)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    project = bench_project()
    users = raters_named("bench_grader_", GRADERS)
    retracted = answers_retract(users, project)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    tokens = [api_token(user) for user in users]
    options = compose_gunicorn_options()
    if args.workers:
        options = [*options, "--workers", str(args.workers)]
    print(f"Load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    print(f"gunicorn {' '.join(options)}; {retracted} earlier answers retracted")
    port = free_port()
    server = gunicorn_start(port, options)
    workers = _workers(options)
    print(f"warm-up: {warm_up(port, tokens[0], workers)} round(s) of {2 * workers} calls")
    cpu = CpuShares(server.pid)
    results = []
    try:
        for raters in LEVELS:
            results.append(run_level(port, tokens, raters, args.seconds, cpu))
            connection.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"Load average after: {os.getloadavg()[0]:.2f}")
    print(f"{'raters':>6} {'grades':>7} {'grades/s':>9} {'p50 ms':>7} {'p95 ms':>7} "
          f"{'call p95':>8} {'409s':>5}  once")  # fmt: skip
    for row in results:
        print(
            f"{row['raters']:>6} {row['grades']:>7} {row['rate']:>9.1f} {row['p50'] * 1000:>7.0f}"
            f" {row['p95'] * 1000:>7.0f} {row['call_p95'] * 1000:>8.0f} {row['refused']:>5}"
            f"  {row['stored_once']}"
        )
        for error in row["errors"][:5]:
            print(f"       error: {error}")
        if row["exhausted"]:
            print("       the queue ran out of pairs")
    print("CPU per grade stored, in ms: web server (gunicorn), database (PostgreSQL), the")
    print("simulated raters (this process) and the rest of the machine (other work):")
    for row in results:
        shares = "  ".join(f"{part} {ms:5.1f}" for part, ms in row["cpu"].items())
        print(f"{row['raters']:>6} raters: {shares}")
    top = results[-1]
    met = top["rate"] >= TARGET_RATE and top["p95"] <= TARGET_P95
    print(
        f"Target at {top['raters']} raters: >= {TARGET_RATE:.0f} grades/s and p95 <= "
        f"{TARGET_P95:.0f} s: {'met' if met else 'NOT met'}"
    )
    if args.profile:
        answers_retract(users, project)
        profile(users, project)


if __name__ == "__main__":
    main()
