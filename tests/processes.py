"""Server and worker processes that tests start on 127.0.0.1, and stop."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start(command: list[str], environment: dict, log: Path) -> subprocess.Popen:
    """``python command`` in the project folder, its output in ``log``.

    The log goes to a file: a pipe nobody reads fills up and stops the process.
    """
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, *command],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=output,
        )
    process.log = log
    return process


def tail(process: subprocess.Popen) -> str:
    return process.log.read_text(errors="replace")[-3000:]


def stop(process: subprocess.Popen) -> None:
    """Stop a server or worker; a second signal ends a task the worker is still running."""
    for _ in range(2):
        process.terminate()
        try:
            process.wait(timeout=15)
            return
        except subprocess.TimeoutExpired:
            continue
    process.kill()
    process.wait()
