"""Rate limits for anonymous clients and for scripts that sign in with a token.

Rates are read when a request comes, not at import, so that settings overrides
(tests) and environment changes apply. Browser sessions are not limited.

The limits are DRF's (a client may make ``N`` requests in any period of the rate's
length), but the history lives in PostgreSQL, so that a limit holds across gunicorn
workers and machines: a table (``api_rate_limit``, migration judgements 0024) with a
row per client holding the times of its requests within the period. One statement
per request reads and writes it: an ``INSERT ... ON CONFLICT DO UPDATE`` that appends
the request's time only while fewer than ``N`` times fall inside the period. PostgreSQL
locks the client's row for it, so two workers checking one client at once queue up
and neither misses the other's request; checks of different clients do not wait.
(Django's database cache, used before, took eight to ten statements and a pickle of
the whole history per API call.) Rows whose period has passed are pruned now and then.

Clients are told apart by DRF's ``NUM_PROXIES`` (settings.TRUSTED_PROXIES, as
config.client_ip), never by a header the client may write itself.
"""

import random
from datetime import UTC, datetime

from django.db import connection
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from config.api.tokens import TokenAuthentication

# The request's time joins the client's history only while fewer than the limit of
# the history's times fall inside the period; the times outside it are dropped.
HIT_SQL = """
INSERT INTO api_rate_limit AS rate (key, hits, expires)
SELECT %(key)s, ARRAY[%(now)s::double precision], %(expires)s WHERE %(limit)s > 0
ON CONFLICT (key) DO UPDATE
SET hits = ARRAY(SELECT hit FROM unnest(rate.hits) hit WHERE hit > %(since)s)
           || %(now)s::double precision,
    expires = EXCLUDED.expires
WHERE (SELECT count(*) FROM unnest(rate.hits) hit WHERE hit > %(since)s) < %(limit)s
RETURNING true
"""
HISTORY_SQL = "SELECT hits FROM api_rate_limit WHERE key = %s"
PRUNE_SQL = "DELETE FROM api_rate_limit WHERE expires < now()"
PRUNE_ONE_IN = 1000


def rate_limits_clear() -> None:
    """Forget every client's history (tests start from none)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM api_rate_limit")


class _SharedRate:
    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        since = self.now - self.duration
        with connection.cursor() as cursor:
            if random.randrange(PRUNE_ONE_IN) == 0:
                cursor.execute(PRUNE_SQL)
            cursor.execute(
                HIT_SQL,
                {
                    "key": self.key,
                    "now": self.now,
                    "since": since,
                    "limit": self.num_requests,
                    "expires": datetime.fromtimestamp(self.now + self.duration, UTC),
                },
            )
            if cursor.fetchone() is not None:
                return True
            cursor.execute(HISTORY_SQL, [self.key])
            row = cursor.fetchone()
        # DRF's wait() reads the history newest first.
        self.history = sorted((hit for hit in row[0] if hit > since) if row else (), reverse=True)
        return self.throttle_failure()


class AnonymousThrottle(_SharedRate, AnonRateThrottle):
    scope = "anon"


class TokenThrottle(_SharedRate, UserRateThrottle):
    scope = "token"

    def allow_request(self, request, view):
        if not isinstance(request.successful_authenticator, TokenAuthentication):
            return True
        return super().allow_request(request, view)
