"""Settings, all read from the environment in this one place.

STROM_VAR_DIR      state directory (default <repo>/var): SQLite DB, secret key, logs
DATABASE_URL       e.g. postgres://user@127.0.0.1:5432/strom (default: SQLite in STROM_VAR_DIR)
CELERY_BROKER_URL  Redis URL (default redis://127.0.0.1:6390/0, the Redis `make run` starts)
STROM_CELERY_QUEUE Celery's default queue name (default "celery")
DJANGO_SECRET_KEY  (default: generated once into STROM_VAR_DIR/secret_key)
STROM_DEBUG        "1" for Django's debug pages (ignored under STROM_PRODUCTION)
STROM_ALLOWED_HOSTS comma-separated extra host names (under STROM_PRODUCTION: the only ones, required)
STROM_PRODUCTION   "1": behind HTTPS in production — DEBUG off, secure cookies, HSTS, HTTP → HTTPS redirect
                   (except the brokers' /internal/), so that `manage.py check --deploy` reports nothing
STROM_SECURE_PROXY_SSL_HEADER e.g. "HTTP_X_FORWARDED_PROTO" when a TLS-terminating proxy sets it to "https"
STROM_ADMIN_USER   the local superuser `make run` creates and management commands act as by default ("admin")
STROM_AUDIT_RETENTION_DAYS how long audit entries are kept (default 365)
STROM_LOGIN_FAILURE_LIMIT, STROM_LOGIN_COOLOFF_MINUTES failed logins (per user name and client address) before
                   a lockout, and its length (default 5 and 15)
STROM_CLUSTER_SECRET the shared secret of the broker ↔ control plane internal API (default: generated once
                   into STROM_VAR_DIR/cluster_secret)
Cluster timing (Kafka's names; see "The controller" below): STROM_BROKER_SESSION_TIMEOUT_MS,
STROM_BROKER_HEARTBEAT_INTERVAL_MS, STROM_LIVENESS_LOCK_WAIT_MS, STROM_CONTROLLER_LEASE_MS, STROM_CONTROLLER_TICK_MS,
STROM_AUTO_LEADER_REBALANCE_ENABLE, STROM_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS,
STROM_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE, STROM_NUM_PARTITIONS
STROM_BOOTSTRAP_SERVERS Kafka bootstrap list (host:port,…) the control plane uses as a Kafka client for consumer
                   groups and reports (default: the listeners of the running brokers in the metadata store)
STROM_REPORTS_DIR  where report runs write their Parquet, CSV and inputs (default STROM_VAR_DIR/reports)
STROM_REPORTS_QUEUE the Celery queue of report runs (default "reports"; one worker with -c 1 consumes it)
STROM_REPORT_TIME_LIMIT_S a report run is stopped (its Spark job killed) after this long (default 7200)
STROM_REPORT_HEARTBEAT_TIMEOUT_S a running report run without a heartbeat from its runner for this long is failed
                   and its Spark job killed (default 120 s)
STROM_SPARK_MASTER Spark master the report jobs run on (default local[*]; e.g. spark://host:7077)
"""

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = Path(os.environ.get("STROM_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _generated_secret(env: str, filename: str) -> str:
    """The environment's value, else a random secret generated once into STROM_VAR_DIR/<filename>."""
    if key := os.environ.get(env):
        return key
    path = VAR_DIR / filename
    if not path.exists():  # written whole under a private name, then linked: never seen empty by a process
        # starting at the same moment (the first `make test` runs its two database passes at once)
        draft = VAR_DIR / f".{filename}.{os.getpid()}.{secrets.token_hex(8)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(50))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process's secret came first: everyone uses that one
        finally:
            os.unlink(draft)
    return path.read_text().strip()


SECRET_KEY = _generated_secret("DJANGO_SECRET_KEY", "secret_key")
# Bearer token of the internal API (/internal/v1/), shared with the brokers.
STROM_CLUSTER_SECRET = _generated_secret("STROM_CLUSTER_SECRET", "cluster_secret")
PRODUCTION = os.environ.get("STROM_PRODUCTION") == "1"
DEBUG = os.environ.get("STROM_DEBUG") == "1" and not PRODUCTION
_EXTRA_HOSTS = [h.strip() for h in os.environ.get("STROM_ALLOWED_HOSTS", "").split(",") if h.strip()]
if PRODUCTION and not _EXTRA_HOSTS:
    raise ImproperlyConfigured("STROM_PRODUCTION=1 needs STROM_ALLOWED_HOSTS (the host names the console is "
                               "served under, comma-separated)")
ALLOWED_HOSTS = _EXTRA_HOSTS if PRODUCTION else ["127.0.0.1", "localhost", "[::1]", "testserver", *_EXTRA_HOSTS]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "axes",
    "django_filters",
    "drf_spectacular",
    "django_celery_beat",
    "controlplane.core",
    "controlplane.cluster",
    "controlplane.liveness",
    "controlplane.topics",
    "controlplane.health",
    "controlplane.metrics",
    "controlplane.controller",
    "controlplane.brokerapi",
    "controlplane.groups",
    "controlplane.reports",
    "controlplane.console",
    "controlplane.audit",
    "controlplane.access",
    "controlplane.alerts",
    "controlplane.lag",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into its lockout answer
]

ROOT_URLCONF = "controlplane.urls"
WSGI_APPLICATION = "controlplane.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "controlplane.console.navigation.navigation",
                "controlplane.dashboard.mount.dashboard_bundles",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.config(default=f"sqlite:///{VAR_DIR / 'strom.sqlite3'}", conn_max_age=60)
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # WAL lets the web process, Celery and the controller read while one of them writes; the test
    # database is a file too, so that real Celery processes started by tests can share it.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-strom.sqlite3")}
    # Broker liveness (heartbeats, hang-ups: controlplane.liveness) in its own file beside it, so that a
    # heartbeat never waits for SQLite's one write lock, which a metadata change holds for its whole transaction.
    _metadata_file = Path(DATABASES["default"]["NAME"])
    DATABASES["liveness"] = {**DATABASES["default"],
                             "NAME": str(_metadata_file.with_name(f"{_metadata_file.stem}-liveness.sqlite3")),
                             "TEST": {"NAME": str(VAR_DIR / "test-strom-liveness.sqlite3")}}
# The database alias of controlplane.liveness: its own SQLite file, or the metadata store's database on
# PostgreSQL (row locks: a heartbeat's row is never locked by a metadata change).
STROM_LIVENESS_DATABASE = "liveness" if "liveness" in DATABASES else "default"
DATABASE_ROUTERS = ["controlplane.liveness.router.LivenessRouter"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses logins of a locked-out user name + address
    "django.contrib.auth.backends.ModelBackend",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "console:overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise serves from finders, but wants the directory
WHITENOISE_USE_FINDERS = True

REST_FRAMEWORK = {
    # Token first: an unauthenticated request then gets 401 with `WWW-Authenticate: Token`.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "knox.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Reads need the viewer role; a view's mutations need the action it declares (controlplane.access.rest).
    "DEFAULT_PERMISSION_CLASSES": ["controlplane.access.rest.ActionPermission"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "controlplane.core.filters.FilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Strom control plane API",
    "DESCRIPTION": "Cluster metadata (brokers, topics, partitions) and administration of a Strom cluster.",
    "VERSION": "1",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SCHEMA_PATH_PREFIX": "/api/",
}

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6390/0")
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", CELERY_BROKER_URL)
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("STROM_CELERY_QUEUE", "celery")
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Report runs (a Spark JVM of ~1 GB each) are sent to their own queue, consumed by one worker with -c 1: one at a time.
STROM_REPORTS_QUEUE = os.environ.get("STROM_REPORTS_QUEUE", "reports")

# API tokens: django-rest-knox with Strom's named token model; a token expires only if created with an expiry.
KNOX_TOKEN_MODEL = "access.ApiToken"
# knox's own AuthToken is swapped out, but its migrations would still create its table (with a foreign key to
# users that breaks PostgreSQL flushes); without migrations, no table is created for a swapped model.
MIGRATION_MODULES = {"knox": None}
REST_KNOX = {"TOKEN_TTL": None, "AUTH_HEADER_PREFIX": "Token", "TOKEN_PREFIX": "strom_"}

# Failed-login throttling (django-axes): after STROM_LOGIN_FAILURE_LIMIT failures of one user name from one
# address, that pair is locked out for STROM_LOGIN_COOLOFF_MINUTES (the console's login and POST /api/token/).
AXES_FAILURE_LIMIT = int(os.environ.get("STROM_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("STROM_LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "controlplane.access.login.lockout_response"
AXES_VERBOSE = False

# The local superuser (`manage.py ensure_admin`); management commands act as it unless given --as USER.
STROM_ADMIN_USER = os.environ.get("STROM_ADMIN_USER", "admin")
# How long audit entries are kept (days); older ones are pruned daily by controlplane.audit.prune_audit_log.
STROM_AUDIT_RETENTION_DAYS = int(os.environ.get("STROM_AUDIT_RETENTION_DAYS", "365"))

# Cookies and headers. The session cookie is HttpOnly, both it and the CSRF cookie SameSite=Lax; every answer forbids
# framing, MIME sniffing and cross-origin referrers.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^internal/"]  # brokers speak plain HTTP to the internal API (cluster secret)
    SECURE_HSTS_SECONDS = 31_536_000
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    if header := os.environ.get("STROM_SECURE_PROXY_SSL_HEADER"):
        SECURE_PROXY_SSL_HEADER = (header, "https")

# Report runs: outputs (Parquet by report date and run, CSV, manifests) and inputs (retention snapshots) live here;
# a run is stopped, its Spark job's process group killed, after STROM_REPORT_TIME_LIMIT_S.
STROM_REPORTS_DIR = Path(os.environ.get("STROM_REPORTS_DIR", VAR_DIR / "reports"))
STROM_REPORT_TIME_LIMIT_S = int(os.environ.get("STROM_REPORT_TIME_LIMIT_S", "7200"))
# A running run whose runner has not written a heartbeat for this long (or whose runner process is gone) is failed
# by the reaper (beat, every minute), its Spark job's process group killed.
STROM_REPORT_HEARTBEAT_TIMEOUT_S = int(os.environ.get("STROM_REPORT_HEARTBEAT_TIMEOUT_S", "120"))
STROM_SPARK_MASTER = os.environ.get("STROM_SPARK_MASTER", "local[*]")

# How often the dashboard's open pages refresh their figures (ms).
STROM_DASHBOARD_REFRESH_MS = int(os.environ.get("STROM_DASHBOARD_REFRESH_MS", "10000"))

# How long health snapshots are kept (days).
STROM_HEALTH_RETENTION_DAYS = int(os.environ.get("STROM_HEALTH_RETENTION_DAYS", "7"))


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def _env_bool(name: str, default: bool) -> bool:
    return os.environ.get(name, "true" if default else "false").strip().lower() in ("1", "true", "yes")


# The controller (`manage.py run_controller`) and the brokers' sessions, with Kafka's config names.
# broker.session.timeout.ms / broker.heartbeat.interval.ms: Kafka's 9000/2000 make failover take ~13 s;
# Strom aims at <= 3 s from a leader's death to the next acknowledged record. 2000 ms tolerates 7 missed
# heartbeats at 250 ms (a heartbeat is one small UPDATE; measured worst gaps are far below that).
STROM_BROKER_SESSION_TIMEOUT_MS = _env_int("STROM_BROKER_SESSION_TIMEOUT_MS", 2000)
STROM_BROKER_HEARTBEAT_INTERVAL_MS = _env_int("STROM_BROKER_HEARTBEAT_INTERVAL_MS", 250)
# How long the controller's lease renewal waits for SQLite's write lock (held by metadata changes) before giving
# up and keeping its unexpired lease (cluster.metadata.liveness_write). Heartbeats do not wait for it: broker
# liveness has its own database (controlplane.liveness).
STROM_LIVENESS_LOCK_WAIT_MS = _env_int("STROM_LIVENESS_LOCK_WAIT_MS", 750)
# The controller's lease in the database: renewed every third of it; a successor waits for it to expire.
STROM_CONTROLLER_LEASE_MS = _env_int("STROM_CONTROLLER_LEASE_MS", 3000)
STROM_CONTROLLER_TICK_MS = _env_int("STROM_CONTROLLER_TICK_MS", 100)
# How often the controller advances reassignment executions (controller.executor): follows the moves in
# progress, refreshes their progress and starts the next batch.
STROM_EXECUTOR_INTERVAL_MS = _env_int("STROM_EXECUTOR_INTERVAL_MS", 1000)
# auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds, leader.imbalance.per.broker.percentage
STROM_AUTO_LEADER_REBALANCE_ENABLE = _env_bool("STROM_AUTO_LEADER_REBALANCE_ENABLE", True)
STROM_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS = _env_int("STROM_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS", 300)
STROM_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = _env_int("STROM_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE", 10)
# The metadata log (cluster.changelog): how many records of the newest changes are kept for brokers to catch
# up by delta; a broker further behind loads a snapshot. 200,000 covers two failovers of a 100,000-partition
# cluster.
STROM_METADATA_LOG_RETENTION_RECORDS = _env_int("STROM_METADATA_LOG_RETENTION_RECORDS", 200_000)
# num.partitions: partitions of a topic created with num_partitions = -1.
STROM_NUM_PARTITIONS = _env_int("STROM_NUM_PARTITIONS", 1)
# Where the control plane connects as a Kafka admin client (consumer groups); "" means the running brokers.
STROM_BOOTSTRAP_SERVERS = os.environ.get("STROM_BOOTSTRAP_SERVERS", "")

# Consumer lag (issue 14): `manage.py run_lag_monitor` runs monitoring.LagMonitor and serves its HTTP API on
# 127.0.0.1:STROM_LAG_MONITOR_PORT behind the cluster secret; the web views (/v3/…, /metrics, /api/lag/…)
# proxy to STROM_LAG_MONITOR_URL. STROM_LAG_MONITOR_CONFIG: a JSON file of monitor settings (Burrow's key names).
STROM_LAG_MONITOR_PORT = _env_int("STROM_LAG_MONITOR_PORT", 8010)
STROM_LAG_MONITOR_URL = os.environ.get("STROM_LAG_MONITOR_URL", f"http://127.0.0.1:{STROM_LAG_MONITOR_PORT}")
STROM_LAG_MONITOR_CONFIG = os.environ.get("STROM_LAG_MONITOR_CONFIG", "")
# Webhook retries: seconds to wait after the 1st, 2nd, … failed attempt (Standard Webhooks' schedule).
STROM_WEBHOOK_RETRY_SCHEDULE_S = tuple(float(s) for s in os.environ.get(
    "STROM_WEBHOOK_RETRY_SCHEDULE_S", "5,300,1800,7200,18000,36000,50400,72000,86400").split(","))

# Cluster alerts (controlplane.alerts.cluster_alerts): seconds a broker may be down, and a partition
# under-replicated, before it is announced (offline partitions are announced at once).
STROM_ALERT_BROKER_DOWN_GRACE_S = float(os.environ.get("STROM_ALERT_BROKER_DOWN_GRACE_S", "30"))
STROM_ALERT_UNDER_REPLICATED_GRACE_S = float(os.environ.get("STROM_ALERT_UNDER_REPLICATED_GRACE_S", "60"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"timed": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "timed"}},
    "root": {"handlers": ["console"], "level": os.environ.get("STROM_LOG_LEVEL", "WARNING")},
}
