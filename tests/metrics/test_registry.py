import pytest

from metrics.registry import MetricSpec, project_spec
from tests.factories import ProjectFactory


def test_the_name_carries_every_parameter():
    spec = MetricSpec(k=5, gain="linear", discount="rank", ideal="returned", consensus="median")
    assert spec.name == "ndcg@5 linear rank returned cut zero median"


def test_a_name_parses_back_to_its_spec():
    for spec in (MetricSpec(), MetricSpec(k=None, ideal_depth="full", unjudged="remove")):
        assert MetricSpec.parse(spec.name) == spec


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ndcg@10 exponential", "is not a metric name"),
        ("ndcg@x exponential log2 judged cut zero mean", "ndcg or ndcg@K"),
        ("ndcg@10 cubic log2 judged cut zero mean", "gain must be one of"),
        ("ndcg@0 exponential log2 judged cut zero mean", "k must be at least 1"),
    ],
)
def test_a_bad_name_is_refused_saying_what_is_wrong(name, message):
    with pytest.raises(ValueError, match=message):
        MetricSpec.parse(name)


def test_the_project_spec_follows_the_project_settings(db):
    project = ProjectFactory(metric_k=20, metric_gain="linear", consensus="median")
    assert project_spec(project).name == "ndcg@20 linear log2 judged cut zero median"
