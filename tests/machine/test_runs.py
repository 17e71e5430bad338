"""A machine judge's runs against a real OpenAI-compatible server on 127.0.0.1, spoken
to through the real ``openai`` client."""

import json
import threading
import time
from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from judgements.machine import runs
from judgements.machine.client import Reply
from judgements.machine.prompting import prompt_version
from judgements.machine.runs import machine_run_pause, machine_run_resume, machine_run_start
from judgements.models import Judgement, MachineRun, MachineRunItem, PairGrade, QueuePair
from tests.machine.conftest import machine_events, make_judge, pool_project

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_grades_land_as_events_with_model_tokens_and_cost(model_server, analyst):
    project = pool_project(3, 2)
    model_server.answers = {"q0 d0": 3, "q0 d1": 2, "q1 d0": 1}
    judge = make_judge(
        project,
        model_server,
        cost_input_per_1k=Decimal("0.5"),
        cost_output_per_1k=Decimal("2"),
        concurrency=2,
    )

    run = machine_run_start(judge=judge, user=analyst)

    run.refresh_from_db()
    assert (run.status, run.total, run.graded, run.failed) == ("done", 6, 6, 0)
    events = list(machine_events(judge).select_related("document", "machine_answer"))
    grades = {event.document.title: event.grade for event in events}
    assert grades == {"q0 d0": 3, "q0 d1": 2, "q1 d0": 1, "q1 d1": 0, "q2 d0": 0, "q2 d1": 0}
    assert {event.source for event in events} == {Judgement.Source.MACHINE}
    for event in events:
        answer = event.machine_answer
        prompt = next(
            r["messages"][-1]["content"]
            for r in model_server.requests
            if f"Title: {event.document.title}\n" in r["messages"][-1]["content"]
        )
        content = json.dumps({"grade": event.grade, "rationale": answer.rationale})
        assert answer.model == "tiny-grader"
        assert answer.prompt_version == prompt_version(judge.prompt_template)
        assert answer.rationale == f"table says {event.grade} for {event.document.title}"
        assert answer.tokens_in == len(prompt.split())
        assert answer.tokens_out == len(content.split())
        assert answer.cost == (Decimal("0.5") * answer.tokens_in + 2 * answer.tokens_out) / 1000
        assert answer.attempts == 1
    assert run.cost == sum(event.machine_answer.cost for event in events)
    assert run.tokens_in == sum(event.machine_answer.tokens_in for event in events)


def test_the_prompt_holds_the_query_the_document_and_the_scale(model_server, analyst):
    project = pool_project(1, 1)
    project.guidelines = "Prefer tents."
    project.save()
    judge = make_judge(project, model_server)

    machine_run_start(judge=judge, user=analyst)

    (request,) = model_server.requests
    prompt = request["messages"][-1]["content"]
    assert "Query: query 0" in prompt and "Title: q0 d0" in prompt
    assert "3 = Perfect: Exactly what the searcher wanted." in prompt
    assert "Prefer tents." in prompt
    assert (request["model"], request["temperature"]) == ("tiny-grader", 0.0)


def test_a_500_is_retried_with_backoff_and_the_grade_lands(model_server, analyst):
    project = pool_project(1, 1)
    model_server.answers = {"q0 d0": 2}
    model_server.statuses = [500, 503]
    judge = make_judge(project, model_server, max_retries=3)

    machine_run_start(judge=judge, user=analyst)

    (event,) = machine_events(judge)
    assert (event.kind, event.grade, event.machine_answer.attempts) == ("grade", 2, 3)
    assert len(model_server.requests) == 3


def test_500s_past_the_retries_become_a_visible_cant_tell(model_server, analyst):
    project = pool_project(1, 1)
    model_server.statuses = [500] * 4
    judge = make_judge(project, model_server, max_retries=3)

    run = machine_run_start(judge=judge, user=analyst)

    (event,) = machine_events(judge)
    assert (event.kind, event.grade) == ("cant_tell", None)
    assert "HTTP 500" in event.note
    assert event.machine_answer.error == event.note
    assert event.machine_answer.attempts == 4
    run.refresh_from_db()
    assert (run.status, run.graded, run.failed) == ("done", 0, 1)


