"""Django settings for crowdqa, read from environment variables (12-factor; docs/reference/configuration.md).

The defaults give a working single-machine demo: SQLite in ``var/``, an embedded file-system Celery
broker in ``var/broker`` (no Redis needed), and DEBUG on only when ``DJANGO_DEBUG`` says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

from config.broker import file_broker_options
from config.env import env_bool
from config.storage import storages_setting

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("CROWDQA_VAR_DIR", BASE_DIR / "var"))


DEBUG = env_bool("DJANGO_DEBUG", False)
# The local demo (scripts/demo.sh) runs on the built-in development key; nothing else may.
CROWDQA_DEMO = env_bool("CROWDQA_DEMO", False)
DEVELOPMENT_SECRET_KEY = "crowdqa-insecure-development-key-change-me"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    # A fixed development key keeps sessions valid across restarts of the demo. Outside the demo (DEBUG
    # or not), system check crowdqa.E001 refuses to serve with it (gunicorn start-up, check --deploy).
    SECRET_KEY = DEVELOPMENT_SECRET_KEY
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h
]
CSRF_FAILURE_VIEW = "config.error_views.csrf_failure"
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]
PUBLIC_BASE_URL = os.environ.get("PUBLIC_BASE_URL", "http://localhost:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",
    # Django REST framework itself is not an installed app: the API renders JSON only (no browsable
    # API, whose templates, static files and template tags are what the app entry provides), and every
    # installed app's template tags are imported by the template engine of each web worker; DRF's pull
    # in requests, markdown and pygments (about 9 MB a worker), never used by a HIT page.
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "webhooks",
    "annotation",
    "crowd",
    "filters",
    "distractors",
    "exports",
    "evaluation",
    "worker",
    "console",
    "api",
]

#: A process of the web server (``gunicorn.conf.py`` sets ``CROWDQA_WEB_SERVER`` for its master and
#: workers). Job results are stored by the workers that run the jobs (``django-db``) and read only by the
#: sweeps, which run on workers too, so the web server neither installs the result store's app (its
#: models import Celery's result classes and with them most of Celery: about 8 MB of each web worker's
#: memory) nor names a result backend when it publishes a job. Except where jobs run inline in the
#: publishing process (``CELERY_TASK_ALWAYS_EAGER``): that process stores their results itself.
CROWDQA_WEB_SERVER = env_bool("CROWDQA_WEB_SERVER", False) and not env_bool("CELERY_TASK_ALWAYS_EAGER", False)
if not CROWDQA_WEB_SERVER:
    INSTALLED_APPS.insert(INSTALLED_APPS.index("axes") + 1, "django_celery_results")

MIDDLEWARE = [
    # First, so it runs last on the way out: a HEAD response leaves with its GET's headers and no body.
    "config.head_responses.HeadResponseMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Pages are gzipped (whitenoise serves static files compressed itself, before this runs); Django's
    # GZipMiddleware pads each response with random bytes against BREACH-style length attacks.
    "django.middleware.gzip.GZipMiddleware",
    # An ETag on every page: a reload of an unchanged page (or the cached tutorial) is a 304.
    "django.middleware.http.ConditionalGetMiddleware",
    # Undecodable bodies get 400; NUL and lone surrogates leave every form and query value.
    "config.request_guard.RequestGuardMiddleware",
    # Requests under /api/ resolve with the URLconf that holds the REST API (imported on first use).
    "config.api_routing.ApiURLConfMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: turns a locked-out sign-in into its 429 page.
    "axes.middleware.AxesMiddleware",
]

# --- Sign-in throttling (django-axes): both sign-in pages, per account and per client ---------------
# Each failed sign-in counts against the username tried and against the client address, separately:
# CROWDQA_LOGIN_FAILURES failures of either within CROWDQA_LOGIN_COOLOFF_MINUTES lock it out (429)
# until the cool-off has passed; a success resets the account's count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("CROWDQA_LOGIN_FAILURES", "5"))
AXES_COOLOFF_TIME = float(os.environ.get("CROWDQA_LOGIN_COOLOFF_MINUTES", "15")) / 60  # hours
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_SENSITIVE_PARAMETERS = ["password"]
AXES_CLIENT_IP_CALLABLE = "config.request_guard.client_ip"

ROOT_URLCONF = "config.urls"

# The REST API (api/, docs/api.md): tokens for scripts, the session (with CSRF) for the browser; the
# console's permissions; per-account throttling; pages of API_PAGE_SIZE.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.ResearcherAction"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": int(os.environ.get("API_PAGE_SIZE", "50")),
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_THROTTLE_ANON", "60/minute"),
        "user": os.environ.get("API_THROTTLE_USER", "600/minute"),
    },
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "crowdqa API",
    "DESCRIPTION": "Corpora, batches, assignments and jobs of crowdqa (see docs/api.md).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The interactive docs' JavaScript and CSS come from this server (drf-spectacular-sidecar), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "BatchStatusEnum": "annotation.models.Batch.Status",
        "BatchKindEnum": "annotation.models.Batch.Kind",
        "CorpusKindEnum": "annotation.models.Corpus.Kind",
        "AssignmentStatusEnum": "annotation.models.Assignment.Status",
        "JobStatusEnum": "annotation.models.Job.Status",
        "BenchmarkStatusEnum": "evaluation.models.BenchmarkRun.Status",
    },
}
WSGI_APPLICATION = "config.wsgi.application"

#: A platform's own pages and scripts live in its package (crowd/providers/<platform>/templates and
#: static), beside its traits, so no shared folder names a platform.
PLATFORM_PACKAGES = sorted(p for p in (BASE_DIR / "crowd" / "providers").iterdir() if p.is_dir())

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [
            BASE_DIR / "templates",
            *(p / "templates" for p in PLATFORM_PACKAGES if (p / "templates").is_dir()),
        ],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotation.permissions.researcher_context",
            ],
        },
    },
    {
        # The worker's pages around a HIT (the task pages, consent, messages, the tutorial, a platform's
        # completion page), rendered on every HIT view and submission: Jinja2 renders them ~10x faster
        # than Django's engine (worker/task_templates.py); a name here is never one of the templates above.
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "NAME": "jinja2",
        "DIRS": [
            BASE_DIR / "templates" / "jinja2",
            *(p / "jinja2" for p in PLATFORM_PACKAGES if (p / "jinja2").is_dir()),
        ],
        "APP_DIRS": False,
        "OPTIONS": {"environment": "worker.task_templates.environment"},
    },
]

DATABASE_URL = os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'crowdqa.sqlite3'}")
# A web worker keeps its database connection between requests (on PostgreSQL a new connection starts a
# server process: several ms of CPU per request); the health check replaces a connection that broke.
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=int(
            os.environ.get("DATABASE_CONN_MAX_AGE", "0" if DATABASE_URL.startswith("sqlite") else "600")
        ),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend with a health check that sends nothing on a connection in use (config/postgresql).
    DATABASES["default"]["ENGINE"] = "config.postgresql"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server and the embedded Celery worker write without "database is locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
    # A file (not :memory:) so that Celery worker processes started by integration tests share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "annotation:home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# Dates and times look the same on every page ("2026-11-23 14:05 UTC"): config/formats/en/formats.py.
FORMAT_MODULE_PATH = ["config.formats"]
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [p / "static" for p in PLATFORM_PACKAGES if (p / "static").is_dir()]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every request when it is missing
MEDIA_URL = "media/"
MEDIA_ROOT = Path(os.environ.get("CROWDQA_MEDIA_ROOT", VAR_DIR / "media"))
# Files every host must see (releases, benchmark results, the trained ranker, media): the local disk
# when CROWDQA_STORAGE_URL is unset, else s3://BUCKET/PREFIX through django-storages (config/storage.py;
# a malformed URL refuses every use and fails system check crowdqa.E030). CROWDQA_CACHE_DIR is this
# host's own copy of shared files it reads as local files (releases, models), checked by content.
CROWDQA_STORAGE_URL = os.environ.get("CROWDQA_STORAGE_URL", "").strip()
CROWDQA_CACHE_DIR = Path(os.environ.get("CROWDQA_CACHE_DIR", VAR_DIR / "cache"))
# The bound of this host's release copies in CROWDQA_CACHE_DIR (least recently used removed; 0 = none).
CROWDQA_CACHE_MAX_BYTES = int(os.environ.get("CROWDQA_CACHE_MAX_BYTES", str(20 * 1024**3)))
# A release file downloaded from the shared storage through a signed URL valid this long (0: streamed).
CROWDQA_SIGNED_URL_SECONDS = int(os.environ.get("CROWDQA_SIGNED_URL_SECONDS", "0"))
STORAGES, CROWDQA_STORAGE_ERROR = storages_setting(CROWDQA_STORAGE_URL, VAR_DIR)
# HIT pages run inside MTurk's iframe: they send CSP frame-ancestors naming MTurk's hosts instead
# (worker/framing.py); every other page is not frameable.
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"  # signed HIT links never leak to other sites in Referer

# --- HTTPS (set these when crowdqa is served over https, as it must be for MTurk and Prolific) -----
SESSION_COOKIE_SECURE = env_bool("CROWDQA_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env_bool("CROWDQA_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^health/$", r"^health/ready/$"]  # load balancers probe over plain http
SECURE_HSTS_SECONDS = int(os.environ.get("CROWDQA_HSTS_SECONDS", "0") or 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("CROWDQA_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("CROWDQA_HSTS_PRELOAD", False)
CROWDQA_BEHIND_PROXY = env_bool("CROWDQA_BEHIND_PROXY", False)
if CROWDQA_BEHIND_PROXY:
    # A TLS-terminating proxy in front sets X-Forwarded-Proto; trust it only when told to.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Request size limits: no request can make the server work without bound --------------------
# A full syllabus HIT (14 cards, 5 spans each, reasoning steps) is well under 100 KB; the HIT forms
# also bound each field (annotation/hits/base.py MAX_FIELD_CHARS).
DATA_UPLOAD_MAX_MEMORY_SIZE = 512 * 1024
DATA_UPLOAD_MAX_NUMBER_FIELDS = 500
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# Files uploaded through the console (data in: annotation/services/uploads.py) are capped per request,
# counted while the body streams in (config/uploads.py); a proxy in front needs at least this body size.
CROWDQA_UPLOAD_MAX_MB = int(os.environ.get("CROWDQA_UPLOAD_MAX_MB", "100") or 100)
FILE_UPLOAD_HANDLERS = [
    "config.uploads.UploadLimitHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# --- Celery: Redis when REDIS_URL is set, otherwise an embedded file-system broker -----------------
REDIS_URL = os.environ.get("REDIS_URL", "")
CELERY_BROKER_DIR = VAR_DIR / "broker"


if REDIS_URL:
    # Counters every process of every host must share (the REST API's throttling, Prolific's session
    # answers) live in Redis too; with no Redis (one machine) each process keeps its own in memory.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "crowdqa",
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {"visibility_timeout": 3600}
else:
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = file_broker_options(CELERY_BROKER_DIR)
CELERY_RESULT_BACKEND = None if CROWDQA_WEB_SERVER else "django-db"
CELERY_RESULT_EXTENDED = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TRACK_STARTED = True
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_DEFAULT_EXCHANGE = "default"
CELERY_TASK_DEFAULT_ROUTING_KEY = "default"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Periodic jobs (run ``celery -A config beat``, or ``worker -B`` on a single machine as the demo does).
CELERY_BEAT_SCHEDULE = {
    "expire-overdue-assignments": {"task": "annotation.tasks.expire_overdue_assignments", "schedule": 60.0},
    "requeue-lost-followups": {"task": "annotation.tasks.requeue_lost_followups", "schedule": 120.0},
    # Model checks of submissions whose job was never queued (the broker was down at submit).
    "model-loop-requeue-unchecked": {
        "task": "evaluation.loop_tasks.requeue_unchecked_submissions",
        "schedule": 300.0,
    },
    "crowd-sync-batches": {
        "task": "crowd.tasks.sync_batches",
        "schedule": float(os.environ.get("CROWDQA_SYNC_SECONDS", "300")),
    },
    "webhooks-resend-overdue": {"task": "webhooks.tasks.resend_overdue", "schedule": 60.0},
    # Submitted work of batches with an auto-approval delay, approved once nobody reviewed it in time.
    "crowd-auto-approve": {"task": "crowd.tasks.auto_approve_overdue", "schedule": 300.0},
}

# --- Hugging Face Hub publishing (export_release --publish hf://OWNER/NAME; exports/hub.py) -------
HF_ENDPOINT = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
HF_TOKEN = os.environ.get("HF_TOKEN", "")

# --- Outbound webhooks (docs/webhooks.md) --------------------------------------------------------
# Deliver to loopback / private / link-local addresses too (development, tests, a lab-internal receiver).
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", False)
# Seconds to connect and, separately, to wait for the receiver's answer.
WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOK_TIMEOUT_SECONDS", "10"))
# Attempts per delivery before it is marked failed; waits grow as BASE * 4 ** (n - 1), at most MAX.
WEBHOOK_MAX_ATTEMPTS = int(os.environ.get("WEBHOOK_MAX_ATTEMPTS", "8"))
WEBHOOK_RETRY_BASE_SECONDS = float(os.environ.get("WEBHOOK_RETRY_BASE_SECONDS", "30"))
WEBHOOK_RETRY_MAX_SECONDS = float(os.environ.get("WEBHOOK_RETRY_MAX_SECONDS", "43200"))
# A pending delivery this late past its next attempt (its job lost) is queued again by the sweep.
WEBHOOK_SWEEP_GRACE_SECONDS = float(os.environ.get("WEBHOOK_SWEEP_GRACE_SECONDS", "60"))
# After "Rotate the secret", the old secret still signs deliveries (a second v1) this long (0: no).
WEBHOOK_SECRET_OVERLAP_SECONDS = float(os.environ.get("WEBHOOK_SECRET_OVERLAP_SECONDS", "86400"))

# Seconds a follow-up of a submission (QC, screening grade, stage-2 HIT) may stay queued or running
# before the periodic sweep counts it as lost with a killed worker and queues it again.
CROWDQA_FOLLOWUP_TIME_LIMIT = float(os.environ.get("CROWDQA_FOLLOWUP_TIME_LIMIT", "600"))
# Follow up submissions many per job run, in looks beat sends from the submissions stored (the web
# queues nothing), under per-batch locks in the cache the Celery processes share (Redis); without
# Redis, the web queues one job per submission.
CROWDQA_FOLLOWUP_BATCHING = env_bool("CROWDQA_FOLLOWUP_BATCHING", bool(REDIS_URL))
# With batching, seconds between two looks for submissions owed their follow-up: each look follows up
# every batch with some, so every submission of the interval rides on one Celery message.
CROWDQA_FOLLOWUP_BATCH_SECONDS = float(os.environ.get("CROWDQA_FOLLOWUP_BATCH_SECONDS", "1"))
if CROWDQA_FOLLOWUP_BATCHING:
    CELERY_BEAT_SCHEDULE["dispatch-followups"] = {
        "task": "crowd.followup_tasks.dispatch_followups",
        "schedule": CROWDQA_FOLLOWUP_BATCH_SECONDS,
        # A look still queued when the next is due is dropped unread: the next one sees what it would.
        "options": {"expires": CROWDQA_FOLLOWUP_BATCH_SECONDS},
    }

# Researcher pages open without login (the local demo turns this on; never on a public server).
CROWDQA_PUBLIC_DASHBOARD = env_bool("CROWDQA_PUBLIC_DASHBOARD", False)

# --- Crowd platforms ----------------------------------------------------------------------------
# Each platform's own settings (API URLs and tokens, retries, its test stand-ins) are read from the
# environment by its package, crowd/providers/<platform>/traits.py (``environment()``); a setting of the
# same name set here, or by a settings module importing this one, takes precedence.
# A bonus whose pay answer was lost is settled from the platform's record; a platform that pays
# asynchronously lists it late, so "not listed" means "not paid" (and the bonus is sent again) only this
# many seconds after the request.
CROWDQA_PAYMENT_SETTLE_SECONDS = float(os.environ.get("CROWDQA_PAYMENT_SETTLE_SECONDS", "600"))
# Sync reads only the end of a study's submission list (where work can still change); at least this often
# it reads the whole list again.
CROWDQA_FULL_SYNC_HOURS = float(os.environ.get("CROWDQA_FULL_SYNC_HOURS", "24"))
# Salt for stable worker pseudonyms: released data carries these, never platform ids. At least 16
# bytes (system check crowdqa.E002); outside the demo never the development key (crowdqa.E001).
CROWDQA_PSEUDONYM_SALT = os.environ.get("CROWDQA_PSEUDONYM_SALT", "") or SECRET_KEY

# --- Models -------------------------------------------------------------------------------------
LLM_API_BASE = os.environ.get("LLM_API_BASE", "")
LLM_API_KEY = os.environ.get("LLM_API_KEY", "")
LLM_MODEL = os.environ.get("LLM_MODEL", "")
CROWDQA_MODEL_DIR = Path(os.environ.get("CROWDQA_MODEL_DIR", VAR_DIR / "models"))
CROWDQA_RELEASES_DIR = Path(os.environ.get("CROWDQA_RELEASES_DIR", VAR_DIR / "releases"))
# With a shared storage, seconds between two looks at which ranker version is current (another host
# may have trained a new one); the version itself is fetched once per host (distractors/model_store.py).
CROWDQA_MODEL_CHECK_SECONDS = float(os.environ.get("CROWDQA_MODEL_CHECK_SECONDS", "30"))
# The causal LM of the SciQ options-only check after each stage-2 submission: empty for the packaged
# SmolLM2-135M, a Hugging Face model directory, or "off" to leave stage-2 items unchecked.
CROWDQA_OPTIONS_ONLY_MODEL = os.environ.get("CROWDQA_OPTIONS_ONLY_MODEL", "").strip()

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("CROWDQA_LOG_LEVEL", "WARNING")},
    "loggers": {
        "django": {"level": "WARNING"},
        # django.request logs every 4xx with its path, and HIT paths carry signed links.
        "django.request": {"level": "ERROR"},
        # The embedded file-system broker has no host; kombu warns about that on every connection.
        "kombu.connection": {"level": "ERROR"},
    },
}
