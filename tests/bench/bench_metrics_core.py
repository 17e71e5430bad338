"""Benchmark metrics.core against ranx, pytrec_eval, ir_measures and the trec_eval binary.

Run as ``.venv/bin/python tests/bench/bench_metrics_core.py [--sizes 10000,100000]``
(``make bench``). It is not a pytest test. For each size it draws, with a
fixed seed, that many queries of 100 ranked hits and 50 graded judgements
(grades 0-3), then times, in one process:

- the batch engine (``ndcg_batch``) on flat arrays, against each peer's
  evaluation call on its own in-memory structures; building every tool's
  inputs and ranx's numba warm-up are timed and printed apart;
- ``python -m metrics.core`` on TREC files against the trec_eval binary and
  the ir_measures command.

Values are checked equal to 1e-12 (per query against pytrec_eval, the mean
against ranx and ir_measures). All timings are the fastest of several warm
runs. Linear gain is used throughout, since that is what every peer computes.
"""

import argparse
import compileall
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parents[1]
sys.path[:0] = [str(REPOSITORY), str(HERE)]

from core_data import generate, our_arrays, our_columns, peer_dicts, timed, write_trec_files  # noqa: E402
from core_peers import (  # noqa: E402
    IN_MEMORY_PEERS,
    PeerUnavailable,
    all_value,
    find_trec_eval,
    run_command,
    temporary_folder,
)
from summary import load_average, record  # noqa: E402

from metrics.core import grade_counts, ndcg_batch  # noqa: E402
from metrics.core.ranking import rank_queries  # noqa: E402

SPEED_TARGET = 10  # The batch engine must be this many times faster than the fastest peer.
CLI_TARGET = 5  # The command against trec_eval and pytrec_eval on the same files (issue 18).
CLI_TARGET_AT_100K = 20  # The command must beat trec_eval by this factor at 100k queries.
MEASURES = ("ndcg", "ndcg_cut.10")
COMMAND_RUNS = 3
START_UP = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
}
TOLERANCE = 1e-12
OUR_REPEATS = 15


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="query counts, comma separated")
    parser.add_argument("--trec-eval", help="path of a trec_eval binary")
    parser.add_argument("--skip-trec-eval-at", default="", help="sizes at which to skip trec_eval")
    parser.add_argument("--cli-timeout", type=float, default=180.0, help="seconds per command")
    args = parser.parse_args()
    skip = {int(s) for s in args.skip_trec_eval_at.split(",") if s}
    _compile_bytecode()
    with temporary_folder() as work:
        trec_eval = _trec_eval(args.trec_eval, Path(work))
        for size in (int(s) for s in args.sizes.split(",")):
            _bench_size(size, Path(work), None if size in skip else trec_eval, args.cli_timeout)
    return 0


def _trec_eval(explicit: str | None, work: Path) -> Path | None:
    try:
        binary, origin = find_trec_eval(explicit, work)
    except PeerUnavailable as reason:
        print(f"trec_eval binary: skipped: {reason}")
        return None
    print(f"trec_eval binary: {origin}")
    return binary


def _bench_size(size: int, work: Path, trec_eval: Path | None, cli_timeout: float) -> None:
    repeat = 5 if size <= 20_000 else 3
    print(f"\n== {size:,} queries x 100 hits, 50 graded judgements each (grades 0-3) ==")
    collection, seconds = timed(lambda: generate(size))
    print(f"data generation {seconds:.2f} s")
    arrays, ours_build = timed(lambda: our_arrays(collection))
    (qrels, run), dict_build = timed(lambda: peer_dicts(collection))
    columns, columns_build = timed(lambda: our_columns(collection))
    print(
        f"input building (apart): our flat arrays {ours_build:.3f} s, our (qid, docno, value) "
        f"columns {columns_build:.3f} s, the peers' dicts {dict_build:.2f} s"
    )
    for k in (10, None):
        _bench_in_memory(collection.qids, arrays, columns, qrels, run, k, repeat)
    del qrels, run
    _bench_command(collection, work, trec_eval, cli_timeout, size)