def test_a_timeout_is_retried_then_recorded_as_a_failure(model_server, analyst):
    project = pool_project(1, 1)
    model_server.hang = 1.0
    judge = make_judge(project, model_server, timeout_seconds=0.2, max_retries=1)

    machine_run_start(judge=judge, user=analyst)

    (event,) = machine_events(judge)
    assert event.kind == "cant_tell"
    assert event.note == "timed out: the server did not answer in time"
    assert event.machine_answer.attempts == 2
    assert len(model_server.requests) == 2


def test_a_client_error_is_not_retried(model_server, analyst):
    project = pool_project(1, 1)
    model_server.statuses = [400]
    judge = make_judge(project, model_server, max_retries=3)

    machine_run_start(judge=judge, user=analyst)

    (event,) = machine_events(judge)
    assert "HTTP 400" in event.note
    assert len(model_server.requests) == 1


def test_an_answer_without_a_grade_on_the_scale_is_a_cant_tell_saying_what_came(
    model_server, analyst
):
    project = pool_project(1, 1)
    model_server.answers = {"q0 d0": 7}
    judge = make_judge(project, model_server)

    machine_run_start(judge=judge, user=analyst)

    (event,) = machine_events(judge)
    assert event.kind == "cant_tell"
    assert event.note.startswith('no grade of [0, 1, 2, 3] in the answer: {"grade": 7')


def test_the_pair_budget_stops_the_run(model_server, analyst):
    project = pool_project(3, 2)
    judge = make_judge(project, model_server)

    run = machine_run_start(judge=judge, user=analyst, max_pairs=4)

    run.refresh_from_db()
    assert (run.status, run.total, run.graded) == ("done", 4, 4)
    assert machine_events(judge).count() == 4
    # The queue's first pairs: best rank first.
    assert set(machine_events(judge).values_list("document__title", flat=True)) == {
        "q0 d0",
        "q1 d0",
        "q2 d0",
        "q0 d1",
    }


def test_the_money_budget_stops_the_run(model_server, analyst):
    project = pool_project(3, 2)
    judge = make_judge(project, model_server, concurrency=1, cost_output_per_1k=Decimal(1000))

    # Each answer is 9 output words (tokens), so it costs 9: the third passes 20.
    run = machine_run_start(judge=judge, user=analyst, max_cost=Decimal(20))

    run.refresh_from_db()
    assert run.status == MachineRun.Status.BUDGET
    assert (run.graded, run.cost) == (3, Decimal(27))
    assert "budget of 20" in run.reason
    assert machine_events(judge).count() == 3
    assert run.items.filter(status=MachineRunItem.Status.SKIPPED).count() == 3


def test_two_workers_never_grade_the_same_slot_twice(model_server, analyst):
    project = pool_project(10, 5)
    model_server.delay = 0.002
    judge = make_judge(project, model_server, concurrency=4)
    run = machine_run_start(judge=judge, user=analyst, tasks=0)
    assert machine_events(judge).count() == 0

    workers = [threading.Thread(target=runs.machine_run_work, args=(run.pk,)) for _ in "ab"]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    pairs = list(machine_events(judge).values_list("query_id", "document_id"))
    assert len(pairs) == 50 == len(set(pairs))
    assert len(model_server.requests) == 50
    run.refresh_from_db()
    assert (run.status, run.graded) == ("done", 50)


def test_a_claim_in_flight_longer_than_the_lease_stays_its_workers(
    model_server, analyst, settings
):
    # Each answer takes longer than the lease: only the heartbeat, which renews the
    # claims in flight, keeps the second worker from taking the pairs over.
    settings.TASK_LEASE_SECONDS = 0.6
    model_server.delay = 1.2
    project = pool_project(1, 2)
    judge = make_judge(project, model_server, concurrency=2)
    run = machine_run_start(judge=judge, user=analyst, tasks=0)
    first = threading.Thread(target=runs.machine_run_work, args=(run.pk,))
    first.start()
    while MachineRunItem.objects.filter(run=run, status="claimed").count() < 2:
        time.sleep(0.01)
    second = threading.Thread(target=runs.machine_run_work, args=(run.pk,))
    second.start()
    first.join(timeout=10)
    if first.is_alive():  # Claims taken over and over: stop it, to fail below.
        machine_run_pause(run=run)
    for worker in (first, second):
        worker.join()

    assert len(model_server.requests) == 2
    assert machine_events(judge).count() == 2
    run.refresh_from_db()
    assert (run.status, run.graded) == ("done", 2)


