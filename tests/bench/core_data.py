"""Synthetic result lists for the metrics.core benchmark, and their peer and file forms."""

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from metrics.core import offsets_from_lengths
from metrics.core.trec import TrecColumns

POOL = 200  # Candidate documents per query: d0 .. d199.
GRADE_SHARES = (0.5, 0.25, 0.15, 0.10)  # Shares of grades 0, 1, 2 and 3.


@dataclass(frozen=True)
class Collection:
    """Per query: ``hits`` ranked documents with distinct scores, ``judged`` graded documents."""

    qids: list[str]
    run_docs: np.ndarray  # (n_queries, hits) document numbers, in rank order
    scores: np.ndarray  # (n_queries, hits), strictly decreasing along each row
    judged_docs: np.ndarray  # (n_queries, judged)
    grades: np.ndarray  # (n_queries, judged) integer grades 0-3


def generate(
    n_queries: int, *, hits: int = 100, judged: int = 50, seed: int = 20240
) -> Collection:
    """Draw a collection with a fixed seed (about a quarter of the hits are judged)."""
    rng = np.random.default_rng(seed)
    run_docs = np.argsort(rng.random((n_queries, POOL)), axis=1)[:, :hits]
    judged_docs = np.argsort(rng.random((n_queries, POOL)), axis=1)[:, :judged]
    grades = rng.choice(4, size=(n_queries, judged), p=GRADE_SHARES)
    # Distinct, decreasing scores, so every tool ranks the hits the same way.
    scores = np.round(100.0 - np.arange(hits) - rng.random((n_queries, hits)) * 0.5, 6)
    qids = [f"q{q}" for q in range(n_queries)]
    return Collection(qids, run_docs, scores, judged_docs, grades)


def our_arrays(c: Collection) -> dict[str, np.ndarray]:
    """The batch engine's inputs: flat ranked grades (NaN unjudged) and judged grades."""
    n_queries, hits = c.run_docs.shape
    table = np.full((n_queries, POOL), np.nan)
    np.put_along_axis(table, c.judged_docs, c.grades.astype(float), axis=1)
    ranked = np.take_along_axis(table, c.run_docs, axis=1).ravel()
    judged = c.grades.astype(float).ravel()
    return {
        "ranked": ranked,
        "offsets": offsets_from_lengths(np.full(n_queries, hits)),
        "judged": judged,
        "judged_offsets": offsets_from_lengths(np.full(n_queries, c.grades.shape[1])),
    }


def our_columns(c: Collection) -> tuple[TrecColumns, TrecColumns]:
    """The (qid, docno, value) columns a parsed qrels and run file would give."""
    qids = np.array(c.qids, dtype="S")
    names = np.array([f"d{d}" for d in range(POOL)], dtype="S")
    hits, judged = c.run_docs.shape[1], c.judged_docs.shape[1]
    run = TrecColumns(
        "<run>",
        np.repeat(qids, hits),
        names[c.run_docs.ravel()],
        c.scores.ravel(),
        np.arange(1, c.run_docs.size + 1),
    )
    qrels = TrecColumns(
        "<qrels>",
        np.repeat(qids, judged),
        names[c.judged_docs.ravel()],
        c.grades.ravel().astype(float),
        np.arange(1, c.judged_docs.size + 1),
    )
    return qrels, run


def peer_dicts(c: Collection) -> tuple[dict, dict]:
    """``{qid: {docno: grade}}`` and ``{qid: {docno: score}}``, as the peers take them."""
    names = [f"d{d}" for d in range(POOL)]
    qrels = {
        qid: {names[d]: int(g) for d, g in zip(docs, grades, strict=True)}
        for qid, docs, grades in zip(
            c.qids, c.judged_docs.tolist(), c.grades.tolist(), strict=True
        )
    }
    run = {
        qid: {names[d]: s for d, s in zip(docs, scores, strict=True)}
        for qid, docs, scores in zip(c.qids, c.run_docs.tolist(), c.scores.tolist(), strict=True)
    }
    return qrels, run


def write_trec_files(c: Collection, folder: Path) -> tuple[Path, Path]:
    """Write the collection as a TREC qrels file and a TREC run file."""
    qrels_path, run_path = folder / "qrels.txt", folder / "run.txt"
    with qrels_path.open("w") as out:
        for qid, docs, grades in zip(
            c.qids, c.judged_docs.tolist(), c.grades.tolist(), strict=True
        ):
            out.writelines(f"{qid} 0 d{d} {g}\n" for d, g in zip(docs, grades, strict=True))
    with run_path.open("w") as out:
        for qid, docs, scores in zip(c.qids, c.run_docs.tolist(), c.scores.tolist(), strict=True):
            out.writelines(
                f"{qid} Q0 d{d} {r} {s:.6f} bench\n"
                for r, (d, s) in enumerate(zip(docs, scores, strict=True), start=1)
            )
    return qrels_path, run_path


def timed(function, repeat: int = 1):
    """Run ``function`` ``repeat`` times; return (its last result, the fastest time in s)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return result, best
