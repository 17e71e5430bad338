import pytest

from metrics.registry import MetricSpec, project_spec
from tests.factories import ProjectFactory


def test_the_name_carries_every_parameter():
    spec = MetricSpec(k=5, gain="linear", discount="rank", ideal="returned", consensus="median")
    assert spec.name == "ndcg@5 linear rank returned cut zero median zero judged"


def test_the_name_says_how_negative_grades_count_and_which_queries_the_mean_is_over():
    spec = MetricSpec(negative="penalise", mean_over="all")
    assert spec.name == "ndcg@10 exponential log2 judged cut zero mean penalise all"


def test_a_name_parses_back_to_its_spec():
    for spec in (
        MetricSpec(),
        MetricSpec(k=None, ideal_depth="full", unjudged="remove"),
        MetricSpec(negative="penalise", mean_over="all"),
    ):
        assert MetricSpec.parse(spec.name) == spec


def test_a_seven_word_name_of_before_is_read_as_what_it_was_computed_with():
    # Before the two parameters existed, negative grades counted 0 and means were over
    # every query of the list.
    spec = MetricSpec.parse("ndcg@10 exponential log2 judged cut zero mean")
    assert (spec.negative, spec.mean_over) == ("zero", "all")
    assert spec.name == "ndcg@10 exponential log2 judged cut zero mean zero all"


def test_every_parameter_is_a_field_and_every_choice_has_its_list():
    assert MetricSpec.field_names()[0] == "k"
    assert MetricSpec.field_names()[1:] == tuple(MetricSpec._choices())
    assert MetricSpec._choices()["negative"] == ("zero", "penalise")
    assert MetricSpec._choices()["mean_over"] == ("judged", "all")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ndcg@10 exponential", "is not a metric name"),
        ("ndcg@10 exponential log2 judged cut zero mean zero", "is not a metric name"),
        ("ndcg@x exponential log2 judged cut zero mean", "ndcg or ndcg@K"),
        ("ndcg@10 cubic log2 judged cut zero mean", "gain must be one of"),
        ("ndcg@0 exponential log2 judged cut zero mean", "k must be at least 1"),
        ("ndcg@10 exponential log2 judged cut zero mean subtract judged", "negative must be"),
        ("ndcg@10 exponential log2 judged cut zero mean zero some", "mean_over must be"),
    ],
)
def test_a_bad_name_is_refused_saying_what_is_wrong(name, message):
    with pytest.raises(ValueError, match=message):
        MetricSpec.parse(name)


def test_the_project_spec_follows_the_project_settings(db):
    project = ProjectFactory(metric_k=20, metric_gain="linear", consensus="median")
    assert project_spec(project).name == "ndcg@20 linear log2 judged cut zero median zero judged"

    project.metric_negative, project.metric_mean_over = "penalise", "all"
    assert project_spec(project) == MetricSpec(
        k=20, gain="linear", consensus="median", negative="penalise", mean_over="all"
    )
