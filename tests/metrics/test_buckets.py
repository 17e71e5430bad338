import datetime as dt

import pytest

from metrics.buckets import bucket_end, bucket_ends


def utc(*args):
    return dt.datetime(*args, tzinfo=dt.UTC)


def test_a_moment_inside_an_hour_belongs_to_the_hour_ending_next():
    assert bucket_end(utc(2026, 11, 3, 13, 35)) == utc(2026, 11, 3, 14)


def test_a_boundary_is_its_own_bucket_end():
    assert bucket_end(utc(2026, 11, 3, 14)) == utc(2026, 11, 3, 14)
    assert bucket_end(utc(2026, 11, 3), "day") == utc(2026, 11, 3)


def test_days_end_at_utc_midnight_whatever_the_input_zone():
    cet = dt.timezone(dt.timedelta(hours=1))
    moment = dt.datetime(2026, 11, 4, 0, 30, tzinfo=cet)  # 23:30 UTC on the 3rd
    assert bucket_end(moment, "day") == utc(2026, 11, 4)


def test_bucket_ends_cover_the_range_inclusively():
    ends = bucket_ends(utc(2026, 11, 1, 8), utc(2026, 11, 3, 8), "day")
    assert ends == [utc(2026, 11, 2), utc(2026, 11, 3), utc(2026, 11, 4)]


def test_an_unknown_step_is_refused():
    with pytest.raises(ValueError, match="every must be one of hour, day"):
        bucket_ends(utc(2026, 11, 1), utc(2026, 11, 2), "week")
