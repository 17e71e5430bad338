"""Request templates: checked when saved, filled in inside the JSON (never its text)."""

import json

import pytest

from judgements.engines.templates import (
    QueryValues,
    TemplateError,
    flat_parameters,
    template_fill,
    template_parse,
)


def test_a_template_that_is_not_json_names_the_line_and_column():
    with pytest.raises(TemplateError, match=r"not valid JSON: .* \(line 2, column 4\)"):
        template_parse('{"query":\n  {match}}', kind="elasticsearch")


def test_a_template_must_name_the_query():
    with pytest.raises(TemplateError, match=r"does not name \{\{query\}\}"):
        template_parse('{"query": {"match_all": {}}}', kind="elasticsearch")


def test_an_unknown_placeholder_is_refused_with_the_known_ones():
    with pytest.raises(TemplateError, match=r"Unknown placeholder \{\{qurey\}\}"):
        template_parse('{"q": "{{qurey}}"}', kind="solr")


def test_a_template_must_be_an_object():
    with pytest.raises(TemplateError, match="must be a JSON object"):
        template_parse('["{{query}}"]', kind="json")


def test_quotes_and_backslashes_in_a_query_cannot_change_the_requests_shape():
    parsed = template_parse('{"query": {"match": {"text": "{{query}}"}}}', kind="elasticsearch")
    text = 'wing" } , "size": 10000, "x": "\\'

    filled = template_fill(parsed, QueryValues(text), depth=10)

    assert filled == {"query": {"match": {"text": text}}}
    assert json.loads(json.dumps(filled)) == filled


def test_depth_alone_in_a_string_becomes_a_number_and_other_values_are_filled():
    parsed = template_parse(
        '{"q": "{{query}} {{description}}", "id": "{{external_id}}", "size": "{{ depth }}"}',
        kind="json",
    )

    filled = template_fill(parsed, QueryValues("wing", "lift", "Q7"), depth=25)

    assert filled == {"q": "wing lift", "id": "Q7", "size": 25}


def test_solr_parameters_repeat_a_list_and_refuse_objects():
    assert flat_parameters({"q": "x", "fq": ["a:1", "b:2"], "rows": 5, "debug": True}) == [
        ("q", "x"),
        ("fq", "a:1"),
        ("fq", "b:2"),
        ("rows", "5"),
        ("debug", "true"),
    ]
    with pytest.raises(TemplateError, match='"facet" must be text'):
        flat_parameters({"q": "x", "facet": {"field": "y"}})
