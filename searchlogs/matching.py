"""How a logged query text finds the project's query: by normalised text.

The rule: Unicode NFKC, then case folding, then NFKC again (folding can undo
normalisation, as in Unicode's NFKC_Casefold), then every run of whitespace
collapsed to one space and the ends trimmed. So "Tent ", "TENT", "tent" and
the full-width form of "tent" are one query, while "tents" and "tént" are not.
"""

import unicodedata


def normalised(text: str) -> str:
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split())


def query_keys(queries) -> dict[str, int]:
    """Normalised text -> query id, from ``(id, text)`` pairs; the lowest id wins a tie."""
    keys: dict[str, int] = {}
    for query_id, text in sorted(queries):
        keys.setdefault(normalised(text), query_id)
    return keys
