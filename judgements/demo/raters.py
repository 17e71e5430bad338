"""The relevance oracle and three simulated raters with recognisable habits.

`true_grade` turns a query's hidden intent into a 0-3 grade; the raters start from it and
deviate the way real people do: Ann is careful, Ben is generous, Cai is strict and sometimes
cannot decide.  Every random choice comes from a `random.Random` seeded by CRC32 of
(seed, rater, query, document), so a grade never depends on iteration order or process.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import NamedTuple

from .catalogue import Product, Query, stable_int

RATERS = ("rater_ann", "rater_ben", "rater_cai")
CANT_TELL_NOTES = (
    "Can't tell from the listing whether it fits.",
    "The snippet doesn't give the size or rating.",
    "Not sure this is what the description means.",
)
DOUBT_NOTES = ("Close, but not quite what was asked for.", "Right product type, wrong spec.")


class Verdict(NamedTuple):
    """One rater's answer: a grade (None means "can't tell") and an optional note."""

    grade: int | None
    note: str


def rng_for(seed: int, *parts: str) -> random.Random:
    """A generator seeded from the key, stable across runs and Python processes."""
    return random.Random(stable_int(":".join([str(seed), *parts])))


def true_grade(query: Query, product: Product) -> int:
    """Grade a product against the query's hidden intent (the "ground truth" of the demo).

    Wrong kind: 0, or 1 for a related kind sharing a must-have (e.g. a 2-person footprint
    for a 2-person tent).  Right kind: 0 if a hard requirement is missing or a rejected tag
    is present; 1 if one must-have is missing; 2 if all are met; 3 if also a nice-to-have
    (or there are none).  An avoided tag caps the grade at 1.
    """
    intent, tags = query.intent, product.tags
    if product.kind not in intent.kinds:
        shares_need = not intent.must or bool(intent.must & tags)
        return 1 if product.kind in intent.related and shares_need else 0
    if intent.reject & tags or intent.hard - tags:
        return 0
    missing = len(intent.must - tags)
    if missing:
        return 1 if missing == 1 else 0
    grade = 3 if not intent.nice or intent.nice & tags else 2
    return min(grade, 1) if intent.avoid & tags else grade


def _clamp(grade: int) -> int:
    return max(0, min(3, grade))


def _careful(truth: int, rng: random.Random) -> Verdict:
    """Ann: the true grade, off by one about one time in fifteen."""
    roll = rng.random()
    if roll < 0.035:
        return Verdict(_clamp(truth - 1), "")
    if roll < 0.07:
        return Verdict(_clamp(truth + 1), "")
    note = rng.choice(DOUBT_NOTES) if truth == 1 and rng.random() < 0.1 else ""
    return Verdict(truth, note)


def _lenient(truth: int, rng: random.Random) -> Verdict:
    """Ben: rounds partial and good matches up, plus a little noise either way."""
    grade = truth + 1 if truth in (1, 2) and rng.random() < 0.4 else truth
    roll = rng.random()
    if roll < 0.04:
        grade -= 1
    elif roll < 0.08:
        grade += 1
    return Verdict(_clamp(grade), "")


def _strict(truth: int, rng: random.Random) -> Verdict:
    """Cai: marks down good matches, and answers "can't tell" when a listing is unclear."""
    if truth > 0 and rng.random() < 0.08:
        return Verdict(None, rng.choice(CANT_TELL_NOTES))
    grade = truth - 1 if truth >= 2 and rng.random() < 0.3 else truth
    if rng.random() < 0.04:
        grade += rng.choice((-1, 1))
    note = rng.choice(DOUBT_NOTES) if grade == 1 and rng.random() < 0.15 else ""
    return Verdict(_clamp(grade), note)


HABITS: dict[str, Callable[[int, random.Random], Verdict]] = {
    "rater_ann": _careful,
    "rater_ben": _lenient,
    "rater_cai": _strict,
}


def simulated_verdict(rater: str, query: Query, product: Product, seed: int) -> Verdict:
    """What `rater` answers for this pair; the same inputs always give the same verdict."""
    rng = rng_for(seed, rater, query.text, product.external_id)
    return HABITS[rater](true_grade(query, product), rng)
