"""The web server Queuewatch ships: ``python -m dashboard.serve [--host H] [--port P]``.

Every place that serves the app (``./dev run``, the image, the tests, the benchmarks) starts it
through here, so the server's options have one home:

* uvicorn, because its ``send`` waits while the socket's write buffer is full (flow control):
  a download to a client that stops reading stops being produced, instead of being buffered
  whole in the web process (an ASGI server whose ``send`` never waits, like daphne's, gives the
  app no way to apply back-pressure).
* h11 for HTTP, the ``websockets`` package (sans-I/O) for websockets.
* No trust in ``X-Forwarded-*``/``Forwarded`` headers: uvicorn would otherwise take the client
  address and scheme from them for connections from loopback, and login throttling keys on the
  real peer address (``REMOTE_ADDR``). A TLS-terminating proxy is trusted for the scheme only,
  by Django (``QUEUEWATCH_TRUST_X_FORWARDED_PROTO``).
* A websocket ping every 20 s, the socket closed when a pong takes over 30 s: idle live pages
  stay open through proxies, and dead peers are noticed.
* No websocket compression (see ``options``).
* No lifespan protocol (Channels' router serves only http and websocket) and no ``Server``
  header.
* The collector tuned for requests (``tune_collector``): the app's own objects, loaded first,
  frozen out of every collection, and the youngest generation collected every 50,000
  allocations, not 700. At 10,000 queues an overview request builds some 100,000 short-lived
  objects; with Python's defaults it ran ~30 collections, and every fourth request a full one
  over the whole heap: in process, p95 112 → 33 ms sorted by name, 136 → 57 ms by failed
  (``bench/overview_sort.py``; the p50 2–3 ms less).

``--port 0`` binds a port the OS chooses; the log line ``Uvicorn running on http://H:P`` names it.
"""

from __future__ import annotations

import argparse
import gc
import importlib

APP = "dashboard.asgi:application"
WEB_GC_THRESHOLDS = (50_000, 20, 100)
WS_PING_INTERVAL_S = 20.0
WS_PING_TIMEOUT_S = 30.0


def options(host: str, port: int) -> dict:
    """uvicorn's keyword arguments for serving Queuewatch on ``host``:``port``."""
    return {
        "host": host,
        "port": port,
        "http": "h11",
        "ws": "websockets-sansio",
        "ws_ping_interval": WS_PING_INTERVAL_S,
        "ws_ping_timeout": WS_PING_TIMEOUT_S,
        # No permessage-deflate (daphne offered none either): live fragments mix text others can
        # write (queue names, job data) with what only this viewer may see, and compressed
        # frames' sizes would tell about the latter.
        "ws_per_message_deflate": False,
        "proxy_headers": False,
        "lifespan": "off",
        "server_header": False,
        # On SIGTERM, requests still running (a download to a stalled client) get this long,
        # then the process exits: within a container runtime's usual 10 s before SIGKILL.
        "timeout_graceful_shutdown": 5,
    }


def tune_collector() -> None:
    """Load the app (Django, every module, the URL map), freeze what that made out of the
    collector's walks, and collect the youngest generation every 50,000 allocations (what
    ``main`` does before serving). Objects a request frees die by reference counting whatever
    the thresholds; only cycles wait for a collection."""
    importlib.import_module(APP.split(":", 1)[0])
    gc.collect()
    gc.freeze()
    gc.set_threshold(*WEB_GC_THRESHOLDS)


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(prog="python -m dashboard.serve", description="Serve Queuewatch (ASGI).")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind; 0 lets the OS choose (default 8000)")
    args = parser.parse_args(argv)
    tune_collector()
    uvicorn.run(APP, **options(args.host, args.port))


if __name__ == "__main__":
    main()
