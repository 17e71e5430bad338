"""A search log whose clicks are drawn from known grades by a stated click model.

``clicks_log(grades, ...)``: every query is searched ``sessions`` times; each time one of
``rankings`` orders of its documents is shown (real logs see a query under several
rankers and over time, which is what lets a click model tell rank from relevance), and
the searcher clicks by one of two models:

- ``"pbm"``, the position-based model: examined with probability ``1 / rank ** 0.8``,
  clicked when examined with the grade's attractiveness ``ATTRACTIVE[grade]``;
- ``"cascade"`` (Craswell et al. 2008): reads down from rank 1, clicks a document with
  its attractiveness and stops there; skips otherwise.

The log is our JSON Lines: a results page with its ``results``, then a click (and a
dwell) per clicked document.
"""

import json
from datetime import UTC, datetime, timedelta

import numpy as np

ATTRACTIVE = {0: 0.05, 1: 0.2, 2: 0.5, 3: 0.85}
START = datetime(2026, 10, 1, tzinfo=UTC)


def clicks_log(grades: dict[str, dict[str, int]], *, sessions: int, rankings: int = 4,
               model: str = "pbm", seed: int = 0) -> bytes:  # fmt: skip
    """``grades``: query text -> {document external id -> grade}."""
    rng = np.random.default_rng(seed)
    lines, number = [], 0
    for text, documents in grades.items():
        names = list(documents)
        orders = [rng.permutation(len(names)) for _ in range(rankings)]
        for _ in range(sessions):
            number += 1
            shown = [names[i] for i in orders[rng.integers(rankings)]]
            lines += _session(number, text, shown, documents, model, rng)
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _session(number, text, shown, documents, model, rng) -> list[dict]:
    session, moment = f"s{number}", START + timedelta(minutes=number)
    events = [{"type": "impression", "id": f"{session}p", "session": session,
               "time": moment.isoformat(), "query": text, "results": shown}]  # fmt: skip
    for rank, name in enumerate(shown, start=1):
        attractive = rng.random() < ATTRACTIVE[documents[name]]
        examined = model == "cascade" or rng.random() < 1 / rank**0.8
        clicked = attractive and examined
        if clicked:
            at = (moment + timedelta(seconds=rank)).isoformat()
            click = f"{session}c{rank}"
            events.append({"type": "click", "id": click, "session": session, "time": at,
                           "document": name, "rank": rank})  # fmt: skip
            events.append({"type": "dwell", "id": f"{click}d", "session": session, "time": at,
                           "click": click, "seconds": 30.0})  # fmt: skip
            if model == "cascade":
                break
    return events
