"""scripts/relevance_gate.py end to end: a real server on 127.0.0.1, the script in its own
process, a run uploaded over HTTP and compared with the baseline."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from config.api.tokens import token_create
from judgements.models import ResultList
from tests.api.test_compare import expected_outputs, trec_eval_c, trec_eval_lists
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)
from tests.shared import TREC_EVAL

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "relevance_gate.py"
# Per query, the baseline's ranking of documents 1-5; document 1 is perfect (3), 2
# relevant (2), the others irrelevant (0).
QUERIES = ["tent", "stove", "lamp", "rope"]
BASELINE = [1, 2, 3, 4, 5]

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def project(analyst):
    project = ProjectFactory(name="Shop", slug="shop")
    alice = UserFactory(username="alice", roles=["rater"])
    prod = ResultListFactory(project=project, name="prod")
    for text in QUERIES:
        query = QueryFactory(project=project, text=text)
        # The run files name queries by their id; as external id too, which imports
        # may match instead.
        query.external_id = str(query.pk)
        query.save()
        docs = {n: DocumentFactory(project=project, external_id=f"{text}-{n}") for n in BASELINE}
        for rank, n in enumerate(BASELINE, start=1):
            HitFactory(result_list=prod, query=query, document=docs[n], rank=rank)
        for n, grade in {1: 3, 2: 2, 3: 0, 4: 0, 5: 0}.items():
            JudgementFactory(query=query, document=docs[n], rater=alice, grade=grade)
    return project


def run_file(project, tmp_path: Path, orders: dict[str, list[int]]) -> Path:
    """A TREC run: each query's documents in ``orders`` (default the baseline's)."""
    lines = []
    for query in project.queries.order_by("pk"):
        for rank, n in enumerate(orders.get(query.text, BASELINE), start=1):
            lines.append(f"{query.pk} Q0 {query.text}-{n} {rank} {10 - rank} candidate")
    path = tmp_path / "candidate.run"
    path.write_text("\n".join(lines) + "\n")
    return path


def gate(live_server, token: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPT), "--url", live_server.url, "--project", "shop"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"RELEVANCE_JUDGE_TOKEN": token, "PATH": "/usr/bin:/bin"},
    )


def test_a_worse_run_fails_the_gate_and_names_the_losing_queries(
    live_server, project, analyst, tmp_path
):
    token = token_create(user=analyst)
    # tent and lamp lose their perfect document to the bottom; the others are unchanged.
    worse = run_file(project, tmp_path, {"tent": [3, 2, 4, 5, 1], "lamp": [4, 3, 5, 2, 1]})

    done = gate(live_server, token, "--baseline", "prod", "--run", str(worse),
                "--name", "ci-1234", "--max-drop", "0.01")  # fmt: skip

    assert done.returncode == 1, done.stderr
    assert ResultList.objects.filter(project=project, name="ci-1234").exists()
    out = done.stdout
    assert "FAILED: Mean NDCG@10 fell by" in out
    assert "2 worse" in out and "Biggest losses (2 of 2)" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("    ")]
    losing = {row[-1]: row[0] for row in rows if row[-2].startswith("-0.")}
    queries = project.queries.filter(text__in=["lamp", "tent"])
    assert losing == {query.text: query.external_id for query in queries}


def test_an_unchanged_run_passes(live_server, project, analyst, tmp_path):
    token = token_create(user=analyst)

    done = gate(live_server, token, "--baseline", "prod",
                "--run", str(run_file(project, tmp_path, {})), "--name", "ci-same")  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "PASSED: Mean NDCG@10 rose by 0.0000" in done.stdout
    assert "Biggest losses" not in done.stdout


def test_metric_parameters_pass_through_to_the_comparison(live_server, project, analyst, tmp_path):
    token = token_create(user=analyst)
    # Only rank 3 and below change: invisible at k=2, a loss at the project's k=10.
    lower = run_file(project, tmp_path, {"stove": [1, 2, 4, 3, 5]})
    gate(live_server, token, "--baseline", "prod", "--run", str(lower), "--name", "ci-k")

    at_2 = gate(live_server, token, "--baseline", "prod", "--candidate", "ci-k",
                "--param", "k=2", "--param", "gain=linear")  # fmt: skip

    assert at_2.returncode == 0, at_2.stderr
    assert "NDCG@2 (ndcg@2 linear log2" in at_2.stdout


def test_a_wrong_token_or_baseline_stops_the_gate_with_status_2(live_server, project, analyst):
    token = token_create(user=analyst)

    wrong_token = gate(live_server, "not-a-token", "--baseline", "prod", "--candidate", "prod")
    no_baseline = gate(live_server, token, "--baseline", "nightly", "--candidate", "prod")

    assert wrong_token.returncode == no_baseline.returncode == 2
    assert "HTTP 401" in wrong_token.stderr
    assert "has no result list named 'nightly'" in no_baseline.stderr


def test_a_run_the_server_refuses_is_reported_line_by_line(
    live_server, project, analyst, tmp_path
):
    token = token_create(user=analyst)
    query = project.queries.order_by("pk").first()
    bad = tmp_path / "bad.run"
    bad.write_text(f"{query.external_id} Q0 {query.text}-1 1 high run\n")

    done = gate(live_server, token, "--baseline", "prod", "--run", str(bad))

    assert done.returncode == 2
    assert "HTTP 400" in done.stderr
    assert 'line 1, score: "high" is not a number' in done.stderr
    assert not ResultList.objects.filter(project=project, name="bad").exists()


def readme_ci_step() -> str:
    """The first shell block under the README's "A regression gate in CI"."""
    readme = (SCRIPT.parents[1] / "README.md").read_text()
    section = readme.split("### A regression gate in CI", 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


@pytest.mark.skipif(
    not (shutil.which("curl") and shutil.which("jq")), reason="the README's step needs curl, jq"
)
@pytest.mark.parametrize(("orders", "status"), [({"rope": [5, 4, 3, 2, 1]}, 1), ({}, 0)])
def test_the_readmes_curl_step_fails_the_build_on_a_drop(
    live_server, project, analyst, tmp_path, orders, status
):
    token = token_create(user=analyst)
    run_file(project, tmp_path, orders)
    prod = project.result_lists.get(name="prod")
    step = readme_ci_step().replace("a=12&", f"a={prod.pk}&")
    env = {"RJ_TOKEN": token, "RJ_URL": live_server.url, "GIT_COMMIT": "abc123"}

    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", step],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "PATH": "/usr/bin:/bin"},
    )

    assert done.returncode == status, done.stderr
    assert ResultList.objects.filter(project=project, name="ci-abc123").exists()
    verdict = "more than it" if status else "within it"
    assert done.stdout.strip().endswith(f"The drop allowed is 0.01: {verdict}.")


