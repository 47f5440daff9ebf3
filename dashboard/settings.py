"""Django settings. Every deployment value comes from the environment (see README,
"Configuration"); defaults give the embedded single-machine setup."""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from dashboard.core.channel_layer import channel_layers
from dashboard.core.env import env_bool, env_int, env_list, env_str
from queues.connections import connection_specs_from_env, dashboard_redis_url_from_env
from queues.errors import ConfigurationError
from queues.redact import DEFAULT_SECRET_KEYS
from queues.shared_redis import connections_sharing

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("QUEUEWATCH_DEBUG", False)
# Local development over plain http (`./dev run`): allows the built-in secret key and turns the
# https-only defaults below off unless each is set explicitly.
INSECURE_DEV = DEBUG or env_bool("QUEUEWATCH_INSECURE_DEV", False)
SECRET_KEY = env_str("QUEUEWATCH_SECRET_KEY")
if not SECRET_KEY:
    if INSECURE_DEV:
        SECRET_KEY = "insecure-dev-only-key"
    else:
        raise ImproperlyConfigured(
            "QUEUEWATCH_SECRET_KEY is not set. Set it to a long random string "
            "(or QUEUEWATCH_SECRET_KEY_FILE to a file holding one)."
        )
ALLOWED_HOSTS = env_list("QUEUEWATCH_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("QUEUEWATCH_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "template_partials",
    "django_htmx",
    "axes",
    "dashboard",
    "dashboard.alerts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "dashboard.web.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Below WhiteNoise, so static files keep their caching and nothing else is cached.
    "dashboard.web.security.NoStoreMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language: the cookie set by the switcher, else Accept-Language (dashboard/core/i18n.py
    # then prefers the logged-in user's saved choice).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "dashboard.core.i18n.UserLanguageMiddleware",
    # Every URL requires login unless its view is explicitly marked otherwise (login page,
    # and the API, which answers 401 JSON through its own bearer-token check).
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # request.htmx; dashboard/web/htmx.py decides fragment or full page from it.
    "django_htmx.middleware.HtmxMiddleware",
    # Login throttling (django-axes): answers a locked-out login (page or admin) with the
    # lockout page; must come last.
    "axes.middleware.AxesMiddleware",
]

# --- Login throttling (django-axes) -------------------------------------------------------------
# Failed logins are counted per user name and, separately, per client address; either reaching
# the limit locks further attempts (even with the right password) until the cool-off ends.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("QUEUEWATCH_LOGIN_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = __import__("datetime").timedelta(minutes=env_int("QUEUEWATCH_LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "dashboard.accounts.views.locked_out"
# django-axes' database handler, retried when SQLite reports a lock (dashboard/accounts/login_failures.py).
AXES_HANDLER = "dashboard.accounts.login_failures.RetryingDatabaseHandler"
# The address is the connecting one, unless it is one of QUEUEWATCH_TRUSTED_PROXIES (CIDRs):
# then the right-most X-Forwarded-For hop that is not a trusted proxy (dashboard/web/client_address.py).
# Without the setting X-Forwarded-For is ignored: it is whatever the client says, and would let
# one client pose as many addresses.
AXES_CLIENT_IP_CALLABLE = "dashboard.web.client_address.client_address"
AXES_IPWARE_META_PRECEDENCE_ORDER = ["REMOTE_ADDR"]
AXES_VERBOSE = False

ROOT_URLCONF = "dashboard.urls"
CSRF_FAILURE_VIEW = "dashboard.accounts.views.csrf_failure"  # a friendly page, plus an audit row
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.accounts.auth.context",
                "dashboard.live.monitor_presence.context",
            ],
        },
    },
]

ASGI_APPLICATION = "dashboard.asgi.application"
WSGI_APPLICATION = None

_database_url = env_str("DATABASE_URL")
if not _database_url:
    # Embedded default: a SQLite file under var/ (git-ignored), created on first use.
    (BASE_DIR / "var").mkdir(exist_ok=True)
    _database_url = f"sqlite:///{BASE_DIR / 'var' / 'queuewatch.sqlite3'}"
DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=60)}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The web process and the monitor share the file. In WAL mode a writer commits while another
    # process holds a read transaction open (a long page or export) instead of waiting for it;
    # ``timeout`` is how long a writer waits for the other writer. Transactions begin DEFERRED
    # (SQLite's default): begun IMMEDIATE, every transaction, reads included, would queue for the
    # one write lock.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"init_command": "PRAGMA journal_mode=WAL;", "timeout": 20})
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# Arabic and English (docs/arabic-glossary.md says how translations are kept up to date).
# QUEUEWATCH_LANGUAGE is the language of visitors whose browser asks for neither, and of
# alert emails whose channel does not choose one.
LANGUAGES = [("en", "English"), ("ar", "العربية")]
LANGUAGE_CODE = env_str("QUEUEWATCH_LANGUAGE", "en")
if LANGUAGE_CODE not in dict(LANGUAGES):
    raise ImproperlyConfigured(
        f"QUEUEWATCH_LANGUAGE must be one of {', '.join(dict(LANGUAGES))} (got {LANGUAGE_CODE!r})."
    )
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["dashboard.core.formats"]  # Arabic numbers in the product's one style
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# WhiteNoise serves straight from static/ (a handful of files), so no collectstatic step is
# needed to run; set QUEUEWATCH_STATIC_ROOT to serve collected files instead.
STATIC_ROOT = env_str("QUEUEWATCH_STATIC_ROOT")
WHITENOISE_USE_FINDERS = STATIC_ROOT is None

