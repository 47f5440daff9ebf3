"""The web server tunes Python's collector for requests before serving (``dashboard.serve``):
the app loaded and frozen out of every collection, the youngest generation collected every
50,000 allocations. With Python's defaults every fourth overview request at 10,000 queues ran a
full collection over the whole heap (p95 136 ms against 57 ms by failed, ``bench/overview_sort.py``)."""

from __future__ import annotations

import gc

from dashboard import serve


def test_the_server_freezes_the_loaded_app_and_raises_the_thresholds_before_it_serves(monkeypatch):
    seen = []

    def run(app, **options):
        seen.append((app, gc.get_threshold(), gc.get_freeze_count()))

    monkeypatch.setattr("uvicorn.run", run)
    before = gc.get_threshold()
    try:
        assert before != serve.WEB_GC_THRESHOLDS
        serve.main(["--port", "0"])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
    [(app, thresholds, frozen)] = seen
    assert app == serve.APP and thresholds == serve.WEB_GC_THRESHOLDS
    assert frozen > 10_000  # Django and the app's modules, not walked by any collection
