"""Cross-check against pytrec_eval, the Python binding of trec_eval's C code."""

import numpy as np
import pytest

from metrics.core import ndcg_batch, offsets_from_lengths

pytrec_eval = pytest.importorskip("pytrec_eval")

CUTOFFS = (1, 3, 5, 10, 20)


def random_collection(seed, n_queries=200):
    """Random graded qrels (0-3, some negative) and runs with distinct scores."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        docs = [f"d{d}" for d in rng.choice(400, size=rng.integers(1, 60), replace=False)]
        qrels[qid] = {d: int(rng.choice([-1, 0, 0, 1, 2, 3])) for d in docs}
        candidates = rng.choice(400, size=rng.integers(0, 50), replace=False)
        scores = rng.permutation(len(candidates)).astype(float)
        run[qid] = {f"d{d}": float(s) for d, s in zip(candidates, scores, strict=True)}
    return qrels, run


def our_inputs(qrels, run, qids, grade=lambda g: g):
    """Flat ranked grades (by score, descending) and judged grades, in ``qids`` order."""
    ranked, lengths, judged, judged_lengths = [], [], [], []
    for qid in qids:
        hits = sorted(run[qid].items(), key=lambda item: -item[1])
        ranked += [grade(qrels[qid][d]) if d in qrels[qid] else np.nan for d, _ in hits]
        lengths.append(len(hits))
        judged += [grade(g) for g in qrels[qid].values()]
        judged_lengths.append(len(qrels[qid]))
    return (
        np.array(ranked, dtype=float),
        offsets_from_lengths(lengths),
        np.array(judged, dtype=float),
        offsets_from_lengths(judged_lengths),
    )


def trec_eval_values(qrels, run, measures):
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    return evaluator.evaluate(run)


def exponential(grade):
    return 2.0**grade - 1 if grade > 0 else grade


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("gain", ["linear", "exponential"])
def test_batch_ndcg_equals_pytrec_eval_on_random_graded_inputs(seed, gain):
    qrels, run = random_collection(seed)
    # pytrec_eval only knows linear gain: for exponential gain its qrels are
    # given as 2^grade - 1, which it then uses linearly.
    transform = exponential if gain == "exponential" else (lambda g: g)
    peer_qrels = {q: {d: int(transform(g)) for d, g in docs.items()} for q, docs in qrels.items()}
    cut = ",".join(map(str, CUTOFFS))
    expected = trec_eval_values(peer_qrels, run, {"ndcg", f"ndcg_cut.{cut}"})
    qids = sorted(q for q in run if run[q])
    ranked, offsets, judged, judged_offsets = our_inputs(qrels, run, qids)
    options = {"ideal_grades": judged, "ideal_offsets": judged_offsets, "gain": gain}

    full = ndcg_batch(ranked, offsets, k=None, **options)
    for i, qid in enumerate(qids):
        assert abs(full.ndcg[i] - expected[qid]["ndcg"]) < 1e-12
    for k in CUTOFFS:
        cut_result = ndcg_batch(ranked, offsets, k=k, **options)
        for i, qid in enumerate(qids):
            assert abs(cut_result.ndcg[i] - expected[qid][f"ndcg_cut_{k}"]) < 1e-12