def _bench_in_memory(qids, arrays, columns, qrels, run, k, repeat) -> None:
    label = "full NDCG" if k is None else f"NDCG@{k}"
    print(f"\n{label} (linear gain, log2 discount, ideal from all judged documents)")
    grades = {"ideal_grades": arrays["judged"], "ideal_offsets": arrays["judged_offsets"]}

    def batch(**ideal):
        return ndcg_batch(arrays["ranked"], arrays["offsets"], k=k, gain="linear", **ideal)

    # The engine's calls are short, so more of them are timed: on a shared
    # machine the fastest of many is the one least disturbed by other work.
    ours, ours_s = timed(lambda: batch(**grades), OUR_REPEATS)
    counts, counts_s = timed(
        lambda: grade_counts(arrays["judged"], arrays["judged_offsets"]), OUR_REPEATS
    )
    _, from_counts_s = timed(lambda: batch(ideal_counts=counts), OUR_REPEATS)
    _, joined_s = timed(lambda: _from_columns(columns, k), repeat)
    print(f"  {'tool':44} {'build s':>9} {'warm-up s':>10} {'eval s':>9} {'eval/ours':>10}")
    _row("metrics.core ndcg_batch (flat judged grades)", None, None, ours_s, ours_s)
    _row(f"metrics.core ndcg_batch (grade counts, +{counts_s:.4f} s)", None, None, from_counts_s,
         ours_s)  # fmt: skip
    _row("metrics.core rank + join + ndcg_batch", None, None, joined_s, ours_s)
    peer_times = []
    for runner in IN_MEMORY_PEERS:
        try:
            peer = runner(qrels, run, k, repeat)
        except PeerUnavailable as reason:
            print(f"  {runner.__name__.removesuffix('_result')}: skipped: {reason}")
            continue
        _row(
            peer.name,
            peer.build_s,
            peer.warmup_s,
            peer.eval_s,
            ours_s,
            _agreement(peer, qids, ours),
        )
        peer_times.append((peer.eval_s, peer.name))
    if peer_times:
        fastest, name = min(peer_times)
        verdict = "met" if fastest / ours_s >= SPEED_TARGET else "NOT met"
        print(f"  target: >= {SPEED_TARGET}x faster than the fastest peer ({name}): "
              f"{fastest / ours_s:.1f}x, {verdict}")  # fmt: skip


def _from_columns(columns, k):
    ranked = rank_queries(*columns)
    return ndcg_batch(
        ranked.ranked_grades, ranked.offsets, k=k, gain="linear",
        ideal_grades=ranked.judged_grades, ideal_offsets=ranked.judged_offsets,
    )  # fmt: skip


def _agreement(peer, qids, ours) -> str:
    if peer.per_query is not None:
        diff = max(abs(peer.per_query[q] - v) for q, v in zip(qids, ours.ndcg, strict=True))
        kind = "per query"
    else:
        diff = abs(peer.mean - ours.mean)
        kind = "mean"
    return f"{'equal' if diff <= TOLERANCE else 'DIFFERENT'} ({kind}, max |diff| {diff:.1e})"


def _row(name, build, warmup, seconds, ours, note="") -> None:
    def cell(value, width):
        return f"{value:>{width}.4f}" if value is not None else f"{'-':>{width}}"

    ratio = f"{seconds / ours:>9.1f}x"
    print(f"  {name:44} {cell(build, 9)} {cell(warmup, 10)} {cell(seconds, 9)} {ratio}  {note}")


