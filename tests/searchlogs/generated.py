"""Generated search logs as columns (numpy), for the engine tests and the benchmarks.

``generated_log(n, ...)`` draws about ``n`` events, sessions of 1-4 results pages whose
clicks fall by rank and each have a dwell (some an end-of-session marker), with a fixed
seed; ``log_table`` gives them as an Arrow table of our layout (searchlogs.parquet),
``copy_rows`` as the rows search_log_ingest would COPY into the events table (so a
large log can be loaded without parsing JSON), ``jsonl`` as our JSON Lines.
"""

import io
import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

START_US = 1_790_000_000 * 1_000_000  # 2026-09-21, well before any test's "now"
KINDS = np.array(["impression", "click", "dwell"])


@dataclass
class Log:
    type: np.ndarray  # 0 impression, 1 click, 2 dwell
    id: np.ndarray  # object array of str
    session: np.ndarray
    time_us: np.ndarray
    query: np.ndarray  # str ("" for clicks and dwells)
    answered: np.ndarray
    document: np.ndarray
    rank: np.ndarray  # 0 where none
    click: np.ndarray
    seconds: np.ndarray  # nan where none
    end_of_session: np.ndarray

    def __len__(self) -> int:
        return len(self.type)


def generated_log(events: int, texts: list[str], *, days: int = 30, seed: int = 0, first=0):
    """About ``events`` events over ``days`` days; sessions numbered from ``first``."""
    rng = np.random.default_rng(seed)
    # An impression brings 0.7 clicks on average, each with its dwell: ~2.4 events.
    sessions = max(int(events / (2.5 * 2.4)), 1)
    pages_per = rng.integers(1, 5, sessions)
    page_session = np.repeat(np.arange(sessions), pages_per)
    pages = len(page_session)
    page_no = np.arange(pages) - np.repeat(np.cumsum(pages_per) - pages_per, pages_per)
    start = START_US + rng.integers(0, days * 86_400, sessions) * 1_000_000
    page_time = start[page_session] + page_no * rng.integers(20, 90, pages) * 1_000_000
    query = rng.zipf(1.3, pages) % len(texts)
    clicked = rng.random((pages, 3)) < np.array([0.4, 0.2, 0.1])
    click_page, click_rank0 = np.nonzero(clicked)
    clicks = len(click_page)
    click_time = page_time[click_page] + (click_rank0 + 1) * rng.integers(1, 6, clicks) * 1_000_000
    seconds = np.round(rng.exponential(20, clicks), 1)
    ended = rng.random(clicks) < 0.05
    names = np.array(texts, dtype=object)
    session_name = np.char.add("s", (page_session + first).astype(str)).astype(object)
    page_id = np.char.add(np.char.add(session_name.astype(str), "p"), page_no.astype(str))
    click_id = np.char.add(np.char.add(page_id[click_page], "c"), (click_rank0 + 1).astype(str))
    document = np.char.add(np.char.add("D", page_no[click_page].astype(str)),
                           (click_rank0 + 1).astype(str))  # fmt: skip
    return _joined(
        (0, page_id, session_name, page_time, names[query], rng.random(pages) < 0.05),
        (1, click_id, session_name[click_page], click_time, document, click_rank0 + 1),
        (2, np.char.add(click_id, "d"), session_name[click_page],
         click_time + (seconds * 1e6).astype(np.int64), click_id, seconds, ended),
    )  # fmt: skip


def _joined(pages, clicks, dwells) -> Log:
    _, page_id, page_session, page_time, query, answered = pages
    _, click_id, click_session, click_time, document, rank = clicks
    _, dwell_id, dwell_session, dwell_time, click, seconds, ended = dwells
    n_p, n_c, n_d = len(page_id), len(click_id), len(dwell_id)
    empty = np.full
    return Log(
        type=np.concatenate([empty(n_p, 0), empty(n_c, 1), empty(n_d, 2)]).astype(np.int8),
        id=np.concatenate([page_id, click_id, dwell_id]).astype(object),
        session=np.concatenate([page_session, click_session, dwell_session]).astype(object),
        time_us=np.concatenate([page_time, click_time, dwell_time]).astype(np.int64),
        query=np.concatenate([query, empty(n_c + n_d, "", object)]).astype(object),
        answered=np.concatenate([answered, np.zeros(n_c + n_d, bool)]),
        document=np.concatenate(
            [empty(n_p, "", object), document.astype(object), empty(n_d, "", object)]
        ),
        rank=np.concatenate([np.zeros(n_p, np.int64), rank, np.zeros(n_d, np.int64)]),
        click=np.concatenate([empty(n_p + n_c, "", object), click.astype(object)]),
        seconds=np.concatenate([np.full(n_p + n_c, np.nan), np.where(ended, np.nan, seconds)]),
        end_of_session=np.concatenate([np.zeros(n_p + n_c, bool), ended]),
    )


