"""Time imports at scale: Cranfield as published, and a generated 10k-query run and qrels.

Run as ``.venv/bin/python tests/bench/bench_import.py``. Works on the development
database: each run creates a project of its own and deletes it at the end. The
queries file maps each TREC qid to its query (``--queries``), which both older and
newer importers read. Prints seconds per step and rows per second.
"""

import importlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path

# A path argument times another checkout (an older commit) with this script.
REPOSITORY = Path(__file__).resolve().parents[2] if len(sys.argv) < 2 else Path(sys.argv[1])
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()


from django.db import transaction  # noqa: E402

from judgements import bulk  # noqa: E402

try:
    from judgements import imports
except ImportError:  # an older checkout, before the import services moved
    from judgements import services as imports
from judgements.models import Document, Project  # noqa: E402

CRANFIELD = next(
    folder / "shared" / "datasets" / "cranfield"
    for folder in (*REPOSITORY.parents, *Path(__file__).resolve().parents)
    if (folder / "shared" / "datasets" / "cranfield").is_dir()
)
QUERIES = int(os.environ.get("BENCH_QUERIES", 10_000))  # smaller for a quick comparison
HITS, JUDGED = 100, 10


def chunks(path: Path):
    with path.open("rb") as upload:
        yield from iter(lambda: upload.read(1 << 20), b"")


def timed(label: str, rows: int, call):
    started = time.perf_counter()
    call()
    seconds = time.perf_counter() - started
    print(f"{label:<34} {rows:>9,} rows {seconds:7.2f} s {rows / seconds:>10,.0f} rows/s")


def fresh(slug: str) -> Project:
    drop(slug)
    return Project.objects.create(slug=slug, name=slug)


@transaction.atomic
def drop(slug: str) -> None:
    # Set-based: Project.delete() collects a million hits in Python first.
    bulk.skip_foreign_key_checks()
    bulk.project_delete_fast(slug)


def cranfield() -> None:
    project = fresh("bench-cranfield")
    queries = CRANFIELD / "queries.csv"
    timed(
        "cranfield queries",
        225,
        lambda: imports.query_import(project=project, upload=chunks(queries), file_format="csv"),
    )
    timed(
        "cranfield documents",
        1400,
        lambda: imports.document_import(
            project=project, upload=chunks(CRANFIELD / "documents.jsonl")
        ),
    )
    timed(
        "cranfield qrels",
        1837,
        lambda: imports.judgement_import(
            project=project,
            upload=chunks(CRANFIELD / "qrels.txt"),
            file_format="qrels",
            uploaded_by=None,
            query_map=chunks(queries),
        ),
    )
    drop(project.slug)


def generated(folder: Path) -> None:
    rng = random.Random(7)
    queries, run, qrels = folder / "q.csv", folder / "run.txt", folder / "qrels.txt"
    queries.write_text("id,text\n" + "".join(f"Q{n},query {n}\n" for n in range(QUERIES)))
    with run.open("w") as out:
        for n in range(QUERIES):
            for rank in range(1, HITS + 1):
                score = round(rng.random() * 10, 1)  # one decimal: many ties
                out.write(f"Q{n} Q0 D{rng.randrange(10**6):07d}-{rank} {rank} {score} bench\n")
    with qrels.open("w") as out:
        for n in range(QUERIES):
            for rank in range(1, JUDGED + 1):
                out.write(f"Q{n} 0 D{n:07d}-{rank} {rng.randrange(4)}\n")
    project = fresh("bench-generated")
    timed(
        f"{QUERIES:,} queries",
        QUERIES,
        lambda: imports.query_import(project=project, upload=chunks(queries), file_format="csv"),
    )
    timed(
        f"{QUERIES:,}-query run",
        QUERIES * HITS,
        lambda: imports.result_list_import(
            project=project, upload=chunks(run), file_format="trec", query_map=chunks(queries)
        ),
    )
    Document.objects.bulk_create(
        [
            Document(project=project, external_id=f"D{n:07d}-{r}")
            for n in range(QUERIES)
            for r in range(1, JUDGED + 1)
        ],
        ignore_conflicts=True,
        batch_size=20_000,
    )
    timed(
        f"{QUERIES:,}-query qrels",
        QUERIES * JUDGED,
        lambda: imports.judgement_import(
            project=project,
            upload=chunks(qrels),
            file_format="qrels",
            uploaded_by=None,
            query_map=chunks(queries),
        ),
    )
    drop(project.slug)


if __name__ == "__main__":
    # The metrics refresh is a task of its own, timed apart.
    for name in ("services", "imports", "imports.result_lists", "imports.events"):
        try:
            module = importlib.import_module(f"judgements.{name}")
        except ImportError:  # an older checkout
            continue
        module.metrics_schedule_refresh = lambda **kwargs: None
    cranfield()
    with tempfile.TemporaryDirectory() as folder:
        generated(Path(folder))
