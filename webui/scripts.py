"""What the browser loads before the first chart can draw, kept small (issue 15: first paint under 1 s).

- plotly.js: `assets/plotly-cartesian-<version>.min.js`, plotly.js's cartesian bundle (scatter, bar and
  heatmap, every trace type the pages draw: 1.5 MB, against 4.8 MB for the full plotly.min.js Dash would
  load), sets `window.Plotly`, which dcc.Graph then uses instead of loading its own. Its version is the
  plotly.js of the installed `plotly` package (tests/webui/test_scripts.py checks it after an upgrade).
- Async chunks of dcc and dash_table that no page uses (markdown, mathjax, highlight, slider, upload, every
  dash_table chunk; about 3.6 MB) are loaded on demand only, instead of with the page as `eager_loading`
  loads the rest.
- The page's layout and callback list are preloaded (`<link rel="preload">` in the HTML): the server builds the
  layout, which already holds the page's figures (`app._page_container`), while the browser is still parsing
  the scripts, instead of after Dash's renderer has started and asked for it.
- Responses are compressed (Flask-Compress: zstd, br or gzip, as the browser accepts). Immutable ones —
  component suites under fingerprinted URLs and assets stamped `?m=<mtime>` — are compressed once per process
  and may be cached by the browser for a year.
- Those files are code and style, the same for every user (`is_code`): the host may serve them without a login,
  and its other pages may fetch them ahead (`bundle_urls`) so that the dashboard's first open after logging in
  does not wait for them: with `<link rel="prefetch">` (into the HTTP cache), and by registering the service
  worker `SERVICE_WORKER`, which stores them in CacheStorage when it installs — where Chromium compiles
  scripts once and keeps their code cache, so the dashboard's first open runs them as a reload does, not
  parsed and compiled from scratch — and answers them from there (Static Routing API: no fetch handler runs
  for the dashboard's other requests; a miss goes to the network).

Dash keeps its resource lists per library module, so `load_lean` changes them for every app in the process
(there is one: see `source`).
"""

import functools
import hashlib
import json
import re
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import flask
from dash import Dash, dash_table, dcc
from dash.fingerprint import check_fingerprint
from flask_compress import Compress
from plotly.offline import get_plotlyjs_version

PLOTLY_BUNDLE = Path(__file__).with_name("assets") / f"plotly-cartesian-{get_plotlyjs_version()}.min.js"
EAGER_CHUNKS = ("dcc/async-graph.js", "dcc/async-dropdown.js", "dcc/async-datepicker.js")
"""The async chunks the pages use (dcc.Graph, dcc.Dropdown, dcc.DatePickerRange), loaded with the page."""
IMMUTABLE = "public, max-age=31536000, immutable"


def _load_unused_chunks_on_demand() -> None:
    for resource in (*dcc._js_dist, *dash_table._js_dist):
        path = resource.get("relative_package_path", "")
        if resource.get("namespace") == "plotly" or (resource.get("async") is True and path not in EAGER_CHUNKS):
            resource["async"] = "lazy"


CODE_PATHS = ("/_dash-component-suites/", "/assets/")


def is_code(path: str) -> bool:
    """`path` (under the app's prefix) serves a component suite, an asset or the service worker: code and style,
    the same for every user, no cluster data. A path climbing out of them (`..`) is not."""
    return (path.startswith(CODE_PATHS) or path == SERVICE_WORKER) and ".." not in path.split("/")


def _is_immutable_url(path: str, query: dict) -> bool:
    """A component suite under a fingerprinted URL (Dash answers it with a year's max-age) or an `?m=`-stamped
    asset: its URL changes whenever its content does."""
    if "/_dash-component-suites/" in path:
        return check_fingerprint(path.split("/_dash-component-suites/", 1)[1])[1]
    return "/assets/" in path and "m" in query


def _is_immutable(request: flask.Request) -> bool:
    return request.method == "GET" and _is_immutable_url(request.path, request.args)


class _CompressedOnce:
    """Flask-Compress's cache: compressed immutable responses by (algorithm, URL); nothing else is kept (the
    key `_cache_key` gives every other response is empty)."""

    def __init__(self) -> None:
        self._entries: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        return self._entries.get(key)

    def set(self, key: str, value: bytes) -> None:
        if not key.endswith(";"):
            with self._lock:
                self._entries[key] = value


def _cache_key(request: flask.Request) -> str:
    return request.full_path if _is_immutable(request) else ""


