"""The README's empty-install path (issue 42, point 8): `make setup` and `make serve` never
load the demo, `make run` still does, and the README names the gain difference."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def planned(target: str) -> str:
    """The commands `make` would run for ``target`` (a dry run: nothing is run)."""
    done = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_make_setup_migrates_without_the_demo():
    commands = planned("setup")
    assert "manage.py migrate --no-input" in commands
    assert "load_demo" not in commands
    assert "runserver" not in commands


def test_make_serve_serves_without_the_demo_and_make_run_loads_it():
    assert "runserver" in planned("serve")
    assert "load_demo" not in planned("serve")
    run = planned("run")
    assert run.index("migrate") < run.index("load_demo") < run.index("runserver")


def test_the_readme_names_the_empty_install_and_the_gain_difference():
    readme = (ROOT / "README.md").read_text()
    assert "make setup" in readme and "make serve" in readme
    assert "`2^grade - 1`" in readme and "linear gain" in readme
    assert "`gain=linear`" in readme and "agree with trec_eval" in readme
