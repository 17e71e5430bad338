"""The machine judges' pages, the overrule, and what raters never see.

charlie (analyst) configures judges, runs them, reads their certification and overrules
their grades; alice (rater) grades the same project and never sees a machine grade;
dave (no role) and anonymous visitors see no judge page.
"""

import pytest
from django.test import Client
from django.urls import reverse

from judgements.models import Judgement, MachineJudge, MachineRun, PairGrade
from judgements.services import judgement_record
from tests.machine.conftest import machine_events, make_judge, pool_project

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def judge_urls(project, judge):
    args = [project.slug, judge.pk]
    return [
        reverse("judgements:machine_judges", args=[project.slug]),
        reverse("judgements:machine_judge", args=args),
        reverse("judgements:machine_progress", args=args),
        reverse("judgements:machine_certification", args=args),
    ]


def test_an_analyst_configures_a_judge_and_the_key_is_never_stored(charlie, model_server):
    project = pool_project(1, 2)
    url = reverse("judgements:machine_judges", args=[project.slug])
    form = {
        "name": "Local llama",
        "base_url": model_server.url,
        "model": "llama3.2:1b",
        "api_key_env": "RJ_JUDGE_KEY_OPENAI",
        # As a browser posts a textarea: CRLF line breaks.
        "prompt_template": "Query: {query}\r\nTitle: {title}\r\nGrades: {grades}",
        "temperature": "0",
        "concurrency": "8",
        "timeout_seconds": "30",
        "max_retries": "2",
        "cost_input_per_1k": "0.0001",
        "cost_output_per_1k": "0.0004",
    }

    response = charlie.post(url, form)

    judge = MachineJudge.objects.get(name="Local llama")
    assert response.status_code == 302 and response.url == judge.get_absolute_url()
    assert judge.rater.username == "machine.shop.local-llama"
    assert judge.prompt_template == "Query: {query}\nTitle: {title}\nGrades: {grades}"
    assert not judge.rater.has_usable_password() and not judge.rater.groups.exists()
    page = charlie.get(judge.get_absolute_url()).content.decode()
    assert "$RJ_JUDGE_KEY_OPENAI" in page


def test_a_bad_template_is_a_form_error_naming_the_fields(charlie, model_server):
    project = pool_project(1, 1)
    url = reverse("judgements:machine_judges", args=[project.slug])

    response = charlie.post(
        url,
        {
            "name": "J",
            "base_url": model_server.url,
            "model": "m",
            "prompt_template": "{qury}",
            "temperature": "3",
            "concurrency": "1",
            "timeout_seconds": "5",
            "max_retries": "0",
            "cost_input_per_1k": "0",
            "cost_output_per_1k": "0",
        },
    )

    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "Unknown fields qury" in errors["prompt_template"][0]
    assert "temperature" in errors
    assert not MachineJudge.objects.exists()


def test_a_run_starts_from_the_page_and_its_progress_is_json(charlie, model_server):
    project = pool_project(2, 2)
    judge = make_judge(project, model_server)

    response = charlie.post(
        reverse("judgements:machine_run", args=[project.slug, judge.pk]), {"max_pairs": "3"}
    )

    assert response.status_code == 302
    progress = charlie.get(reverse("judgements:machine_progress", args=[project.slug, judge.pk]))
    assert progress.json() | {"cost": None} == {
        "status": "done",
        "label": "done",
        "total": 3,
        "graded": 3,
        "failed": 0,
        "percent": 100,
        "cost": None,
        "reason": "",
        "worker_lost": False,
    }
    page = charlie.get(judge.get_absolute_url()).content.decode()
    assert "table says 0 for q0 d0" in page


def test_a_bad_budget_starts_nothing_and_says_why(charlie, model_server):
    project = pool_project(1, 1)
    judge = make_judge(project, model_server)

    response = charlie.post(
        reverse("judgements:machine_run", args=[project.slug, judge.pk]),
        {"max_pairs": "0", "max_cost": "-1"},
        follow=True,
    )

    message = str(next(iter(response.context["messages"])))
    assert message.startswith("No run was started: max_pairs: A budget of pairs is at least 1.")
    assert not MachineRun.objects.exists()


def test_an_analyst_overrules_a_machine_grade_with_a_new_event(charlie, analyst, model_server):
    project = pool_project(1, 1)
    model_server.default = 3
    judge = make_judge(project, model_server)
    charlie.post(reverse("judgements:machine_run", args=[project.slug, judge.pk]), {})
    (machine,) = machine_events(judge)

    response = charlie.post(
        reverse("judgements:machine_overrule", args=[project.slug, judge.pk]),
        {"judgement": machine.pk, "grade": "1"},
    )

    assert response.status_code == 302
    own = Judgement.objects.get(rater=analyst)
    assert (own.grade, own.source, own.query_id, own.document_id) == (
        1,
        "overrule",
        machine.query_id,
        machine.document_id,
    )
    assert Judgement.objects.filter(pk=machine.pk, grade=3).exists()  # Still in the log.
    # The analyst's grade is a human grade: the pair's grades are [1], the machine's 3
    # left out.
    assert (PairGrade.objects.get().grades, PairGrade.objects.get().raters) == ([1], [analyst.pk])