def log_table(log: Log) -> pa.Table:
    """The log in our Parquet layout (searchlogs.parquet.OURS)."""
    impression, click, dwell = (log.type == k for k in range(3))
    return pa.table({
        "type": pa.array(KINDS[log.type].astype(object)),
        "id": pa.array(log.id, pa.string()),
        "session": pa.array(log.session, pa.string()),
        "time": pa.array(log.time_us, pa.timestamp("us", tz="UTC")),
        "query": pa.array(log.query, pa.string(), mask=~impression),
        "answered": pa.array(log.answered, mask=~impression),
        "document": pa.array(log.document, pa.string(), mask=~click),
        "rank": pa.array(log.rank, pa.int32(), mask=~click),
        "click": pa.array(log.click, pa.string(), mask=~dwell),
        "seconds": pa.array(log.seconds, pa.float64(), mask=~dwell | log.end_of_session),
        "end_of_session": pa.array(log.end_of_session, mask=~dwell),
    })  # fmt: skip


def jsonl(log: Log) -> bytes:
    """The log as our JSON Lines (in time order, as a logger writes it)."""
    out = io.StringIO()
    for i in np.argsort(log.time_us, kind="stable").tolist():
        moment = np.datetime64(int(log.time_us[i]), "us").astype(str) + "Z"
        event = {"type": KINDS[log.type[i]], "id": log.id[i], "session": log.session[i],
                 "time": moment}  # fmt: skip
        if log.type[i] == 0:
            event |= {"query": log.query[i], "answered": bool(log.answered[i])}
        elif log.type[i] == 1:
            event |= {"document": log.document[i], "rank": int(log.rank[i])}
        elif log.end_of_session[i]:
            event |= {"click": log.click[i], "end_of_session": True}
        else:
            event |= {"click": log.click[i], "seconds": float(log.seconds[i])}
        out.write(json.dumps(event) + "\n")
    return out.getvalue().encode()


def copy_rows(log: Log, project_id: int, query_ids: dict[str, int]) -> bytes:
    """The rows search_log_ingest COPYs for this log (searchlogs.services.COLUMNS), for
    texts that need neither escaping nor normalising (as generated)."""
    moments = np.datetime_as_string(log.time_us.astype("datetime64[us]"), unit="us",
                                     timezone="UTC")  # fmt: skip
    ids = [query_ids.get(text) for text in log.query.tolist()]
    null = "\\N"
    columns = [
        [str(project_id)] * len(log), log.id.tolist(), log.type.astype(str).tolist(),
        log.session.tolist(), moments.tolist(), log.query.tolist(), log.query.tolist(),
        [null if i is None else str(i) for i in ids], ["[]"] * len(log),
        np.where(log.answered, "t", "f").tolist(), log.document.tolist(),
        [str(r) if r else null for r in log.rank.tolist()], log.click.tolist(),
        [null if s != s else repr(s) for s in log.seconds.tolist()],
        np.where(log.end_of_session, "t", "f").tolist(),
    ]  # fmt: skip
    return ("\n".join(map("\t".join, zip(*columns, strict=True))) + "\n").encode()


def events_table(events: list[dict]) -> pa.Table:
    """Events of our JSON Lines format (as dicts) in our Parquet layout."""
    from datetime import datetime

    def column(name, kind=None):
        return pa.array([event.get(name) for event in events], kind or pa.string())

    return pa.table({
        "type": column("type"), "id": column("id"), "session": column("session"),
        "time": pa.array([datetime.fromisoformat(event["time"]) for event in events],
                         pa.timestamp("us", tz="UTC")),
        "query": column("query"), "answered": column("answered", pa.bool_()),
        "document": column("document"), "rank": column("rank", pa.int32()),
        "click": column("click"), "seconds": column("seconds", pa.float64()),
        "end_of_session": column("end_of_session", pa.bool_()),
    })  # fmt: skip
