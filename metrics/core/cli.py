"""``python -m metrics.core QRELS RUN -m MEASURE ...``: trec_eval-style evaluation.

Prints trec_eval's three columns, ``measure<TAB>qid<TAB>value``, with the
measure name left-justified in 22 characters and ``all`` for the mean, so
its output can be compared line by line with trec_eval's.

The defaults (linear gain, log2 discount, the ideal from all judged
documents cut at k, unjudged documents with gain 0) are trec_eval's, so
``--gain linear`` need not be given to reproduce trec_eval's numbers; the app
itself defaults to exponential gain. ``--negative penalise`` lets negative
grades lower DCG, with NDCG normalised min-max between the worst and the best
ordering (see :mod:`metrics.core.ndcg`); it is not a trec_eval option.

``-J`` is trec_eval's judged-documents-only rule (``form_res_rels.c``): a
document the qrels grade 0 or more for the query is judged; every other
document of the run (missing from the qrels, or with a negative grade, which
trec_eval reads as "in the pool but not judged") is removed from the ranking
before any measure, the documents below it moving up; the ideal is unchanged.
``--remove-unjudged`` is the app's ``unjudged="remove"``: it removes only the
documents missing from the qrels, a negative grade being a judgement (a
"harmful" hit). Without negative grades in the qrels the two are the same.
"""

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from metrics.core.batch import grade_counts, ndcg_batch
from metrics.core.batch_measures import (
    average_precision_batch,
    precision_batch,
    reciprocal_rank_batch,
)
from metrics.core.gains import DISCOUNTS, GAINS, NEGATIVES
from metrics.core.ranking import RankedQueries, rank_queries
from metrics.core.segments import FloatArray, condense, segment_sums
from metrics.core.trec import TrecFormatError, read_qrels, read_run

# trec_eval's default cut-offs for P, ndcg_cut and map_cut.
DEFAULT_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
# Measures print in this order whatever the command line order, as in trec_eval.
MEASURE_ORDER = ("map", "recip_rank", "P", "ndcg", "ndcg_cut", "map_cut")
CUT_MEASURES = frozenset({"P", "ndcg_cut", "map_cut"})
EXIT_BAD_INPUT = 2


class MeasureRequest(NamedTuple):
    """One measure of the command line, with its cut-offs (empty when it takes none)."""

    name: str
    cutoffs: tuple[int, ...] = ()