def test_an_overrule_of_another_judges_event_records_nothing(charlie, rater, model_server):
    project = pool_project(1, 1)
    judge = make_judge(project, model_server)
    document = project.documents.get()
    human = judgement_record(rater=rater, query=project.queries.get(), document=document, grade=2)

    charlie.post(
        reverse("judgements:machine_overrule", args=[project.slug, judge.pk]),
        {"judgement": human.pk, "grade": "1"},
    )

    assert Judgement.objects.count() == 1


def test_the_certification_page_shows_the_numbers(charlie, rater, model_server):
    project = pool_project(1, 3)
    documents = project.documents.order_by("external_id")
    query = project.queries.get()
    for document, grade in zip(documents, [0, 2, 3], strict=True):
        judgement_record(rater=rater, query=query, document=document, grade=grade)
    model_server.answers = {"q0 d0": 0, "q0 d1": 2, "q0 d2": 2}
    judge = make_judge(project, model_server)
    charlie.post(reverse("judgements:machine_run", args=[project.slug, judge.pk]), {})

    page = charlie.get(reverse("judgements:machine_certification", args=[project.slug, judge.pk]))

    assert page.context["result"].pairs == 3
    assert page.context["result"].matrix.tolist()[3] == [0, 0, 1, 0]
    html = page.content.decode()
    assert "Not certified: 3 gold pairs, 50 needed." in html
    assert "-0.3333" in html  # Mean signed difference: the judge under-labels by 1/3.


def test_dashboards_name_whose_grades_they_show(charlie, rater, model_server):
    project = pool_project(1, 2)
    query, documents = project.queries.get(), project.documents.order_by("external_id")
    judgement_record(rater=rater, query=query, document=documents[0], grade=0)
    model_server.default = 3
    judge = make_judge(project, model_server)
    charlie.post(reverse("judgements:machine_run", args=[project.slug, judge.pk]), {})
    url = reverse("metrics:overview", args=[project.slug])

    human = charlie.get(url)
    machine = charlie.get(url, {"grades": "machine"})

    assert "grades: human grades" in human.content.decode()
    assert "grades: machine judges&#x27; grades" in machine.content.decode()
    assert human.context["data"].summaries[0].mean == 0.0
    assert machine.context["data"].summaries[0].mean == 1.0


def test_the_metrics_api_takes_and_names_the_grades_source(charlie, rater, model_server):
    project = pool_project(1, 2)
    query, documents = project.queries.get(), project.documents.order_by("external_id")
    judgement_record(rater=rater, query=query, document=documents[0], grade=0)
    model_server.default = 3
    judge = make_judge(project, model_server)
    charlie.post(reverse("judgements:machine_run", args=[project.slug, judge.pk]), {})
    url = f"/api/result-lists/{project.result_lists.get().pk}/metrics/"

    human, machine = charlie.get(url).json(), charlie.get(url, {"grades": "machine"}).json()
    both = charlie.get(url, {"grades": "both"}).json()
    bad = charlie.get(url, {"grades": "robots"})

    assert (human["grades"], human["mean"]) == ("human", 0.0)
    assert (machine["grades"], machine["mean"]) == ("machine", 1.0)
    # No judge is certified (the gate admits humans only): both is the human consensus.
    assert (both["grades"], both["mean"]) == ("both", 0.0)
    assert bad.status_code == 400 and "grades" in bad.content.decode()


@pytest.mark.parametrize("who", ["rater", "outsider", None])
def test_only_analysts_see_judge_pages(who, request, model_server):
    project = pool_project(1, 1)
    judge = make_judge(project, model_server)
    client = Client()
    if who:
        client.force_login(request.getfixturevalue(who))

    for url in judge_urls(project, judge):
        response = client.get(url)
        assert response.status_code == (403 if who else 302), url


def test_raters_never_see_machine_grades(rater, model_server, analyst):
    project = pool_project(1, 2)
    model_server.default = 3
    judge = make_judge(project, model_server)
    charlie = Client()
    charlie.force_login(analyst)
    charlie.post(reverse("judgements:machine_run", args=[project.slug, judge.pk]), {})
    assert machine_events(judge).count() == 2
    alice = Client()
    alice.force_login(rater)

    # The machine took no slot: alice's queue still offers both pairs.
    rate = alice.get(reverse("judgements:rate", args=[project.slug])).content.decode()
    assert "table says" not in rate and "machine" not in rate.lower()
    assert alice.get("/api/judgements/").json()["results"] == []
    mine = alice.get(reverse("judgements:my_judgements", args=[project.slug])).content.decode()
    assert "table says" not in mine
    assert "q0 d0" in rate  # The queue's first pair, still open for her.
    next_pair = alice.get(f"/api/projects/{project.slug}/next/")
    assert next_pair.status_code == 200
    assert "table says" not in next_pair.content.decode()
