"""Where trec_eval's own test data lives, and how to run the command in-process."""

import contextlib
import io
from pathlib import Path

from metrics.core.cli import main
from tests.shared import TREC_EVAL as TREC_EVAL_TEST  # noqa: F401 (imported by the tests)

REPOSITORY = Path(__file__).resolve().parents[3]


def run_command(*args):
    """Run ``python -m metrics.core`` in-process; return (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(a) for a in args])
        except SystemExit as exit_:
            status = exit_.code
    return status, out.getvalue(), err.getvalue()
