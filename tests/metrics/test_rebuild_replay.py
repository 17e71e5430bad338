"""metrics.core.replay: raters' current grades at any moment of a sorted log (no DB)."""

import random

import numpy as np
import pytest

from metrics.core.consensus import POLICIES, consensus
from metrics.core.replay import current_grades, log_sort


def random_log(seed: int, events: int = 400) -> list[tuple]:
    """(pair, rater, time, id, grade, is_grade) events, times often shared."""
    rng = random.Random(seed)
    ids = rng.sample(range(1, 10 * events), events)
    return [
        (rng.randint(1, 15), rng.randint(1, 4), rng.randint(0, 50), ids[n], *grade(rng))
        for n in range(events)
    ]


def grade(rng) -> tuple[int, bool]:
    is_grade = rng.random() < 0.7
    return (rng.randint(-1, 3) if is_grade else 0), is_grade


def replayed(events, moment, policy) -> tuple[list, list, list]:
    """Event by event: each rater's latest event by (time, id) up to ``moment``."""
    latest = {}
    for pair, rater, time, event_id, value, is_grade in events:
        if time > moment:
            continue
        if (pair, rater) not in latest or (time, event_id) > latest[pair, rater][0]:
            latest[pair, rater] = ((time, event_id), value, is_grade)
    by_pair: dict[int, list] = {}
    for (pair, _), (_, value, is_grade) in sorted(latest.items()):
        if is_grade:
            by_pair.setdefault(pair, []).append(value)
    pairs = sorted(by_pair)
    offsets = np.cumsum([0] + [len(by_pair[pair]) for pair in pairs])
    flat = [value for pair in pairs for value in by_pair[pair]]
    return pairs, consensus(flat, offsets, policy).tolist(), np.diff(offsets).tolist()


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(5))
def test_current_grades_equal_an_event_by_event_replay_at_every_moment(policy, seed):
    events = random_log(seed)
    log = log_sort(*zip(*events, strict=True))
    for moment in range(-1, 52):
        grades = current_grades(log, moment, policy)
        pairs, values, raters = replayed(events, moment, policy)
        assert grades.pair_keys.tolist() == pairs
        assert grades.consensus.tolist() == values
        assert grades.raters.tolist() == raters


def test_a_retraction_or_cant_tell_leaves_the_rater_without_a_grade():
    events = [
        # pair, rater, time, id, grade, is_grade
        (1, 1, 5, 1, 3, True),
        (1, 2, 5, 2, 1, True),
        (1, 1, 9, 3, 0, False),
    ]
    log = log_sort(*zip(*events, strict=True))
    assert current_grades(log, 8, "mean").consensus.tolist() == [2.0]
    assert current_grades(log, 9, "mean").consensus.tolist() == [1.0]


def test_of_two_events_at_the_same_moment_the_higher_id_is_current():
    log = log_sort(*zip((4, 1, 5, 8, 1, True), (4, 1, 5, 7, 3, True), strict=True))
    assert current_grades(log, 5, "mean").consensus.tolist() == [1.0]


def test_an_empty_log_has_no_grades_at_any_moment():
    grades = current_grades(log_sort([], [], [], [], [], []), 10, "median")
    assert len(grades.pair_keys) == len(grades.consensus) == len(grades.raters) == 0
