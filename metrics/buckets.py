"""UTC time buckets for metric series. A point "as of" a bucket end counts every
judgement recorded up to and including that moment."""

import datetime as dt

STEPS = {"hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1)}


def bucket_end(moment: dt.datetime, every: str = "hour") -> dt.datetime:
    """The end of the bucket holding ``moment``: the next boundary, or itself."""
    moment = moment.astimezone(dt.UTC)
    start = moment.replace(minute=0, second=0, microsecond=0)
    if every == "day":
        start = start.replace(hour=0)
    return start if start == moment else start + STEPS[every]


def bucket_ends(since: dt.datetime, until: dt.datetime, every: str) -> list[dt.datetime]:
    """Every bucket end from the one holding ``since`` to the one holding ``until``."""
    if every not in STEPS:
        raise ValueError(f"every must be one of {', '.join(STEPS)}, not {every!r}")
    ends, end = [], bucket_end(since, every)
    last = bucket_end(until, every)
    while end <= last:
        ends.append(end)
        end += STEPS[every]
    return ends
