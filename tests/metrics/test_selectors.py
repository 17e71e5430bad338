import datetime as dt

import numpy as np
import pytest
from django.utils import timezone

from judgements.models import Judgement
from metrics import selectors
from metrics.core.consensus import POLICIES
from tests.factories import JudgementFactory
from tests.judgements.test_pair_grades import random_events

# pair_grades reads the trigger-kept table for the present and replays the log for the
# past; both must give the same arrays to the last bit.


def assert_same(fast, slow):
    assert fast is not None
    for name in ("query_ids", "document_ids", "raters"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert np.array_equal(fast.grades.view(np.int64), slow.grades.view(np.int64))


@pytest.mark.parametrize("seed", [4, 5])
@pytest.mark.parametrize("policy", POLICIES)
def test_the_table_and_the_log_give_identical_grades_now(project, seed, policy):
    random_events(project, seed=seed)
    now = timezone.now()

    fast = selectors.stored_pair_grades(project.pk, as_of=now, policy=policy)
    slow = selectors.logged_pair_grades(project.pk, as_of=now, policy=policy)

    assert len(slow.grades) > 0
    assert_same(fast, slow)
    assert_same(selectors.pair_grades(project.pk, as_of=now, policy=policy), slow)


def test_the_table_and_the_log_agree_on_a_subset_of_queries(project):
    random_events(project, seed=6)
    query_ids = sorted(set(Judgement.objects.values_list("query_id", flat=True)))[:2]
    now = timezone.now()
    arguments = {"as_of": now, "policy": "median", "query_ids": query_ids}

    fast = selectors.stored_pair_grades(project.pk, **arguments)

    assert set(fast.query_ids) == set(query_ids)
    assert_same(fast, selectors.logged_pair_grades(project.pk, **arguments))


def test_a_past_moment_is_read_from_the_log(project, query_with_hits, rater):
    document = query_with_hits.hits.get(rank=1).document
    then = timezone.now() - dt.timedelta(days=1)
    pair = {"rater": rater, "query": query_with_hits, "document": document}
    JudgementFactory(**pair, grade=1, created_at=then - dt.timedelta(hours=1))
    JudgementFactory(**pair, grade=3)

    assert selectors.stored_pair_grades(project.pk, as_of=then, policy="mean") is None
    past = selectors.pair_grades(project.pk, as_of=then, policy="mean")
    now = selectors.pair_grades(project.pk, as_of=timezone.now(), policy="mean")
    assert (past.grades.tolist(), now.grades.tolist()) == ([1.0], [3.0])


def test_an_event_dated_in_the_future_sends_now_to_the_log(project, query_with_hits, rater):
    # Imports accept any time stamp; the table then holds a state later than now.
    document = query_with_hits.hits.get(rank=1).document
    pair = {"rater": rater, "query": query_with_hits, "document": document}
    JudgementFactory(**pair, grade=1)
    JudgementFactory(**pair, grade=3, created_at=timezone.now() + dt.timedelta(days=2))
    now = timezone.now()

    assert selectors.stored_pair_grades(project.pk, as_of=now, policy="mean") is None
    assert selectors.pair_grades(project.pk, as_of=now, policy="mean").grades.tolist() == [1.0]


def test_an_unknown_policy_is_refused(project):
    with pytest.raises(ValueError, match="policy must be one of"):
        selectors.pair_grades(project.pk, as_of=timezone.now(), policy="mean; DROP TABLE x")


def test_a_project_without_grades_has_no_pairs_and_its_list_evaluates_to_zero(query_with_hits):
    from metrics.registry import project_spec
    from metrics.services import result_list_evaluate

    project = query_with_hits.project
    pairs = selectors.pair_grades(project.pk, as_of=timezone.now(), policy="mean")
    assert (len(pairs.query_ids), len(pairs.grades)) == (0, 0)

    result_list = project.result_lists.get()
    grades, result = result_list_evaluate(result_list, project_spec(project), as_of=timezone.now())
    assert grades.query_ids.tolist() == [query_with_hits.pk]
    assert (result.ndcg.tolist(), result.judged.tolist()) == ([0.0], [0])
