"""Relevance Judge settings: one file, every deployment difference from the environment."""

import datetime as dt
import os
import re
from pathlib import Path

from django.utils.csp import CSP

from config.database import DatabaseUnavailable, database_config
from config.encryption import keys_from
from config.outbound import parse_allow

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: str) -> bool:
    return os.getenv(name, default).strip().lower() in ("1", "true", "yes", "on")


def envint(name: str, default: str) -> int:
    return int(os.getenv(name, default))


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.getenv(name, default).split(",") if item.strip()]


# Off unless asked for: a deployment that forgets the variable must not serve
# tracebacks and settings. `make run`, `make test` and the test suite turn it on.
DEBUG = envbool("DEBUG", "False")
SECRET_KEY = os.getenv("SECRET_KEY", "").strip()
if not SECRET_KEY:
    if not DEBUG:
        raise SystemExit(
            "Set SECRET_KEY (not blank): it is required when DEBUG is off. "
            "For development, DEBUG=1 uses a fixed insecure key."
        )
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

# Secrets entered in the app (a machine judge's API key) are sealed with these Fernet
# keys, the first sealing, all unsealing (config/encryption.py). Without them nothing can
# be stored in production; development derives one from SECRET_KEY.
try:
    ENCRYPTION_KEYS = keys_from(
        os.getenv("ENCRYPTION_KEYS", ""), debug=DEBUG, secret_key=SECRET_KEY
    )
except ValueError as error:
    raise SystemExit(str(error)) from None

# Requests the server makes for users (machine judges, search endpoints) reach public
# addresses only, unless listed here: host names, addresses or CIDR networks, each
# optionally with :port, e.g. 127.0.0.1:11434 for a local model server (config/outbound.py).
OUTBOUND_ALLOW = envlist("OUTBOUND_ALLOW", "")
try:
    parse_allow(OUTBOUND_ALLOW)
except ValueError as error:
    raise SystemExit(str(error)) from None

# A machine judge's key comes from a stored (sealed) key or from a variable whose name
# starts with this prefix: no other variable (SECRET_KEY, DATABASE_URL, PATH) can be named.
# Empty or unset: the default (an empty prefix would let a judge name any variable).
MACHINE_JUDGE_KEY_PREFIX = os.getenv("MACHINE_JUDGE_KEY_PREFIX", "").strip() or "RJ_JUDGE_KEY_"
if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*", MACHINE_JUDGE_KEY_PREFIX):
    raise SystemExit(
        "MACHINE_JUDGE_KEY_PREFIX must be a variable-name prefix of letters, digits and _ "
        "with at least one _ after a letter (e.g. RJ_JUDGE_KEY_)."
    )
# The largest model reply a judge reads (bytes; refused past it, read as a stream) and the
# longest a 429's or 503's Retry-After makes it wait (seconds).
MACHINE_JUDGE_MAX_REPLY_BYTES = envint("MACHINE_JUDGE_MAX_REPLY_BYTES", str(1 << 20))
MACHINE_JUDGE_MAX_RETRY_AFTER_SECONDS = float(
    os.getenv("MACHINE_JUDGE_MAX_RETRY_AFTER_SECONDS", "60")
)

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "knox",
    "drf_spectacular",
    "django_filters",
    "django_tasks_db",
    "judgements",
    "metrics",
    "searchlogs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

if not DEBUG:
    # In development runserver serves static files from the app folders; in
    # production WhiteNoise serves the collected, compressed files.
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The embedded server's data lives in the project folder (git-ignored) unless
# PGSERVER_DATA says otherwise; DATABASE_URL bypasses it entirely.
PGSERVER_DATA = Path(os.getenv("PGSERVER_DATA", BASE_DIR / ".pgdata"))
try:
    DATABASES = {"default": database_config(PGSERVER_DATA)}
except DatabaseUnavailable as error:
    raise SystemExit(str(error)) from None
DATABASES["default"]["TEST"] = {"NAME": os.getenv("TEST_DATABASE_NAME", "test_relevance_judge")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
# A rater of a single project lands in its queue; everyone else on the projects page.
LOGIN_REDIRECT_URL = "judgements:start"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.getenv("STATIC_ROOT", BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Recomputation runs as a task so that grading never waits for it: in-process in
# development and tests, through the database queue (django-tasks-db) in production.
TASK_BACKENDS = {
    "immediate": "django.tasks.backends.immediate.ImmediateBackend",
    "database": "django_tasks_db.DatabaseBackend",
}
TASKS = {"default": {"BACKEND": TASK_BACKENDS[os.getenv("TASKS_BACKEND", "immediate")]}}
# Uploads larger than this (pages and API) are imported by a background task, so that
# the request returns at once however long the import takes; smaller ones in the request.
UPLOAD_BACKGROUND_BYTES = envint("UPLOAD_BACKGROUND_BYTES", str(4 << 20))
# A task running a job or a machine judge's run renews a lease on its row every third of
# this many seconds; once it has run out, the worker is taken for dead and every task
# worker recovers the work (judgements/leases.py). Tests set it short.
TASK_LEASE_SECONDS = float(os.getenv("TASK_LEASE_SECONDS", "30"))

# Hosts search endpoints may name (judgements/engines/safety.py): host names,
# *.domain, addresses or CIDR networks; empty: any the outbound policy allows. It only
# narrows that policy (OUTBOUND_ALLOW), never widens it.
SEARCH_ENDPOINT_ALLOW = envlist("SEARCH_ENDPOINT_ALLOW", "")

# The API: tokens for scripts, sessions for the browser (token first, so that an
# anonymous request gets 401 with a WWW-Authenticate header rather than 403).
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "config.api.tokens.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "config.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "config.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "config.api.throttles.AnonymousThrottle",
        "config.api.throttles.TokenThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.getenv("API_THROTTLE_ANON", "60/minute"),
        "token": os.getenv("API_THROTTLE_TOKEN", "1200/minute"),
    },
    # Exports take ?format=csv and so on; DRF would otherwise read it as a renderer.
    "URL_FORMAT_OVERRIDE": None,
}

