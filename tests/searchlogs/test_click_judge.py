"""Click models as machine judges: grades from clicks that must earn their vote against
the human grades, like a language model's (judgements.machine.certification)."""

import numpy as np
import pytest

from judgements.machine.certification import judge_agreement
from judgements.machine.gate import certified, gate_of
from judgements.models import Judgement, MachineJudge
from searchlogs.click_judge import click_judge_answer, click_judge_create
from searchlogs.services import search_log_ingest
from tests.factories import DocumentFactory, JudgementFactory, QueryFactory, UserFactory
from tests.searchlogs.clicks_from_grades import clicks_log


@pytest.fixture
def graded(project):
    """40 queries of 8 documents each, graded 0-3 by a human rater (known grades)."""
    rng = np.random.default_rng(11)
    rater = UserFactory(roles=["rater"])
    grades = {}
    for number in range(40):
        query = QueryFactory(project=project, text=f"query {number}")
        grades[query.text] = {}
        for slot in range(8):
            document = DocumentFactory(project=project, external_id=f"D{number}-{slot}")
            grade = int(rng.integers(0, 4))
            JudgementFactory(query=query, document=document, rater=rater, grade=grade)
            grades[query.text][document.external_id] = grade
    return project, grades


@pytest.mark.parametrize(
    ("clicks", "model", "floor"),
    [("pbm", "pbm", 0.8), ("pbm", "coec", 0.7), ("cascade", "pbm", 0.6)],
)
def test_a_click_model_judge_earns_its_vote_on_clicks_drawn_from_human_grades(
    graded, clicks, model, floor
):  # fmt: skip
    project, grades = graded
    search_log_ingest(project=project, upload=[clicks_log(grades, sessions=150, model=clicks)])
    judge = click_judge_create(project=project, name=f"{model} judge", model=model)

    counts = click_judge_answer(judge=judge)

    assert counts == {"graded": 320, "cant_tell": 0}
    result = judge_agreement(judge)
    # Krippendorff's alpha (ordinal) against the human grades, on every pair.
    assert result.pairs == 320 and result.alpha > floor
    assert certified(result, gate_of(project))
    events = Judgement.objects.filter(rater=judge.rater)
    assert set(events.values_list("source", flat=True)) == {Judgement.Source.MACHINE}
    assert events.first().machine_answer.model == f"clicks:{model}"


def test_pairs_seen_too_seldom_are_can_t_tell_with_their_count(graded):
    project, grades = graded
    search_log_ingest(project=project, upload=[clicks_log(grades, sessions=4)])
    judge = click_judge_create(project=project, name="PBM", model="pbm", min_impressions=10)

    assert click_judge_answer(judge=judge) == {"graded": 0, "cant_tell": 320}
    note = Judgement.objects.filter(rater=judge.rater).first().note
    assert note == "Can't tell: 4 impressions, fewer than 10."
    assert judge_agreement(judge).pairs == 0
    assert not certified(judge_agreement(judge), gate_of(project))


def test_a_click_judge_needs_no_endpoint_but_a_language_model_does(project):
    judge = click_judge_create(project=project, name="COEC", model="coec")
    assert (judge.kind, judge.base_url) == (MachineJudge.Kind.CLICKS, "")
    with pytest.raises(ValueError, match="model must be one of"):
        click_judge_create(project=project, name="other", model="dbn")
