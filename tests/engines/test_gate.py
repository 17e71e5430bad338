"""scripts/relevance_gate.py --endpoint: the candidate captured from the engine by the
real server on 127.0.0.1, the script in its own process."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from config.api.tokens import token_create
from judgements.engines.capture import capture_start
from judgements.models import Capture, QueuePair, ResultList
from tests.engines.conftest import MULTI_MATCH, cranfield_project, make_endpoint

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "relevance_gate.py"
TITLES = {"query": {"match": {"title": "{{query}}"}}}

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def setting(analyst, elastic, django_capture_on_commit_callbacks):
    project = cranfield_project(analyst, queries=40, slug="shop")
    endpoint = make_endpoint(project, elastic, analyst, name="prod-es")
    capture_start(endpoint=endpoint, user=analyst, name="prod")
    return project, endpoint


def gate(live_server, token: str, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPT), "--url", live_server.url, "--project", "shop"]
    return subprocess.run(
        [*command, "--baseline", "prod", "--endpoint", "prod-es", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"RELEVANCE_JUDGE_TOKEN": token, "PATH": "/usr/bin:/bin"},
    )


def template(tmp_path, body) -> str:
    path = tmp_path / "template.json"
    path.write_text(json.dumps(body))
    return str(path)


def test_a_worse_template_fails_the_gate_and_stays_out_of_the_pool(
    live_server, setting, analyst, tmp_path
):
    project, _ = setting
    pooled = QueuePair.objects.filter(query__project=project).count()

    done = gate(live_server, token_create(user=analyst), "--template", template(tmp_path, TITLES),
                "--name", "ci-1", "--max-drop", "0")  # fmt: skip

    assert done.returncode == 1, done.stderr + done.stdout
    assert "FAILED: Mean NDCG@10 fell by" in done.stdout
    assert "Biggest losses" in done.stdout and "DELETE http" in done.stdout
    assert not ResultList.objects.filter(name="ci-1").exists()
    assert QueuePair.objects.filter(query__project=project).count() == pooled
    assert Capture.objects.get(name="ci-1").kind == "gate"


def test_the_same_template_passes_and_a_rerun_replaces_the_candidate(
    live_server, setting, analyst, tmp_path
):
    token = token_create(user=analyst)
    same = template(tmp_path, MULTI_MATCH)

    first = gate(live_server, token, "--template", same, "--name", "ci-2")
    again = gate(live_server, token, "--template", same, "--name", "ci-2")

    assert first.returncode == again.returncode == 0, again.stderr
    assert "PASSED: Mean NDCG@10 rose by 0.0000" in again.stdout
    assert Capture.objects.filter(name="ci-2").count() == 1


def test_judge_keeps_the_candidate_so_its_hits_join_the_queue(
    live_server, setting, analyst, tmp_path
):
    project, _ = setting
    token = token_create(user=analyst)
    args = ["--template", template(tmp_path, TITLES), "--name", "ci-3", "--judge"]

    done = gate(live_server, token, *args, "--max-drop", "1")
    again = gate(live_server, token, *args, "--max-drop", "1")

    assert done.returncode == again.returncode == 0, again.stderr + again.stdout
    kept = ResultList.objects.get(name="ci-3")
    assert "Kept as result list" in again.stdout and "PASSED" in again.stdout
    top = set(kept.hits.filter(rank__lte=10).values_list("query_id", "document_id"))
    assert top <= set(
        QueuePair.objects.filter(query__project=project).values_list("query_id", "document_id")
    )


def test_an_engine_that_fails_stops_the_gate_with_status_2(live_server, setting, analyst, elastic):
    elastic.auth = ("bearer", "right")

    done = gate(live_server, token_create(user=analyst), "--name", "ci-4")

    assert done.returncode == 2
    assert "The capture from prod-es failed: HTTP 401: security_exception" in done.stderr
