"""Guidelines Markdown as raters see it (issue 42, point 7: tables render)."""

from judgements.guidelines import guidelines_html

SCALE = """| Grade | Meaning |
|---|---|
| 3 | Exactly what was asked for |
| 0 | <span onclick="x()">Off topic</span> |
"""


def test_a_markdown_table_renders_as_a_table():
    html = guidelines_html(SCALE)

    assert "<table>" in html and "<th>Grade</th>" in html
    assert "<td>Exactly what was asked for</td>" in html


def test_a_table_is_cleaned_like_the_rest():
    html = guidelines_html(SCALE)

    assert "onclick" not in html and "Off topic" in html