def _cache_for_good(response: flask.Response) -> flask.Response:
    """Runs before Flask-Compress (registered after it). An asset is sent as a file stream, which Flask-Compress
    would compress again on every request (and not with gzip): it is read whole so its compression is kept."""
    if _is_immutable(flask.request) and response.status_code == 200:
        response.headers["Cache-Control"] = IMMUTABLE
        if response.is_streamed:
            response.direct_passthrough = False
            response.set_data(response.get_data())
    return response


def _preload_layout(app: Dash) -> None:
    """Dash's renderer fetches these two URLs with the page's credentials (`same-origin`), which is what a
    `crossorigin="anonymous"` preload is fetched with, so the browser hands it the preloaded answers."""
    prefix = app.config.requests_pathname_prefix
    links = "".join(f'<link rel="preload" href="{prefix}{path}" as="fetch" crossorigin="anonymous">'
                    for path in ("_dash-layout", "_dash-dependencies"))
    app.index_string = app.index_string.replace("{%metas%}", "{%metas%}" + links, 1)


def bundle_urls(app: Dash) -> tuple[str, ...]:
    """The immutable scripts and stylesheets the app's pages load, in the order they load them (URLs under the
    app's `requests_pathname_prefix`): what a page outside the dashboard may prefetch."""
    html = app.server.test_client().get("/").get_data(as_text=True)
    urls = (script or sheet for script, sheet in re.findall(
        r'<script src="([^"]+)"|<link rel="stylesheet" href="([^"]+)"', html))
    return tuple(url for url in urls if _is_immutable_url(urlsplit(url).path, parse_qs(urlsplit(url).query)))


SERVICE_WORKER = "/service-worker.js"
"""The service worker's path under the app's prefix; its scope is the app's prefix."""
_SERVICE_WORKER_JS = """// Strom dashboard: its scripts and stylesheets kept in CacheStorage (webui/scripts.py).
const CACHE = %(cache)s;
const BUNDLES = %(bundles)s;
const PREFIXES = %(prefixes)s;
const ROUTED = self.InstallEvent && "addRoutes" in InstallEvent.prototype;
self.addEventListener("install", (event) => {
  if (ROUTED) {
    event.addRoutes(PREFIXES.map((prefix) => ({condition: {urlPattern: {pathname: prefix + "*"}},
                                               source: {cacheName: CACHE}})));
  }
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(BUNDLES)).then(() => self.skipWaiting()));
});
self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys().then((names) => Promise.all(names
    .filter((name) => name.startsWith("strom-dashboard-") && name !== CACHE).map((name) => caches.delete(name)))));
});
if (!ROUTED) {  // no Static Routing API: a fetch handler answers the same requests
  self.addEventListener("fetch", (event) => {
    const path = new URL(event.request.url).pathname;
    if (event.request.method === "GET" && PREFIXES.some((prefix) => path.startsWith(prefix))) {
      event.respondWith(caches.match(event.request, {cacheName: CACHE})
        .then((cached) => cached || fetch(event.request)));
    }
  });
}
"""


def service_worker_script(bundles: tuple[str, ...], prefix: str) -> str:
    """The service worker keeping `bundles` in a cache named after them (a release with other bundles installs
    a new worker, which drops the old cache) and answering the requests under `prefix`'s code paths."""
    digest = hashlib.sha256("\n".join(bundles).encode()).hexdigest()[:16]
    return _SERVICE_WORKER_JS % {"cache": json.dumps(f"strom-dashboard-{digest}"), "bundles": json.dumps(bundles),
                                 "prefixes": json.dumps([prefix.rstrip("/") + path for path in CODE_PATHS])}


def _serve_service_worker(app: Dash) -> None:
    script = functools.cache(lambda: service_worker_script(bundle_urls(app), app.config.requests_pathname_prefix))
    app.server.add_url_rule(SERVICE_WORKER, "service_worker", lambda: flask.Response(
        script(), mimetype="text/javascript", headers={"Cache-Control": "no-cache"}))


def load_lean(app: Dash) -> None:
    """Configure `app` (built with `eager_loading=True`, assets in webui/assets) as described above."""
    assert PLOTLY_BUNDLE.exists(), f"{PLOTLY_BUNDLE.name} is missing: the plotly.js bundle must match plotly"
    _load_unused_chunks_on_demand()
    _preload_layout(app)
    _serve_service_worker(app)
    app.server.config.update(COMPRESS_CACHE_BACKEND=_CompressedOnce, COMPRESS_CACHE_KEY=_cache_key)
    Compress(app.server)
    app.server.after_request(_cache_for_good)
