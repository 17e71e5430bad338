"""The targets of ``make bench`` in one table: each benchmark ``record``s its figures
(one line each in ``.bench/summary.tsv``), and ``make bench`` ends by running this file,
which prints them. ``--reset`` empties the file first (``make bench`` starts with it).

Run as ``.venv/bin/python tests/bench/summary.py [--reset]``.
"""

import os
import sys
from pathlib import Path

SUMMARY = Path(__file__).resolve().parents[2] / ".bench" / "summary.tsv"


# The rows of issue 18's table, by the start of the figure each benchmark records: one
# that no benchmark recorded (a peer missing, a benchmark not run) is listed as such.
ISSUE_18_ROWS = {
    "python -m metrics.core vs pytrec_eval reading the files, 10,000": "bench_metrics_core",
    "python -m metrics.core vs trec_eval, 10,000": "bench_metrics_core",
    "overview @5 page": "bench_dashboards",
    "overview as of page": "bench_dashboards",
    "search-log ingest": "bench_searchlogs",
    "import of": "bench_export",
    "grade POST p95 with its refresh": "bench_scaling",
}


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def record(figure: str, value: str, target: str, met: bool, load: str = "") -> None:
    """Append one figure with its target to the summary (tab-separated)."""
    SUMMARY.parent.mkdir(exist_ok=True)
    fields = [figure, value, target, "met" if met else "NOT met", load]
    with SUMMARY.open("a") as summary:
        summary.write("\t".join(field.replace("\t", " ") for field in fields) + "\n")


def main() -> None:
    if "--reset" in sys.argv:
        SUMMARY.unlink(missing_ok=True)
        return
    lines = SUMMARY.read_text().splitlines() if SUMMARY.exists() else []
    rows = [line.split("\t") for line in lines]
    print("\n== make bench: every figure against its target ==")
    width = max([len("figure")] + [len(row[0]) for row in rows])
    print(f"{'figure':<{width}} | {'value':>10} | {'target':<22} | met?    | load average")
    for figure, value, target, met, load in rows:
        print(f"{figure:<{width}} | {value:>10} | {target:<22} | {met:<7} | {load}")
    missed = sum(row[3] != "met" for row in rows)
    print(f"{len(rows) - missed} of {len(rows)} targets met.")
    for start, benchmark in ISSUE_18_ROWS.items():
        if not any(row[0].startswith(start) for row in rows):
            print(f"Not measured: {start}... ({benchmark} recorded no such figure).")


if __name__ == "__main__":
    main()
