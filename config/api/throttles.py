"""Rate limits for anonymous clients and for scripts that sign in with a token.

Rates are read when a request comes, not at import, so that settings overrides
(tests) and environment changes apply. Browser sessions are not limited.

A rate of ``N`` per period (DRF's syntax, "60/minute") lets a client send a burst of
up to ``N`` requests at once, then one per ``period / N`` on average: the generic
cell rate algorithm (GCRA, a token bucket). Its state is one number per client, the
"theoretical arrival time" (TAT): a request at ``now`` is allowed when
``max(TAT, now) + period / N - now <= period``, and then moves TAT to the left side's
first two terms. DRF's own throttles keep every request's time within the period
instead, which costs ``N`` times per check (each request read and wrote the whole list).

The state lives in PostgreSQL, so that a limit holds across gunicorn workers and
machines: a table (``api_rate_limit``, migration judgements 0024) with a row per
client, read and written by one statement per request, an ``INSERT ... ON CONFLICT DO
UPDATE`` whose ``WHERE`` is the rule above. PostgreSQL locks the client's row for it,
so two workers checking one client at once queue up and neither misses the other's
request; checks of different clients do not wait. (Django's database cache, used
before, took eight to ten statements per API call.) A refused request costs a second
statement, to say when to retry. Rows of clients idle for a period are pruned now
and then.

Clients are told apart by DRF's ``NUM_PROXIES`` (settings.TRUSTED_PROXIES, as
config.client_ip), never by a header the client may write itself.
"""

import random
from datetime import UTC, datetime

from django.db import connection
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from config.api.tokens import TokenAuthentication

# The slack absorbs floating-point error, so that exactly N requests fit a burst.
HIT_SQL = """
INSERT INTO api_rate_limit AS rate (key, tat, expires)
VALUES (%(key)s, %(now)s + %(interval)s, %(expires)s)
ON CONFLICT (key) DO UPDATE
SET tat = GREATEST(rate.tat, %(now)s) + %(interval)s, expires = EXCLUDED.expires
WHERE GREATEST(rate.tat, %(now)s) + %(interval)s - %(now)s <= %(period)s + %(slack)s
RETURNING true
"""
TAT_SQL = "SELECT tat FROM api_rate_limit WHERE key = %s"
PRUNE_SQL = "DELETE FROM api_rate_limit WHERE expires < now()"
PRUNE_ONE_IN = 1000


def rate_limits_clear() -> None:
    """Forget every client's state (tests start from none)."""
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
        if self.num_requests <= 0:
            self.retry_after = self.duration
            return False
        interval = self.duration / self.num_requests
        with connection.cursor() as cursor:
            if random.randrange(PRUNE_ONE_IN) == 0:
                cursor.execute(PRUNE_SQL)
            cursor.execute(
                HIT_SQL,
                {
                    "key": self.key,
                    "now": self.now,
                    "interval": interval,
                    "period": self.duration,
                    "slack": interval / 2,
                    # Once TAT is past, the row says nothing a missing row would not.
                    "expires": datetime.fromtimestamp(self.now + self.duration, UTC),
                },
            )
            if cursor.fetchone() is not None:
                return True
            cursor.execute(TAT_SQL, [self.key])
            row = cursor.fetchone()
        tat = max(row[0], self.now) if row else self.now + self.duration
        self.retry_after = tat + interval - self.duration - self.now
        return False

    def wait(self):
        return max(self.retry_after, 0)


class AnonymousThrottle(_SharedRate, AnonRateThrottle):
    scope = "anon"


class TokenThrottle(_SharedRate, UserRateThrottle):
    scope = "token"

    def allow_request(self, request, view):
        if not isinstance(request.successful_authenticator, TokenAuthentication):
            return True
        return super().allow_request(request, view)
