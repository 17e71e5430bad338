"""Rate limits for anonymous clients and for scripts that sign in with a token.

Rates are read when a request comes, not at import, so that settings overrides
(tests) and environment changes apply. Browser sessions are not limited.

The counts live in the cache every process shares (``CACHES["shared"]``, a table in
PostgreSQL), so a limit holds across gunicorn workers and machines. DRF's throttle
reads a client's history, then writes it back; two workers doing that at once would
each miss the other's request, so each check runs in a transaction holding a
PostgreSQL advisory lock on the client's key: checks of one client queue up, checks
of different clients do not. Clients are told apart by DRF's ``NUM_PROXIES``
(settings.TRUSTED_PROXIES, as config.client_ip), never by a header the client may
write itself.
"""

from django.core.cache import caches
from django.db import connections, router, transaction
from knox.auth import TokenAuthentication
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class _SharedRate:
    cache_alias = "shared"

    @property
    def cache(self):
        return caches[self.cache_alias]

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def allow_request(self, request, view):
        key = self.get_cache_key(request, view)
        if self.rate is None or key is None:
            return True
        database = router.db_for_write(self.cache.cache_model_class)
        with transaction.atomic(using=database), connections[database].cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])
            return super().allow_request(request, view)


class AnonymousThrottle(_SharedRate, AnonRateThrottle):
    scope = "anon"


class TokenThrottle(_SharedRate, UserRateThrottle):
    scope = "token"

    def allow_request(self, request, view):
        if not isinstance(request.successful_authenticator, TokenAuthentication):
            return True
        return super().allow_request(request, view)
