"""The budgets of ``make bench`` in one table: each benchmark ``record``s its figures
(one line each in ``.bench/summary.tsv``), and ``make bench`` ends by running this file,
which prints them. ``--reset`` empties the file first (``make bench`` starts with it).

Two kinds of row. A budget is what a user feels (a page, a grade, an import), timed
over repeated runs: ``budget_record`` prints its median and p95 beside it. A peer ratio
holds the trec_eval-style command to the tools it stands beside (``record``). No row is
a ratio to our own code: those targets moved with the code they measured.

Run as ``.venv/bin/python tests/bench/summary.py [--reset]``.
"""

import os
import statistics
import sys
from pathlib import Path

SUMMARY = Path(__file__).resolve().parents[2] / ".bench" / "summary.tsv"

# The budgets of issue 37 and the peer ratios, by the start of the figure each benchmark
# records: one that no benchmark recorded (a peer missing, a benchmark not run) is
# listed as such.
EXPECTED_ROWS = {
    "any dashboard page, any parameters, now": "bench_budgets",
    "any page as of a past moment": "bench_budgets",
    "one list's recompute after a grade": "bench_budgets",
    "grade POST with its refresh": "bench_budgets",
    "next pair": "bench_queue",
    "1M-row Quepid import": "bench_export",
    "python -m metrics.core vs pytrec_eval reading the files, 10,000": "bench_metrics_core",
    "python -m metrics.core vs trec_eval, 10,000": "bench_metrics_core",
}


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def percentile(seconds: list[float], share: float) -> float:
    """The nearest-rank percentile of ``seconds``, in milliseconds."""
    ordered = sorted(seconds)
    return ordered[max(0, round(share * len(ordered)) - 1)] * 1000


def record(
    figure: str, value: str, target: str, met: bool, load: str = "", *, median: str = ""
) -> None:
    """Append one figure with its target to the summary (tab-separated): ``value`` is
    the figure the target is held to (a budget's p95, a peer ratio), ``median`` beside
    it where there is one."""
    SUMMARY.parent.mkdir(exist_ok=True)
    fields = [figure, median, value, target, "met" if met else "NOT met", load]
    with SUMMARY.open("a") as summary:
        summary.write("\t".join(field.replace("\t", " ") for field in fields) + "\n")


def budget_record(figure: str, seconds: list[float], budget_ms: float) -> bool:
    """Record a budget timed over ``seconds`` (one run each): its median and p95 against
    ``budget_ms``, which the p95 must meet. Returns whether it did."""
    median = statistics.median(seconds) * 1000
    p95 = percentile(seconds, 0.95)
    met = p95 <= budget_ms
    record(
        f"{figure} (n={len(seconds)})", f"{p95:.1f} ms", f"p95 <= {budget_ms:g} ms", met,
        load_average(), median=f"{median:.1f} ms",
    )  # fmt: skip
    return met


def main() -> None:
    if "--reset" in sys.argv:
        SUMMARY.unlink(missing_ok=True)
        return
    lines = SUMMARY.read_text().splitlines() if SUMMARY.exists() else []
    rows = [line.split("\t") for line in lines]
    print("\n== make bench: every budget and peer ratio ==")
    width = max([len("figure")] + [len(row[0]) for row in rows])
    print(
        f"{'figure':<{width}} | {'median':>10} | {'p95 / value':>11} | {'budget':<22} | "
        "met?    | load average"
    )
    for figure, median, value, target, met, load in rows:
        print(f"{figure:<{width}} | {median:>10} | {value:>11} | {target:<22} | {met:<7} | {load}")
    missed = sum(row[4] != "met" for row in rows)
    print(f"{len(rows) - missed} of {len(rows)} met.")
    for start, benchmark in EXPECTED_ROWS.items():
        if not any(row[0].startswith(start) for row in rows):
            print(f"Not measured: {start}... ({benchmark} recorded no such figure).")


if __name__ == "__main__":
    main()
