"""What a machine judge is asked and how its answer is read: no I/O, no model call.

The template is Python ``str.format`` text with the fields of ``PROMPT_FIELDS``; its
version is the first 12 hex digits of its SHA-256, stored with every answer, so grades
from two wordings of the prompt can be told apart.
"""

import hashlib
import json
import re
from dataclasses import dataclass
from string import Formatter

PROMPT_FIELDS = {
    "query": "the query's text",
    "description": "the information need (the query's description)",
    "title": "the document's title",
    "url": "the document's URL",
    "snippet": "the document's snippet",
    "fields": "the document's other fields, as JSON",
    "scale": "the project's grades, one per line: value, label, description",
    "grades": "the grade values, e.g. 0, 1, 2, 3",
    "guidelines": "the project's guidelines (Markdown)",
}
# The largest rationale kept; a model that writes an essay is cut here.
RATIONALE_CHARS = 2000


def prompt_version(template: str) -> str:
    return hashlib.sha256(template.encode()).hexdigest()[:12]


def template_errors(template: str) -> list[str]:
    """What keeps ``template`` from rendering, in words an analyst can act on."""
    try:
        names = [name for _, name, _, _ in Formatter().parse(template) if name is not None]
    except ValueError as error:
        return [f"The template does not parse: {error} (write {{{{ and }}}} for braces)."]
    unknown = sorted({name for name in names if name not in PROMPT_FIELDS})
    if unknown:
        known = ", ".join(f"{{{name}}}" for name in PROMPT_FIELDS)
        return [f"Unknown fields {', '.join(unknown)}; the template may use {known}."]
    if not names:
        return ["The template uses no field: put at least {query} and {title} in it."]
    return []


@dataclass(frozen=True)
class Pair:
    """What the judge sees of one pair."""

    query: str
    description: str
    title: str
    url: str
    snippet: str
    fields: dict


def render(template: str, pair: Pair, *, scale: list[dict], guidelines: str) -> str:
    lines = "\n".join(f"{s['value']} = {s['label']}: {s.get('description', '')}" for s in scale)
    return template.format(
        query=pair.query,
        description=pair.description or "(none given)",
        title=pair.title,
        url=pair.url,
        snippet=pair.snippet,
        fields=json.dumps(pair.fields, ensure_ascii=False, sort_keys=True),
        scale=lines,
        grades=", ".join(str(s["value"]) for s in scale),
        guidelines=guidelines or "(none)",
    )


class UnreadableAnswer(ValueError):
    """The model answered, but not with a grade on the scale."""


# A grade is a few digits: a longer run of them is no grade (and past 4,300 digits
# Python's int() refuses it).
GRADE_TEXT = re.compile(r"-?[0-9]{1,9}")
GRADE_RE = re.compile(r'"grade"\s*:\s*"?(-?\d+)"?')


def read_answer(content: str, grades: list[int]) -> tuple[int, str]:
    """The grade and rationale in a model's reply: a JSON object ``{"grade", "rationale"}``,
    alone or inside other text (models wrap JSON in prose or code fences).

    Raises ``UnreadableAnswer`` saying what came back when no grade on the scale is found.
    """
    grade, rationale = None, ""
    start, end = content.find("{"), content.rfind("}")
    if 0 <= start < end:
        try:
            answer = json.loads(content[start : end + 1])
            grade, rationale = answer.get("grade"), str(answer.get("rationale", ""))
        except (ValueError, AttributeError, RecursionError):
            # Not JSON (or a number json refuses): the grade's own text, if it has one.
            match = GRADE_RE.search(content)
            grade = match and match.group(1)
    if isinstance(grade, str):
        grade = int(grade) if GRADE_TEXT.fullmatch(grade) else None
    if isinstance(grade, bool) or not isinstance(grade, int) or grade not in grades:
        shown = content.strip()[:200] or "(an empty reply)"
        if len(content.strip()) > 200:
            shown += "..."
        raise UnreadableAnswer(f"no grade of {grades} in the answer: {shown}")
    return grade, rationale[:RATIONALE_CHARS]
