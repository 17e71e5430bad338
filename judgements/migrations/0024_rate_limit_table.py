from django.db import migrations

# Rate limits move from Django's database cache (relevance_judge_cache, made by 0013)
# to a table of their own that config.api.throttles reads and writes in one statement
# per request: the cache took eight to ten statements and a pickle of the whole
# history per API call. One row per client: its theoretical arrival time (seconds
# since the epoch; see the throttles' module) and when the row may be pruned. Going back re-creates the cache table as createcachetable makes it.
FORWARD = """
CREATE TABLE api_rate_limit (
    key varchar(255) PRIMARY KEY,
    tat double precision NOT NULL,
    expires timestamp with time zone NOT NULL
);
CREATE INDEX api_rate_limit_expires ON api_rate_limit (expires);
DROP TABLE IF EXISTS relevance_judge_cache;
"""
BACKWARD = """
DROP TABLE api_rate_limit;
CREATE TABLE relevance_judge_cache (
    cache_key varchar(255) NOT NULL PRIMARY KEY,
    value text NOT NULL,
    expires timestamp with time zone NOT NULL
);
CREATE INDEX relevance_judge_cache_expires ON relevance_judge_cache (expires);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0023_count_pairs_once"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