def parse_measure(text: str) -> MeasureRequest:
    """Parse ``ndcg``, ``ndcg_cut.5,10``, ``P.10``, ``map``, ``recip_rank`` or ``map_cut.k``.

    Examples
    --------
    >>> parse_measure("ndcg_cut.10,5")
    MeasureRequest(name='ndcg_cut', cutoffs=(5, 10))
    >>> parse_measure("P").cutoffs[:3]
    (5, 10, 15)
    """
    name, _, params = text.partition(".")
    if name not in MEASURE_ORDER:
        raise argparse.ArgumentTypeError(
            f"unknown measure {text!r}; known: {', '.join(MEASURE_ORDER)}"
        )
    if name not in CUT_MEASURES:
        if params:
            raise argparse.ArgumentTypeError(f"measure {name!r} takes no parameters")
        return MeasureRequest(name)
    if not params:
        return MeasureRequest(name, DEFAULT_CUTOFFS)
    try:
        cutoffs = sorted({int(p) for p in params.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"cut-offs of {text!r} must be integers") from None
    if cutoffs[0] < 1:
        raise argparse.ArgumentTypeError(f"cut-offs of {text!r} must be positive")
    return MeasureRequest(name, tuple(cutoffs))


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, as wide as ``shutil.get_terminal_size`` says, without its import.

    argparse makes a formatter for every argument added, and its own finds
    the width by importing :mod:`shutil`, which imports the bz2, lzma and
    zlib modules: a tenth of the command's start-up. This one reads the
    width the same way (``$COLUMNS``, else the terminal of standard output,
    else 80 columns) with :mod:`os` alone.
    """

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_terminal_columns() - 2)


def _terminal_columns() -> int:
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def build_parser() -> argparse.ArgumentParser:
    """Return the command's argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m metrics.core",
        formatter_class=_HelpFormatter,
        description="Evaluate a TREC run against TREC qrels, printing trec_eval's columns. "
        "Defaults reproduce trec_eval: linear gain, log2 discount, ideal from all judged "
        "documents. Negative grades count as 0 and stay out of the ideal.",
    )
    parser.add_argument("qrels", help="qrels file: qid iter docno grade")
    parser.add_argument("run", help="run file: qid Q0 docno rank score tag")
    parser.add_argument(
        "-m",
        dest="measures",
        action="append",
        type=parse_measure,
        required=True,
        metavar="MEASURE",
        help="ndcg, ndcg_cut[.k,...], P[.k,...], map, map_cut[.k,...], recip_rank; repeatable",
    )
    parser.add_argument("-q", action="store_true", help="also print one line per query")
    parser.add_argument(
        "-c",
        action="store_true",
        help="average over every qrels query, a query missing from the run counting 0",
    )
    parser.add_argument(
        "-l",
        dest="level",
        type=float,
        default=1.0,
        help="lowest grade counted relevant by P, map and recip_rank (default 1)",
    )
    parser.add_argument(
        "--gain",
        choices=GAINS,
        default="linear",
        help="linear (default here: trec_eval compatible) or exponential (2^grade - 1, "
        "the app's default)",
    )
    parser.add_argument("--discount", choices=DISCOUNTS, default="log2", help="default log2")
    parser.add_argument(
        "--ideal",
        choices=("judged", "returned"),
        default="judged",
        help="ideal from all judged documents (default, trec_eval) or the returned ones",
    )
    parser.add_argument(
        "--ideal-depth",
        choices=("cut", "full"),
        default="cut",
        help="ndcg_cut's ideal summed to k (default, trec_eval) or in full (Quepid)",
    )
    parser.add_argument(
        "-J",
        dest="judged_only",
        action="store_true",
        help="judged documents only, as trec_eval -J: documents without a grade of 0 or "
        "more in the qrels (missing, or negative: trec_eval's 'not judged') are dropped "
        "from the ranking first",
    )
    parser.add_argument(
        "--remove-unjudged",
        action="store_true",
        help="drop documents missing from the qrels before ranking (condensed lists, the "
        "app's unjudged=remove); unlike -J a negative grade is judged and stays",
    )
    parser.add_argument(
        "--negative",
        choices=NEGATIVES,
        default="zero",
        help="negative grades count 0 (default, trec_eval) or penalise: they keep their sign "
        "and ndcg is normalised between the worst and the best ordering (Gienapp et al., "
        "CIKM 2020)",
    )
    parser.add_argument(
        "--precision", type=int, default=4, metavar="N", help="decimals printed (default 4)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit status (2 for unreadable or malformed input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.judged_only and args.negative == "penalise":
        parser.error(
            "-J drops negative grades as trec_eval does, so they cannot penalise; "
            "use --remove-unjudged with --negative penalise"
        )
    try:
        ranked = rank_queries(read_qrels(args.qrels), read_run(args.run), all_qrels_queries=args.c)
    except TrecFormatError as error:
        return _fail(str(error))
    except OSError as error:
        return _fail(f"{error.filename}: cannot read: {error.strerror}")
    if not ranked.qids:
        return _fail(f"no query has both results in {args.run} and judgements in {args.qrels}")
    columns = evaluate(ranked, _merge(args.measures), args)
    sys.stdout.write(format_lines(ranked.qids, columns, per_query=args.q, digits=args.precision))
    return 0


def _fail(message: str) -> int:
    print(f"metrics.core: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _merge(requests: Sequence[MeasureRequest]) -> list[MeasureRequest]:
    """One request per measure, cut-offs merged, in trec_eval's printing order."""
    cutoffs: dict[str, set[int]] = {}
    for request in requests:
        cutoffs.setdefault(request.name, set()).update(request.cutoffs)
    ordered = sorted(cutoffs, key=MEASURE_ORDER.index)
    return [MeasureRequest(name, tuple(sorted(cutoffs[name]))) for name in ordered]


def evaluate(
    ranked: RankedQueries, requests: Sequence[MeasureRequest], args: argparse.Namespace
) -> list[tuple[str, FloatArray]]:
    """Compute every requested measure; return (printed name, per-query values) pairs."""
    compute = _measure_functions(ranked, args)
    columns: list[tuple[str, FloatArray]] = []
    for request in requests:
        if not request.cutoffs:
            columns.append((request.name, compute[request.name](None)))
        for k in request.cutoffs:
            columns.append((f"{request.name}_{k}", compute[request.name](k)))
    return columns


def _measure_functions(
    ranked: RankedQueries, args: argparse.Namespace
) -> dict[str, Callable[[int | None], FloatArray]]:
    grades, offsets = ranked.ranked_grades, ranked.offsets
    if args.judged_only:
        # trec_eval -J keeps a document whose qrels grade is 0 or more (NaN: not in them).
        grades, offsets = condense(np.where(grades >= 0, grades, np.nan), offsets)
    elif args.remove_unjudged:
        grades, offsets = condense(grades, offsets)
    ideal = _ideal_arguments(ranked, grades, offsets, args.ideal, args.negative)

    def n_relevant() -> FloatArray:
        relevant = (ranked.judged_grades >= args.level).astype(np.float64)
        return segment_sums(relevant, ranked.judged_offsets)

    def ndcg_at(k: int | None, depth: str) -> FloatArray:
        options = {
            "gain": args.gain,
            "discount": args.discount,
            "ideal_depth": depth,
            "negative": args.negative,
        }
        return ndcg_batch(grades, offsets, k=k, **ideal, **options).ndcg  # type: ignore[arg-type]

    return {
        "ndcg": lambda k: ndcg_at(None, "full"),
        "ndcg_cut": lambda k: ndcg_at(k, args.ideal_depth),
        "P": lambda k: precision_batch(grades, offsets, k=k, threshold=args.level),
        "map": lambda k: average_precision_batch(
            grades, offsets, n_relevant(), threshold=args.level
        ),
        "map_cut": lambda k: average_precision_batch(
            grades, offsets, n_relevant(), k=k, threshold=args.level
        ),
        "recip_rank": lambda k: reciprocal_rank_batch(grades, offsets, threshold=args.level),
    }


def _ideal_arguments(
    ranked: RankedQueries, grades: FloatArray, offsets: np.ndarray, source: str, negative: str
) -> dict[str, np.ndarray]:
    """``ndcg_batch``'s ideal arguments; integer grades are counted once for all cut-offs
    (unless negative grades penalise: counts leave them out)."""
    if source == "returned":
        return {"ideal_grades": grades, "ideal_offsets": offsets}
    counts = None
    if negative == "zero":
        counts = grade_counts(ranked.judged_grades, ranked.judged_offsets)
    if counts is not None:
        return {"ideal_counts": counts}
    return {"ideal_grades": ranked.judged_grades, "ideal_offsets": ranked.judged_offsets}


def format_lines(
    qids: Sequence[str], columns: Sequence[tuple[str, FloatArray]], *, per_query: bool, digits: int
) -> str:
    """Format trec_eval's lines: per query (if asked), measure by measure, then the means.

    Examples
    --------
    >>> text = format_lines(["q1", "q2"], [("ndcg", np.array([0.5, 1.0]))],
    ...                     per_query=True, digits=4)
    >>> [line.split("\\t") for line in text.splitlines()]  # doctest: +NORMALIZE_WHITESPACE
    [['ndcg                  ', 'q1', '0.5000'],
     ['ndcg                  ', 'q2', '1.0000'],
     ['ndcg                  ', 'all', '0.7500']]
    """
    lines = []
    if per_query:
        for i, qid in enumerate(qids):
            lines.extend(f"{name:<22}\t{qid}\t{values[i]:.{digits}f}" for name, values in columns)
    lines.extend(f"{name:<22}\tall\t{np.mean(values):.{digits}f}" for name, values in columns)
    return "\n".join(lines) + "\n"