def test_a_late_answer_on_a_claim_taken_over_is_dropped(model_server, analyst):
    project = pool_project(1, 1)
    judge = make_judge(project, model_server)
    run = machine_run_start(judge=judge, user=analyst, tasks=0)
    context = runs._Context(judge, None, run.pk)
    first = runs._claim(context)
    # The first worker dies; its claim's lease ends and another worker takes the pair.
    MachineRunItem.objects.filter(pk=first.item_id).update(
        claimed_at=timezone.now() - context.lease
    )

    runs.machine_run_work(run.pk)
    late = Reply(0, "late", "", 1, 1, 1, 1)

    assert runs._record(context, first, late) is False
    assert machine_events(judge).count() == 1


def test_pause_stops_claiming_and_resume_finishes(model_server, analyst):
    project = pool_project(2, 2)
    judge = make_judge(project, model_server)
    run = machine_run_start(judge=judge, user=analyst, tasks=0)

    assert machine_run_pause(run=run)
    assert runs.machine_run_work(run.pk) == MachineRun.Status.PAUSED
    assert machine_events(judge).count() == 0

    assert machine_run_resume(run=run)
    run.refresh_from_db()
    assert (run.status, run.graded) == ("done", 4)


def test_a_second_run_asks_only_pairs_without_a_grade(model_server, analyst):
    project = pool_project(2, 1)
    model_server.statuses = [400]
    judge = make_judge(project, model_server, concurrency=1)
    machine_run_start(judge=judge, user=analyst)

    second = machine_run_start(judge=judge, user=analyst)

    assert second.total == 1  # The pair that failed is asked again.
    assert machine_events(judge).filter(kind="grade").count() == 2
    third = machine_run_start(judge=judge, user=analyst)
    assert (third.total, third.status) == (0, "done")


def test_a_missing_api_key_pauses_the_run_and_says_why(model_server, analyst, monkeypatch):
    monkeypatch.delenv("RJ_JUDGE_KEY_TEST", raising=False)
    project = pool_project(1, 1)
    judge = make_judge(project, model_server, api_key_env="RJ_JUDGE_KEY_TEST")

    run = machine_run_start(judge=judge, user=analyst)

    run.refresh_from_db()
    assert run.status == "paused"
    assert "RJ_JUDGE_KEY_TEST" in run.reason
    assert model_server.requests == []


def test_the_key_is_sent_from_the_variable_the_judge_names(model_server, analyst, monkeypatch):
    monkeypatch.setenv("RJ_JUDGE_KEY_TEST", "sk-secret")
    project = pool_project(1, 1)
    judge = make_judge(project, model_server, api_key_env="RJ_JUDGE_KEY_TEST")

    machine_run_start(judge=judge, user=analyst)

    assert model_server.headers[-1]["authorization"] == "Bearer sk-secret"


def test_machine_grades_change_no_human_number(model_server, analyst):
    project = pool_project(2, 2)
    model_server.default = 3
    judge = make_judge(project, model_server)
    before = list(QueuePair.objects.values_list("grades", "needed", "answered"))

    machine_run_start(judge=judge, user=analyst)

    assert machine_events(judge).count() == 4
    assert list(QueuePair.objects.values_list("grades", "needed", "answered")) == before
    assert not PairGrade.objects.exists()


def test_deleting_a_project_takes_its_judges_runs_and_answers(model_server, analyst, rater):
    from judgements.bulk import project_delete_fast
    from judgements.machine.canaries import machine_canaries_run
    from judgements.models import MachineAnswer, MachineCanary, MachineJudge, Project
    from judgements.services import judgement_record

    project = pool_project(2, 2)
    document = project.documents.order_by("external_id").first()
    query = project.queries.get(text="query 0")
    judgement_record(rater=rater, query=query, document=document, grade=0)
    judge = make_judge(project, model_server)
    machine_run_start(judge=judge, user=analyst)
    assert machine_canaries_run(judge=judge) == 2  # One pair, both traps.

    with transaction.atomic():  # As the deletion job runs it (its triggers deferred).
        project_delete_fast(project.slug)

    assert not Project.objects.exists()
    assert not MachineJudge.objects.exists() and not MachineRun.objects.exists()
    assert not MachineAnswer.objects.exists() and not MachineRunItem.objects.exists()
    assert not MachineCanary.objects.exists() and not Judgement.objects.exists()