def _bench_command(collection, work: Path, trec_eval, timeout: float, size: int) -> None:
    (qrels_path, run_path), seconds = timed(lambda: write_trec_files(collection, work))
    megabytes = (qrels_path.stat().st_size + run_path.stat().st_size) / 1e6
    files = [str(qrels_path), str(run_path)]
    print(f"\ncommand on TREC files ({megabytes:.0f} MB written in {seconds:.1f} s, apart), "
          f"-m {' -m '.join(MEASURES)}, best of {COMMAND_RUNS} runs taken in turns")  # fmt: skip
    start_up = {name: _best(command, timeout) for name, command in START_UP.items()}
    shown = [f"{name} {t.wall_s:.3f} s wall, {t.cpu_s:.3f} s cpu" for name, t in start_up.items()]
    print("  Python start-up (apart): " + ", ".join(shown))
    measures = [arg for m in MEASURES for arg in ("-m", m)]
    commands = {"python -m metrics.core": [sys.executable, "-m", "metrics.core", *files, *measures,
                                           "--precision", "15"]}  # fmt: skip
    if trec_eval is not None:
        commands["trec_eval"] = [str(trec_eval), *measures, *files]
    commands["pytrec_eval reading the files"] = [sys.executable, str(HERE / "pytrec_files.py"),
                                                 *files, *MEASURES]  # fmt: skip
    timings = _interleaved(commands, timeout)
    # ir_measures is shown for reference only, and is slow: one run.
    ir_measures = [sys.executable, "-m", "ir_measures", *files, "nDCG nDCG@10"]
    timings |= _interleaved({"ir_measures command": ir_measures}, timeout, runs=1)
    ours = timings.pop("python -m metrics.core")
    ours_values = [all_value(ours.stdout, m.replace(".", "_")) for m in MEASURES]
    print(f"  {'command':32} {'wall s':>8} {'cpu s':>8} {'wall/ours':>10} {'cpu/ours':>9}")
    print(f"  {'python -m metrics.core':32} {ours.wall_s:8.3f} {ours.cpu_s:8.3f}   all = "
          + ", ".join(f"{v:.15f}" for v in ours_values))  # fmt: skip
    for name, timing in timings.items():
        if isinstance(timing, PeerUnavailable):
            print(f"  {name}: skipped: {timing}")
            continue
        diff = max(abs(a - b) for a, b in zip(_values(timing.stdout), ours_values, strict=True))
        note = f"{'equal' if diff <= 1e-4 else 'DIFFERENT'} to the printed precision ({diff:.0e})"
        wall_ratio, cpu_ratio = timing.wall_s / ours.wall_s, timing.cpu_s / ours.cpu_s
        print(f"  {name:32} {timing.wall_s:8.3f} {timing.cpu_s:8.3f} {wall_ratio:9.1f}x "
              f"{cpu_ratio:8.1f}x  {note}")  # fmt: skip
        target = _command_target(name, size)
        if target is not None:
            verdict = "met" if wall_ratio >= target else "NOT met"
            print(
                f"  target: >= {target}x faster than {name} (wall): {wall_ratio:.1f}x, {verdict}"
            )
            record(
                f"python -m metrics.core vs {name}, {size:,} queries (wall)",
                f"{wall_ratio:.1f}x", f">= {target}x", wall_ratio >= target, load_average(),
            )  # fmt: skip


def _command_target(name: str, size: int) -> int | None:
    """Issue 18: 5x trec_eval and pytrec_eval reading the files from 10,000 queries (stretch
    10x); the earlier target of 20x trec_eval at 100,000 stays."""
    if size < 10_000 or name not in ("trec_eval", "pytrec_eval reading the files"):
        return None
    return CLI_TARGET_AT_100K if size >= 100_000 and name == "trec_eval" else CLI_TARGET


def _interleaved(commands: dict, timeout: float, runs: int = COMMAND_RUNS) -> dict:
    """The fastest (by wall time) of ``runs`` runs of each command, run in turns.

    Taking turns spreads the machine's other work over every command alike.
    """
    best: dict = {}
    for _ in range(runs):
        for name, command in commands.items():
            if isinstance(best.get(name), PeerUnavailable):
                continue
            try:
                timing = run_command(command, timeout, cwd=REPOSITORY)
            except PeerUnavailable as reason:
                best[name] = reason
                continue
            if name not in best or timing.wall_s < best[name].wall_s:
                best[name] = timing
    return best


def _values(out: str) -> list[float]:
    """The means of MEASURES in trec_eval's or ir_measures' output, in MEASURES' order."""
    keys = {"ndcg": ("ndcg", "nDCG"), "ndcg_cut.10": ("ndcg_cut_10", "nDCG@10")}
    return [_command_value(out, keys[m]) for m in MEASURES]


def _command_value(out: str, keys: tuple[str, str]) -> float:
    try:
        return all_value(out, keys[0])
    except ValueError:
        # ir_measures and the pytrec_eval script print "measure<TAB>value" for the mean.
        fields = out.split()
        return float(fields[fields.index(keys[1]) + 1])


def _best(command, timeout, runs=COMMAND_RUNS):
    """The fastest (by wall time) of ``runs`` runs of a command."""
    return min((run_command(command, timeout, cwd=REPOSITORY) for _ in range(runs)),
               key=lambda timing: timing.wall_s)  # fmt: skip


def _compile_bytecode() -> None:
    """Compile the package's bytecode, as an installed package has it.

    With ``PYTHONDONTWRITEBYTECODE`` set (as in some sandboxes) every run
    of the command would otherwise compile its modules again; pip compiles
    them at install time.
    """
    compileall.compile_dir(REPOSITORY / "metrics", quiet=1)


if __name__ == "__main__":
    # ranx's numba code warns about an integer cast on every call; it does not affect values.
    warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")
    raise SystemExit(main())
