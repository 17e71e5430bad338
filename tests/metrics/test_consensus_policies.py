"""metrics.core.consensus.REGISTERED is the one list of consensus policies: a policy added
to it at run time (one rule function, one entry) is a setting, a metric name, a choice of
the forms and the API, a label, and flows through the packed rows to NDCG."""

import numpy as np
import pytest
from django.utils import timezone

from judgements.models import Hit, PackedPolicy, Project, QueryGrades, RankedGrades
from judgements.packed import packed_fill
from metrics import evaluate
from metrics.core import consensus as core
from metrics.core import ndcg
from metrics.dashboards.labels import CONSENSUS_LABELS
from metrics.forms import RatersForm
from metrics.registry import MetricSpec
from tests.factories import JudgementFactory, UserFactory


def _highest(ordered, bounds, counts):
    """The highest current grade (grades come sorted within each pair)."""
    last = np.where(counts > 0, bounds[1:] - 1, 0)
    picked = ordered[last] if len(ordered) else np.zeros(len(counts))
    return np.where(counts > 0, picked, np.nan)


@pytest.fixture
def highest_policy():
    entry = core.Policy("max", _highest, "the highest grade", "highest")
    core.REGISTERED.append(entry)
    yield entry
    core.REGISTERED.remove(entry)


def _grade(query_with_hits, raters, rank: int, grades: list[int]):
    document = query_with_hits.hits.get(rank=rank).document
    for rater, value in zip(raters, grades, strict=False):
        JudgementFactory(rater=rater, query=query_with_hits, document=document, grade=value)


def test_a_policy_added_at_run_time_is_a_choice_everywhere(highest_policy):
    assert "max" in core.policy_names()
    assert MetricSpec(consensus="max").name.split()[6] == "max"
    assert MetricSpec.parse(MetricSpec(consensus="max").name).consensus == "max"
    assert CONSENSUS_LABELS["max"] == "highest"
    assert ("max", "highest") in RatersForm.base_fields["consensus"].choices
    assert ("max", "the highest grade") in Project._meta.get_field("consensus").choices
    assert core.consensus([1, 3, 2], [0, 3], "max").tolist() == [3.0]


def test_without_the_entry_the_policy_is_refused():
    assert "max" not in core.policy_names()
    with pytest.raises(ValueError, match="consensus must be one of"):
        MetricSpec(consensus="max")
    with pytest.raises(ValueError, match="policy must be one of"):
        core.consensus([1], [0, 1], "max")


def test_a_policy_added_at_run_time_flows_through_the_packed_rows_to_ndcg(
    project, query_with_hits, rater, other_rater, highest_policy
):
    third = UserFactory(username="third", roles=["rater"])
    _grade(query_with_hits, [rater, other_rater, third], 1, [0, 1, 3])
    _grade(query_with_hits, [rater, other_rater], 2, [2, 2])
    _grade(query_with_hits, [rater, other_rater], 3, [3, 0])
    # The rows of the four policies the migration recorded were filled; the new one
    # is not recorded yet, so the next fill marks every query and writes it too.
    PackedPolicy.objects.filter(name="max").delete()
    result_list = query_with_hits.hits.first().result_list
    spec = MetricSpec(k=3, consensus="max")
    now = timezone.now()

    # A reader of a policy not filled yet lays the list out from the pair grades and
    # writes nothing; the next fill (the refresh's) records it and writes its rows.
    grades, result = evaluate.result_list_evaluate(result_list, spec, as_of=now)
    assert not PackedPolicy.objects.filter(name="max").exists()
    packed_fill(project.pk)

    assert PackedPolicy.objects.filter(name="max").exists()
    assert not QueryGrades.objects.filter(stale=True).exists()
    row = RankedGrades.objects.get(result_list=result_list, query=query_with_hits, policy="max")
    ranked = np.frombuffer(bytes(row.ranked), dtype=">f8")
    assert ranked[:3].tolist() == [3.0, 2.0, 3.0]
    hits = Hit.objects.filter(result_list=result_list, query=query_with_hits).order_by("rank")
    highest = {1: 3.0, 2: 2.0, 3: 3.0}
    ranked_max = [highest.get(hit.rank) for hit in hits]
    expected = ndcg(ranked_max, list(highest.values()), k=3).ndcg
    assert result.ndcg.tolist() == [expected]
    # The same number from the log, where the packed rows are not used.
    assert grades.ranked_grades[:3].tolist() == [3.0, 2.0, 3.0]
    from_log = evaluate.result_list_evaluate(
        result_list, spec, as_of=now, pairs=_logged(project, now)
    )[1]
    assert from_log.ndcg.tolist() == [expected]


def _logged(project, as_of):
    from metrics.selectors import logged_pair_grades

    return logged_pair_grades(project.pk, as_of=as_of, policy="max")


def test_a_grade_marks_its_query_stale_until_the_next_fill(project, query_with_hits, rater):
    packed_fill()
    assert not QueryGrades.objects.filter(stale=True).exists()
    _grade(query_with_hits, [rater], 1, [2])
    assert set(QueryGrades.objects.filter(stale=True).values_list("query_id", flat=True)) == {
        query_with_hits.pk
    }
    assert packed_fill(project.pk) == 1
    assert not QueryGrades.objects.filter(stale=True).exists()
