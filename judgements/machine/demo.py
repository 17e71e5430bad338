"""The demo judge's rule: no model, a fixed word-overlap heuristic.

It exists so that a fresh install (``load_demo``) shows a machine judge with real
certification numbers without any model server. It is labelled as a demo everywhere
it shows (model ``demo-word-overlap``); nobody should trust its grades.
"""

import re

from judgements.machine.client import Reply

DEMO_MODEL = "demo-word-overlap"
WORD = re.compile(r"\w+")


def demo_grade(query: str, text: str, grades: list[int]) -> int:
    """The share of the query's words found in ``text``, mapped onto the scale: none
    is the lowest grade, all the highest, in equal steps between."""
    words = set(WORD.findall(query.lower()))
    if not words:
        return grades[0]
    found = words & set(WORD.findall(text.lower()))
    step = round(len(found) / len(words) * (len(grades) - 1))
    return grades[step]


def demo_reply(pair, grades: list[int]) -> Reply:
    text = f"{pair.title} {pair.snippet}"
    grade = demo_grade(pair.query, text, grades)
    rationale = "Demo rule: share of the query's words in the title and snippet."
    return Reply(grade, rationale, "", 1, 0, 0, 0)
