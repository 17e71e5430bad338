"""The demo catalogue: products of a fictional outdoor shop and the queries shoppers type.

Products are expanded deterministically from the hand-written lines in `product_lines.py`;
prices, weights, colours and ratings get a small stable jitter (from CRC32 of the title, never
Python's salted `hash()`) so near-duplicates from different brands do not look cloned.
Queries come from `query_data.py` with a hidden `Intent` that only the simulated raters see.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from functools import cache
from typing import Any

from .product_lines import ALL_LINES, Line, Variant
from .query_data import QUERIES

SHOP = "https://shop.example.com"
# House brand is cheap, specialist brands charge a premium.
BRAND_PRICE_FACTOR = {"Basecamp Basics": 0.7, "Fjellvik": 1.12, "Kestrel": 1.08}
_VARIANT_CONTROL_KEYS = {"price", "weight_g", "weight_pct", "tags"}


@dataclass(frozen=True)
class Product:
    """A catalogue document plus the hidden facts the relevance oracle grades against."""

    external_id: str
    title: str
    url: str
    snippet: str
    image: str | None
    fields: dict[str, Any]
    kind: str
    tags: frozenset[str]

    def as_document(self) -> dict[str, Any]:
        """The public form loaded into the database: no hidden kind or tags."""
        return {
            "external_id": self.external_id,
            "title": self.title,
            "url": self.url,
            "snippet": self.snippet,
            "image": self.image,
            "fields": dict(self.fields),
        }


@dataclass(frozen=True)
class Intent:
    """What the searcher really wants; see `raters.true_grade` for how it becomes a grade.

    kinds: product kinds that can be relevant at all.  hard: tags without which a product is
    irrelevant.  must: tags that matter; one missing means partially relevant.  nice: tags
    that make a product perfect.  avoid: tags capping the grade at 1.  reject: tags making
    the product irrelevant.  related: other kinds worth at most 1 (e.g. a tent footprint).
    """

    kinds: frozenset[str]
    hard: frozenset[str] = frozenset()
    must: frozenset[str] = frozenset()
    nice: frozenset[str] = frozenset()
    avoid: frozenset[str] = frozenset()
    reject: frozenset[str] = frozenset()
    related: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Query:
    """A shopper's query: the text they typed, the need written for raters, hidden intent."""

    text: str
    description: str
    intent: Intent


def stable_int(key: str) -> int:
    """A process-independent integer for `key` (CRC32), unlike the salted built-in hash()."""
    return zlib.crc32(key.encode("utf-8"))


def slugify(text: str) -> str:
    """URL slug: ASCII lowercase words joined by hyphens."""
    ascii_text = text.encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")


def _template_values(brand: str, model: str, variant: Variant) -> dict[str, Any]:
    values = {k: v for k, v in variant.items() if k not in _VARIANT_CONTROL_KEYS}
    return {"brand": brand, "model": model, **values}


def _weight(line: Line, variant: Variant, jitter_key: int) -> int:
    grams = (line.weight_g + variant.get("weight_g", 0)) * (1 + variant.get("weight_pct", 0) / 100)
    return round(grams * (0.96 + (jitter_key % 9) / 100))


def _price(line: Line, brand: str, variant: Variant, jitter_key: int) -> str:
    base = (line.price + variant.get("price", 0)) * BRAND_PRICE_FACTOR.get(brand, 1.0)
    whole = max(5, round(base * (0.95 + (jitter_key % 11) / 100)))
    return f"{whole - 0.05 if jitter_key % 3 == 0 else whole:.2f}"


def _tags(line: Line, values: dict[str, Any], variant: Variant) -> frozenset[str]:
    text = f"{line.tags.format(**values)} {variant.get('tags', '')}"
    return frozenset(text.split())


def _expand(line: Line, maker_index: int, variant_index: int) -> dict[str, Any]:
    """All fields of one product except its external id (assigned by position later)."""
    brand, model = line.makers[maker_index]
    variant = line.variants[variant_index]
    values = _template_values(brand, model, variant)
    title = line.title.format(**values)
    key = stable_int(title)
    weight_g = _weight(line, variant, key)
    values["kg"] = f"{weight_g / 1000:.2f}"
    snippet = line.snippets[(maker_index + variant_index) % len(line.snippets)]
    slug = slugify(title)
    fields = {
        "brand": brand,
        "category": line.category,
        "price": _price(line, brand, variant, key),
        "colour": line.colours[key % len(line.colours)],
        "weight_g": weight_g,
        "rating": f"{3.5 + (key % 15) / 10:.1f}",
        **{name: template.format(**values) for name, template in line.fields.items()},
    }
    return {
        "title": title,
        "url": f"{SHOP}/p/{slug}",
        "snippet": snippet.format(**values),
        "image": f"{SHOP}/img/{slug}.jpg" if key % 5 == 0 else None,
        "fields": fields,
        "kind": line.kind,
        "tags": _tags(line, values, variant),
    }


@cache
def products() -> tuple[Product, ...]:
    """Every product, in a fixed order, with unique SKU-style ids that are not sequential."""
    expanded = [
        _expand(line, m, v)
        for line in ALL_LINES
        for m in range(len(line.makers))
        for v in range(len(line.variants))
    ]
    return tuple(
        Product(external_id=f"SKU-{10100 + 37 * i + stable_int(item['title']) % 37}", **item)
        for i, item in enumerate(expanded)
    )


@cache
def queries() -> tuple[Query, ...]:
    """The demo queries, in a fixed order."""
    return tuple(
        Query(text, description, Intent(**{k: frozenset(v.split()) for k, v in spec.items()}))
        for text, description, spec in QUERIES
    )
