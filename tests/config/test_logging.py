"""What the development server prints: each line once, and no traceback for a refusal."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from tests.config.test_production import ROOT, Browser, database_url, free_port
from tests.factories import UserFactory


@pytest.fixture
def runserver():
    """``manage.py runserver`` as ``make run`` starts it (DEBUG on), on the test database;
    yields its address and a function that stops it and returns what it printed."""
    port = free_port()
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "DEBUG": "1",
        "DATABASE_URL": database_url(),
        "PYTHONUNBUFFERED": "1",
    }
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )

    printed: list[str] = []
    reader = threading.Thread(target=lambda: printed.extend(server.stdout), daemon=True)
    reader.start()

    def stop(after: str = "") -> str:
        """Stop the server, once it has printed ``after`` (it logs a request after
        sending the response, so a loaded machine may not have logged it yet)."""
        deadline = time.monotonic() + 10
        while after and after not in "".join(printed) and time.monotonic() < deadline:
            time.sleep(0.05)
        server.terminate()
        server.wait(timeout=10)
        reader.join(timeout=10)
        return "".join(printed)

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert server.poll() is None, stop()
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}", stop
    if server.poll() is None:
        stop()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_development_server_logs_a_403_once_and_without_a_traceback(runserver):
    # dave has an account and no role: a dashboard answers him 403.
    dave = UserFactory(username="dave")
    hasher = PBKDF2PasswordHasher()  # The server keeps Django's hashers, not the suite's MD5.
    dave.password = hasher.encode("relevance", hasher.salt())
    dave.save()
    address, stop = runserver
    browser = Browser(address)
    browser.log_in("dave")
    assert browser.get("/metrics/")[0] == 403

    log = stop(after='"GET /metrics/ HTTP/1.1" 403')
    lines = [line for line in log.splitlines() if line.strip()]
    assert log.count("Forbidden (Permission denied): /metrics/") == 1, log
    assert "Traceback" not in log
    assert '"GET /metrics/ HTTP/1.1" 403' in log
    assert len(lines) == len(set(lines)), log