# API tokens (django-rest-knox) are stored as SHA-512 digests; like the tokens they
# replaced, they last until revoked or replaced on the token page.
REST_KNOX = {"TOKEN_TTL": None, "AUTO_REFRESH": False}

SPECTACULAR_SETTINGS = {
    "TITLE": "Relevance Judge API",
    "DESCRIPTION": (
        "Projects, queries, documents, result lists and judgements: read, import, export. "
        "Sign in with a session or a token (Authorization: Token <key>, from /api/token/). "
        'Every 4xx body is {"errors": [{"field", "line", "message"}]}.'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "COMPONENT_SPLIT_REQUEST": True,
    # Self-hosted Swagger UI (static/vendor/swagger-ui): the docs load nothing from a CDN.
    "SWAGGER_UI_DIST": f"{STATIC_URL}vendor/swagger-ui",
    "SWAGGER_UI_FAVICON_HREF": f"{STATIC_URL}vendor/swagger-ui/favicon-32x32.png",
    # <id:...> path parameters (config.ids): whole numbers within bigint.
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api.errors.schema_error_responses",
    ],
    # Metrics say where their numbers come from; judgements have a "source" of their own.
    "ENUM_NAME_OVERRIDES": {
        "MetricSourceEnum": "metrics.api.common.SOURCES",
        # Two models have a field named "kind": each enum keeps its model's name.
        "JudgementKindEnum": "judgements.models.Judgement.Kind",
        "JobKindEnum": "judgements.models.Job.Kind",
    },
}

# Served over TLS (directly or behind a TLS-terminating proxy): redirect plain HTTP,
# send HSTS, and keep the session and CSRF cookies off plain HTTP. Off by default so
# that `docker compose up` works on http://localhost:8000; `check --deploy` is clean
# with it on.
HTTPS = envbool("HTTPS", "False")
SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = envint("HSTS_SECONDS", "31536000") if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("HSTS_INCLUDE_SUBDOMAINS", "True")
SECURE_HSTS_PRELOAD = envbool("HSTS_PRELOAD", "True")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = envbool("SECURE_COOKIES", str(HTTPS))
# The health check answers on plain HTTP from inside the container.
SECURE_REDIRECT_EXEMPT = [r"^health/$"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors": {"()": "config.logging.ClientErrorWithoutTraceback"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["client_errors"]},
    },
    "root": {"handlers": ["console"], "level": os.getenv("LOG_LEVEL", "WARNING")},
    # Django's own console handler would print each of its lines a second time beside
    # the root's: its loggers hand their records to the root handler alone.
    "loggers": {"django": {"handlers": [], "propagate": True}},
}

# Proxies in front of the app that append the client's address to X-Forwarded-For (a
# load balancer, nginx): 0 when clients connect directly, as in docker-compose.yml.
# Rate limits and login lockouts then key on the address the nearest trusted proxy
# saw; any address a client writes into the header itself is ignored.
TRUSTED_PROXIES = envint("TRUSTED_PROXIES", "0")
REST_FRAMEWORK["NUM_PROXIES"] = TRUSTED_PROXIES
if TRUSTED_PROXIES:
    # The proxy terminates TLS and says so in this header.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Caches hold figures derived from immutable data, in each process's memory. Rate
# limits, which every web process must share, count in PostgreSQL (config.api.throttles).
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Login brute-force protection (django-axes): after LOGIN_FAILURE_LIMIT wrong
# passwords for one username from one address, that pair is locked out for
# LOGIN_COOLOFF_MINUTES, before any password is hashed; a successful login resets the
# count. The admin's login is the same login. Addresses as for rate limits.
INSTALLED_APPS.append("axes")
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
MIDDLEWARE.append("axes.middleware.AxesMiddleware")
AXES_FAILURE_LIMIT = envint("LOGIN_FAILURE_LIMIT", "5")
AXES_COOLOFF_TIME = dt.timedelta(minutes=envint("LOGIN_COOLOFF_MINUTES", "15"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "config.client_ip.client_ip"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

# Every request answers /health/ first (no host check, no redirect), and a database
# outage answers 503 with Retry-After rather than a 500 (config.health).
MIDDLEWARE.insert(0, "config.health.DatabaseHealthMiddleware")

# Content-Security-Policy (Django's own, django.middleware.csp): scripts, styles and
# connections from this site only, no inline code or style attributes, no framing.
# Pages pass data to their script with json_script; images may also come from the
# documents' own https addresses (their thumbnails). CSP_REPORT_URI, when set,
# receives violation reports.
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
)
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:", "https:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
if os.getenv("CSP_REPORT_URI"):
    SECURE_CSP["report-uri"] = [os.environ["CSP_REPORT_URI"]]
