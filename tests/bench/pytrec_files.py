"""pytrec_eval as a command on TREC files: ``python pytrec_files.py QRELS RUN MEASURE...``.

The peer of ``python -m metrics.core`` end to end: it reads both files with
pytrec_eval's own parsers, evaluates, and prints each measure's mean over the
evaluated queries as ``measure<TAB>value`` (pytrec_eval has no command of its
own). Measures are trec_eval's names (``ndcg``, ``ndcg_cut.10``).
"""

import sys

import pytrec_eval


def main(qrels_path: str, run_path: str, *measures: str) -> None:
    with open(qrels_path) as qrels_file:
        qrels = pytrec_eval.parse_qrel(qrels_file)
    with open(run_path) as run_file:
        run = pytrec_eval.parse_run(run_file)
    results = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
    names = {"ndcg": "nDCG", "ndcg_cut.10": "nDCG@10"}
    for measure in measures:
        key = measure.replace(".", "_")
        mean = sum(values[key] for values in results.values()) / len(results)
        print(f"{names.get(measure, measure)}\t{mean!r}")


if __name__ == "__main__":
    main(*sys.argv[1:])
