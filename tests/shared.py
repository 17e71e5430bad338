"""Where the read-only shared material (../shared) is, from a clone or a worktree."""

from pathlib import Path

SHARED = next(
    (
        folder / "shared"
        for folder in Path(__file__).resolve().parents
        if (folder / "shared" / "trec_eval_test").is_dir()
    ),
    Path(__file__).resolve().parents[2] / "shared",
)
CRANFIELD = SHARED / "datasets" / "cranfield"
TREC_EVAL = SHARED / "trec_eval_test"