def test_the_gate_over_all_queries_counts_the_query_the_candidate_no_longer_returns(
    live_server, analyst
):
    """The issue's pair: qrels.test, results.test as production and results.trunc (it
    lacks query 302) as the candidate. trec_eval -c gives 0.3016 and 0.1717 (out.test.aq,
    out.test.aqc): a drop, where comparing the two queries in common showed a rise."""
    project, _, _ = trec_eval_lists(slug="shop")
    project.result_lists.get(name="candidate").delete()
    token = token_create(user=analyst)

    done = gate(live_server, token, "--baseline", "production",
                "--run", str(TREC_EVAL / "results.trunc"), "--name", "ci-trunc",
                "--param", "mean_over=all", "--param", "k=10", "--param", "gain=linear",
                "--max-drop", "0.01")  # fmt: skip

    assert done.returncode == 1, done.stdout + done.stderr
    a, b = trec_eval_c("results.test"), trec_eval_c("results.trunc")
    # trec_eval's own expected output: -a -q on results.test, -a -q -c on results.trunc.
    assert (round(a, 4), round(b, 4)) == (
        expected_outputs("out.test.aq")["all"],
        expected_outputs("out.test.aqc")["all"],
    )
    out = done.stdout
    assert f"A production: {a:.4f}   B ci-trunc: {b:.4f}   change {b - a:+.4f}" in out
    assert (
        "  3 queries, mean over all: A did not return 0, B did not return 1 (each counts 0): "
        "1 better, 1 tied, 1 worse." in out
    )
    assert f"FAILED: Mean NDCG@10 fell by {a - b:.4f} ({a:.4f} to {b:.4f}) over all 3 " in out
    assert "302" in [row.split()[0] for row in out.splitlines() if row.startswith("    3")]


def open_candidate(project) -> ResultList:
    """The baseline's ranking under a new, unjudged document at the top of every query."""
    candidate = ResultListFactory(project=project, name="ci-open")
    for query in project.queries.order_by("pk"):
        new = DocumentFactory(project=project, external_id=f"{query.text}-new")
        docs = [new, *(project.documents.get(external_id=f"{query.text}-{n}") for n in BASELINE)]
        for rank, document in enumerate(docs, start=1):
            HitFactory(result_list=candidate, query=query, document=document, rank=rank)
    return candidate


def test_require_decided_exits_3_while_unjudged_hits_could_change_the_answer(
    live_server, project, analyst
):
    token = token_create(user=analyst)
    open_candidate(project)
    args = ("--baseline", "prod", "--candidate", "ci-open", "--max-drop", "1")

    plain = gate(live_server, token, *args)
    strict = gate(live_server, token, *args, "--require-decided")

    # The drop (the new documents count 0 for now) is within --max-drop: without
    # --require-decided the gate passes, saying it is not decided.
    assert plain.returncode == 0, plain.stderr
    assert strict.returncode == 3, strict.stderr
    for done in (plain, strict):
        assert "VERDICT: not decided yet: the unjudged hits could still change the answer" in (
            done.stdout
        )
        assert "(4 unjudged pairs in the top k; alpha 0.05)" in done.stdout
        assert "Coverage A prod: judged@k 100.0%, 0 unjudged in the top k" in done.stdout
        assert (
            "Coverage B ci-open: judged@k 83.3%, 4 unjudged in the top k, "
            "4 of them in the raters' queue" in done.stdout
        )
        assert "PASSED" in done.stdout


def test_require_decided_passes_a_decided_comparison(live_server, project, analyst, tmp_path):
    token = token_create(user=analyst)

    done = gate(live_server, token, "--baseline", "prod", "--require-decided",
                "--run", str(run_file(project, tmp_path, {})), "--name", "ci-same")  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "VERDICT: no difference shown (0 unjudged pairs in the top k" in done.stdout
    assert "Bounds of the change over every grade the unjudged hits could get: +0.0000 to " in (
        done.stdout
    )
