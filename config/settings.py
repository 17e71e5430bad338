"""Relevance Judge settings: one file, every deployment difference from the environment."""

import os
from pathlib import Path

from config.database import DatabaseUnavailable, database_config

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

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
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
LOGIN_REDIRECT_URL = "judgements:home"
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

# The API: tokens for scripts, sessions for the browser (token first, so that an
# anonymous request gets 401 with a WWW-Authenticate header rather than 403).
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "judgements.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "judgements.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "judgements.api.throttles.AnonymousThrottle",
        "judgements.api.throttles.TokenThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.getenv("API_THROTTLE_ANON", "60/minute"),
        "token": os.getenv("API_THROTTLE_TOKEN", "1200/minute"),
    },
    # Exports take ?format=csv and so on; DRF would otherwise read it as a renderer.
    "URL_FORMAT_OVERRIDE": None,
}

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
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "judgements.api.errors.schema_error_responses",
    ],
    # Metrics say where their numbers come from; judgements have a "source" of their own.
    "ENUM_NAME_OVERRIDES": {"MetricSourceEnum": ["stored", "computed"]},
}

SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = envbool("SECURE_COOKIES", "False")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.getenv("LOG_LEVEL", "WARNING")},
}