# --- Transport and browser hardening (docs/operations.md, "Configuration") ----------------------
# Production defaults are https-only; each relaxation is its own setting (`./dev run` sets the
# ones plain-http local use needs). INSECURE_DEV (or DEBUG) only changes the defaults.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("QUEUEWATCH_SECURE_COOKIES", not INSECURE_DEV)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_AGE = env_int("QUEUEWATCH_SESSION_HOURS", 12, minimum=1) * 3600
SECURE_SSL_REDIRECT = env_bool("QUEUEWATCH_SSL_REDIRECT", not INSECURE_DEV)
SECURE_HSTS_SECONDS = env_int("QUEUEWATCH_HSTS_SECONDS", 0 if INSECURE_DEV else 365 * 24 * 3600, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("QUEUEWATCH_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("QUEUEWATCH_HSTS_PRELOAD", False)
# Behind a TLS-terminating proxy, Django sees plain http: trust the proxy's X-Forwarded-Proto
# (only when the proxy always sets it, overwriting what clients send), or SSL redirect loops.
if env_bool("QUEUEWATCH_TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# No inline script or style anywhere (dashboard/web/security.py); websockets are same-origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)
# HSTS preload is a commitment for the whole registrable domain, which only its owner can
# make (QUEUEWATCH_HSTS_PRELOAD=1): not a deployment warning for Queuewatch to raise.
SILENCED_SYSTEM_CHECKS = ["security.W021"]

# --- Queuewatch ------------------------------------------------------------------------------

try:
    QUEUEWATCH_CONNECTIONS = connection_specs_from_env(os.environ, default_url=None)
except ConfigurationError as exc:
    raise ImproperlyConfigured(str(exc)) from None

# How long a queue discovery (SCAN) result is reused before rescanning.
QUEUEWATCH_DISCOVERY_TTL = env_int("QUEUEWATCH_DISCOVERY_TTL", 10, minimum=0)
# Keys the monitor's discovery examines per second (a resumable SCAN, docs/operations.md): a
# pass over N keys takes N / this seconds (at least 10 s) at a fixed, small share of Redis CPU.
QUEUEWATCH_DISCOVERY_KEYS_PER_S = env_int("QUEUEWATCH_DISCOVERY_KEYS_PER_S", 5_000, minimum=1000)
# Payloads larger than this many bytes are shown truncated, with a download link.
QUEUEWATCH_PAYLOAD_CAP = env_int("QUEUEWATCH_PAYLOAD_CAP", 256 * 1024, minimum=1024)
QUEUEWATCH_SECRET_KEYS = env_list("QUEUEWATCH_SECRET_KEYS", list(DEFAULT_SECRET_KEYS))
QUEUEWATCH_REDIS_TIMEOUT = env_int("QUEUEWATCH_REDIS_TIMEOUT", 5, minimum=1)
# Downloads (job exports, audit CSV) one user may stream at once, across all web processes
# (dashboard.web.download_slots: leases in the dashboard Redis).
QUEUEWATCH_EXPORTS_PER_USER = env_int("QUEUEWATCH_EXPORTS_PER_USER", 2, minimum=1)
# Jobs one error-groups page or name-filtered list may examine (one Redis command each).
QUEUEWATCH_SCAN_SAMPLE = env_int("QUEUEWATCH_SCAN_SAMPLE", 2000, minimum=100)
# Queues one "find a job by id" may check (one existence check each), across every connection.
QUEUEWATCH_FIND_MAX_QUEUES = env_int("QUEUEWATCH_FIND_MAX_QUEUES", 500, minimum=1)
# A background search by data waits this long between its bounded steps (each examines at most
# QUEUEWATCH_SCAN_SAMPLE jobs), so a long search leaves the monitored server room to breathe.
QUEUEWATCH_SEARCH_PACE_MS = env_int("QUEUEWATCH_SEARCH_PACE_MS", 200, minimum=0)
# Background searches one user may have pending or running at once.
QUEUEWATCH_SEARCH_MAX_ACTIVE = env_int("QUEUEWATCH_SEARCH_MAX_ACTIVE", 3, minimum=1)
# Edit-and-retry (one job or a bulk task) copies its patch into every job's data: the patch's
# size, what it may add to one job's data and to all of a bulk task's jobs together, in bytes
# (queues.edit_growth, docs/actions.md). They keep a big patch from filling Redis.
QUEUEWATCH_EDIT_MAX_PATCH_BYTES = env_int("QUEUEWATCH_EDIT_MAX_PATCH_BYTES", 256 * 1024, minimum=1024)
QUEUEWATCH_EDIT_MAX_JOB_GROWTH = env_int("QUEUEWATCH_EDIT_MAX_JOB_GROWTH", 64 * 1024, minimum=1024)
QUEUEWATCH_EDIT_MAX_TASK_GROWTH = env_int("QUEUEWATCH_EDIT_MAX_TASK_GROWTH", 64 * 1024 * 1024, minimum=1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("QUEUEWATCH_LOG_LEVEL", "INFO")},
    "loggers": {"django.channels.server": {"level": "WARNING"}},
}

# --- Live updates -----------------------------------------------------------------------------

# Queuewatch's own Redis (channel layer, leader lock, fragment cache). Defaults to the first
# monitored connection that is a Redis node (the default one first), and is required when none
# is; point it elsewhere to keep all dashboard traffic off production Redis. A primary behind
# Sentinel (redis+sentinel://) works too; a Redis Cluster is refused.
try:
    QUEUEWATCH_DASHBOARD_REDIS_URL = dashboard_redis_url_from_env(os.environ, QUEUEWATCH_CONNECTIONS)
except ConfigurationError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# The monitored connections whose server the dashboard Redis is also on (queues/shared_redis.py):
# any BullMQ client there can write Queuewatch's keys, so admins are warned on every page.
# QUEUEWATCH_SHARED_DASHBOARD_REDIS_OK=1 says the sharing is deliberate (./dev run: one server).
QUEUEWATCH_DASHBOARD_REDIS_SHARED_WITH = (
    []
    if env_bool("QUEUEWATCH_SHARED_DASHBOARD_REDIS_OK", False)
    else connections_sharing(QUEUEWATCH_DASHBOARD_REDIS_URL, QUEUEWATCH_CONNECTIONS)
)
# Messages are encrypted and authenticated (a key derived from SECRET_KEY): see
# dashboard/core/channel_layer.py.
CHANNEL_LAYERS = channel_layers(QUEUEWATCH_DASHBOARD_REDIS_URL, SECRET_KEY)

# Seconds between each open websocket's checks that its login session still holds (signed in,
# user active, not expired; dashboard/live/socket_sessions.py). Logout, deactivation and password
# changes close sockets at once; this bounds how long anything else takes.
QUEUEWATCH_SOCKET_SESSION_CHECK_S = env_int("QUEUEWATCH_SOCKET_SESSION_CHECK_S", 30, minimum=1)
# Live sockets (one per open page) one user may hold at once, across all web processes (leases
# in the dashboard Redis: dashboard/live/socket_leases.py); one more is closed with 4429.
QUEUEWATCH_LIVE_SOCKETS_PER_USER = env_int("QUEUEWATCH_LIVE_SOCKETS_PER_USER", 50, minimum=1)
# Application dead-letter queues: name patterns, and explicit "dlq=source" pairs.
QUEUEWATCH_DLQ_PATTERNS = env_list("QUEUEWATCH_DLQ_PATTERNS", ["*-dlq", "*.dlq", "*_dlq", "dead-letter*"])
QUEUEWATCH_DLQ_MAP = dict(pair.split("=", 1) for pair in env_list("QUEUEWATCH_DLQ_MAP", []) if "=" in pair)
# Refuse every mutation of the monitored Redis (retry, discard, redrive, pause…), whatever the role.
QUEUEWATCH_READ_ONLY = env_bool("QUEUEWATCH_READ_ONLY", False)
# Seconds between a standby monitor's looks at whether any monitor leads (a log line, and one
# notification per outage to the alert channels: dashboard/alerts/monitor_silence.py).
QUEUEWATCH_STANDBY_CHECK_S = env_int("QUEUEWATCH_STANDBY_CHECK_S", 60, minimum=1)
QUEUEWATCH_MONITOR_TICK = float(env_int("QUEUEWATCH_MONITOR_TICK_MS", 2000, minimum=200)) / 1000
# Between exact snapshots the monitor keeps counts current from the events stream; a snapshot
# corrects whatever events cannot tell (trimmed finished sets, prioritized vs waiting).
QUEUEWATCH_RECONCILE_MS = env_int("QUEUEWATCH_RECONCILE_MS", 10000, minimum=200)
QUEUEWATCH_HISTORY_MINUTE_DAYS = env_int("QUEUEWATCH_HISTORY_MINUTE_DAYS", 7, minimum=1)
QUEUEWATCH_HISTORY_HOUR_DAYS = env_int("QUEUEWATCH_HISTORY_HOUR_DAYS", 90, minimum=1)

# --- Health checks and Prometheus /metrics ----------------------------------------------------

# A bearer token Prometheus sends (`authorization: {credentials: …}`), compared in constant
# time; and/or an allow-list of client networks (CIDRs, matched against REMOTE_ADDR). With
# both set, a scrape needs both. With neither, /metrics needs a logged-in user or an API token.
from dashboard.core.env import env_networks  # noqa: E402

QUEUEWATCH_METRICS_TOKEN = env_str("QUEUEWATCH_METRICS_TOKEN")
QUEUEWATCH_METRICS_ALLOW = env_networks("QUEUEWATCH_METRICS_ALLOW")
# Reverse proxies in front of Queuewatch (CIDRs): only requests connecting from these have their
# X-Forwarded-For read, for the address failed logins are counted under.
QUEUEWATCH_TRUSTED_PROXIES = env_networks("QUEUEWATCH_TRUSTED_PROXIES")

# --- Alerting: rule evaluation and the daily digest -------------------------------------------

# How often the monitor evaluates alert rules (seconds).
QUEUEWATCH_ALERT_INTERVAL_S = env_int("QUEUEWATCH_ALERT_INTERVAL_S", 5, minimum=1)
# Wait/processing times per job name from the events (docs/timings.md); off only to measure
# what they cost (bench/redis_load.py) or to shed the monitor's CPU for them.
QUEUEWATCH_TIMINGS = env_bool("QUEUEWATCH_TIMINGS", True)
# Seconds between the monitor's CLIENT LIST reads (workers per queue, queues/workers.py).
QUEUEWATCH_WORKERS_INTERVAL_S = env_int("QUEUEWATCH_WORKERS_INTERVAL_S", 10, minimum=1)
# Optional digest of the last day's alerts, on a cron schedule in a time zone, to the named
# channels (e.g. QUEUEWATCH_DIGEST_CRON="0 8 * * 1-5", QUEUEWATCH_DIGEST_TZ=Europe/Paris).
QUEUEWATCH_DIGEST_CRON = env_str("QUEUEWATCH_DIGEST_CRON") or ""
QUEUEWATCH_DIGEST_TZ = env_str("QUEUEWATCH_DIGEST_TZ") or "UTC"
QUEUEWATCH_DIGEST_CHANNELS = env_list("QUEUEWATCH_DIGEST_CHANNELS", [])
if QUEUEWATCH_DIGEST_CRON:
    from queues.cron import CronError, cron_validate  # noqa: E402

    try:
        cron_validate(QUEUEWATCH_DIGEST_CRON, QUEUEWATCH_DIGEST_TZ)
    except CronError as exc:
        raise ImproperlyConfigured(f"QUEUEWATCH_DIGEST_CRON / QUEUEWATCH_DIGEST_TZ: {exc}") from None
# --- Alert notifications: email (SMTP) and links ----------------------------------------------

# The dashboard's public address (https://queues.example.com), for links in emails and webhooks.
QUEUEWATCH_BASE_URL = (env_str("QUEUEWATCH_BASE_URL") or "").rstrip("/")
if QUEUEWATCH_BASE_URL and not QUEUEWATCH_BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        f"QUEUEWATCH_BASE_URL must start with http:// or https:// (got {QUEUEWATCH_BASE_URL!r})."
    )
# Secrets at rest (webhook signing secrets, header values): comma-separated Fernet keys, the first
# encrypts, all decrypt (dashboard/core/crypto.py). Unset: derived from the secret key.
QUEUEWATCH_ENCRYPTION_KEY = env_str("QUEUEWATCH_ENCRYPTION_KEY")
try:
    from dashboard.core.crypto import parse_keys  # noqa: E402

    parse_keys(QUEUEWATCH_ENCRYPTION_KEY, secret_key=SECRET_KEY)
except ValueError as exc:
    raise ImproperlyConfigured(f"QUEUEWATCH_ENCRYPTION_KEY: {exc}") from None
# Where webhooks may be sent (queues/outbound.py): networks, addresses, host names or ".domain";
# loopback and link-local are denied unless allowed here; "private" in the deny list denies RFC 1918.
QUEUEWATCH_WEBHOOK_ALLOW = env_list("QUEUEWATCH_WEBHOOK_ALLOW", [])
QUEUEWATCH_WEBHOOK_DENY = env_list("QUEUEWATCH_WEBHOOK_DENY", [])
try:
    from queues.outbound import OutboundPolicy  # noqa: E402

    OutboundPolicy.from_entries(allow=QUEUEWATCH_WEBHOOK_ALLOW, deny=QUEUEWATCH_WEBHOOK_DENY)
except ValueError as exc:
    raise ImproperlyConfigured(f"QUEUEWATCH_WEBHOOK_ALLOW / QUEUEWATCH_WEBHOOK_DENY: {exc}") from None
EMAIL_BACKEND = env_str("QUEUEWATCH_EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("QUEUEWATCH_SMTP_HOST", "")  # unset: email channels report "not configured"
EMAIL_PORT = env_int("QUEUEWATCH_SMTP_PORT", 587, minimum=1)
EMAIL_HOST_USER = env_str("QUEUEWATCH_SMTP_USER", "")
EMAIL_HOST_PASSWORD = env_str("QUEUEWATCH_SMTP_PASSWORD", "")  # or QUEUEWATCH_SMTP_PASSWORD_FILE
EMAIL_USE_TLS = env_bool("QUEUEWATCH_SMTP_STARTTLS", EMAIL_PORT == 587)
EMAIL_USE_SSL = env_bool("QUEUEWATCH_SMTP_SSL", EMAIL_PORT == 465)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("QUEUEWATCH_SMTP_STARTTLS and QUEUEWATCH_SMTP_SSL cannot both be true.")
EMAIL_TIMEOUT = env_int("QUEUEWATCH_SMTP_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("QUEUEWATCH_EMAIL_FROM", "queuewatch@localhost")
