"""Rater guidelines for the demo project (Markdown shown on the judging screen)."""

GUIDELINES = """\
# How to grade outdoor gear search results

You see a shopper's query, a short description of what they need, and one product.
Grade how well **this product** meets **that need**, judged from the title, snippet and
listed fields. Ignore price and brand unless the description mentions them, and do not
guess what other results might be on the page.

## The scale

- **3 - Perfect**: exactly what the description asks for, including the details it calls
  ideal. *"2 person backpacking tent"* -> Ridgeline Featherlite 2 Ultralight Backpacking Tent.
- **2 - Relevant**: meets every requirement but misses a nice-to-have.
  *"headlamp rechargeable"* -> a rechargeable headlamp that charges over micro-USB, when
  the description calls USB-C a plus.
- **1 - Partially relevant**: the right kind of product with one requirement missed, or a
  closely related item the description names. *"waterproof hiking boots women"* -> the
  men's version of the same boot; *"2 person backpacking tent"* -> a two-person footprint.
- **0 - Irrelevant**: the wrong kind of product, or one the description rules out.
  *"tent stakes aluminum"* -> a tent that comes with stakes; *"4 season tent"* -> any
  three-season tent.

## When in doubt

- Read the description, not just the query: misspelt queries (*"sleping bag summer"*)
  mean what the description says.
- Sizes, temperature ratings and gender fits matter when the description asks for them.
- If the listing really does not tell you (no size, no rating), choose **Can't tell**
  rather than guessing, and say why in the note.
- Grade each product on its own; two near-identical products should get the same grade.
"""
