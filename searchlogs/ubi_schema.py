"""UBI 1.3.0's published JSON Schemas (vendored in searchlogs/schemas/ubi-1.3.0) as
validators, and their errors in our words (the record's field path, what is wrong).

jsonschema-rs (a Rust validator) checks a record in a few microseconds, where the pure
Python ``jsonschema`` takes 150-600: at a million records that is the difference
between a few seconds and several minutes, longer than the whole ingest. The two
``oneOf`` that cannot mean what they say are read as ``anyOf`` (the folder's README).
"""

import copy
import json
from functools import cache
from pathlib import Path

import jsonschema_rs

FOLDER = Path(__file__).resolve().parent / "schemas" / "ubi-1.3.0"
FILES = {"query": "query.request.schema.json", "event": "event.schema.json"}
# Where the published schema says oneOf of ["a common name", "any string"].
ANY_OF = {
    "event": [
        ("properties", "action_name"),
        ("properties", "event_attributes", "properties", "object", "properties",
         "object_id_type"),
    ],
}  # fmt: skip


def published(role: str) -> dict:
    """The schema of ``role`` ("query" or "event") exactly as published."""
    return json.loads((FOLDER / FILES[role]).read_text())


def as_read(role: str) -> dict:
    """The schema as we validate it: the published one, its two oneOf read as anyOf."""
    schema = copy.deepcopy(published(role))
    for path in ANY_OF.get(role, []):
        node = schema
        for key in path:
            node = node[key]
        node["anyOf"] = node.pop("oneOf")
    return schema


@cache
def validator(role: str):
    return jsonschema_rs.validator_for(as_read(role))


def schema_errors(role: str, record: dict) -> list[tuple[str, str]]:
    """(field path, message) for each way ``record`` breaks its schema; [] if it is valid."""
    check = validator(role)
    if check.is_valid(record):
        return []
    return [
        (".".join(map(str, error.instance_path)) or "(record)", error.message)
        for error in check.iter_errors(record)
    ]
