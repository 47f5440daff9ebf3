"""Job data is checked against a queue's JSON Schema in a separate process, so a schema or data
that costs minutes of CPU (nested ``allOf``/``$ref``, ``items`` over a huge array) cannot pin
a web process or the monitor: each item gets ``limit_s`` seconds of CPU, then fails as "took
too long".

The child (``python -m queues.job_schema``, which runs ``serve``) validates item after item, stopping an item when
it has used its CPU time with ``SIGPROF`` (it runs nothing else, on its main thread, where
signals arrive; CPU time, not wall time, so a loaded machine does not refuse what an idle one
accepts). The caller waits for the answer, idle, for ``WALL_FACTOR`` times the items' limits
plus ``GRACE_S``; past that (a long step in C that the signal cannot interrupt, a machine too
loaded to give the child its share) it kills the child, so no work goes on after the answer,
whoever asked. A child is reused across calls (starting one costs about a third of a
second; a call, a round trip of a few dozen microseconds plus the validation): a few idle ones
are kept per process, and each call takes one for itself, so threads never wait for each other.

Framework-free.
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .messages import Message, _, as_data, from_data

GRACE_S = 1.0  # beyond the items' own limits, before the child is killed
WALL_FACTOR = 3  # wall time the caller waits per second of CPU an item may use
START_S = 60.0  # for a new child to be ready (its imports), on a loaded machine
MAX_IDLE = 2  # children kept per process between calls
_HEADER = struct.Struct(">I")
_ROOT = str(Path(__file__).resolve().parent.parent)  # where the ``queues`` package is importable from


def too_long(limit_s: float) -> Message:
    return _(
        "Validation took too long (more than {seconds} s): the queue's schema is too costly to check "
        "against this data, so it is refused.",
        seconds=f"{limit_s:g}",
    )


def unavailable() -> Message:
    return _("The data could not be checked against the queue's schema (the checking process did not start).")


class WorkerUnavailable(RuntimeError):
    pass


# --- the caller's side ----------------------------------------------------------------------


class _Child:
    def __init__(self):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")]))}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "queues.job_schema"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=_ROOT,
            )
        except OSError as exc:
            raise WorkerUnavailable(str(exc)) from None
        self.pid = os.getpid()  # a forked copy of this process must not share the child
        if self._read(1, time.monotonic() + START_S) != b"R":  # ready: its imports are done
            self.kill()
            raise WorkerUnavailable("the schema worker did not start")

    def ask(self, request: bytes, deadline: float) -> bytes | None:
        """The child's answer, or None when it did not answer by ``deadline`` (it is killed)."""
        try:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(_HEADER.pack(len(request)) + request)
            self.proc.stdin.flush()
            header = self._read(_HEADER.size, deadline)
            if header is not None:
                body = self._read(_HEADER.unpack(header)[0], deadline)
                if body is not None:
                    return body
        except (OSError, ValueError, struct.error):
            pass
        self.kill()
        return None

    def _read(self, n: int, deadline: float) -> bytes | None:
        assert self.proc.stdout is not None
        fd, chunks, left = self.proc.stdout.fileno(), [], n
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                return None
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                return None  # the child died
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


_idle: list[_Child] = []
_lock = threading.Lock()


def _take() -> _Child:
    with _lock:
        while _idle:
            child = _idle.pop()
            if child.alive():
                return child
    return _Child()


def _give(child: _Child) -> None:
    with _lock:
        if child.alive() and len(_idle) < MAX_IDLE:
            _idle.append(child)
            return
    child.kill()


def validate_texts(schema_text: str, items: list[str | bytes], *, limit_s: float) -> list[list[Any]]:
    """For each item (JSON text of a job's data): why it does not pass the schema (its canonical
    JSON text), ``[]`` when it passes. Each item may take ``limit_s`` seconds of CPU; one that takes
    longer gets ``too_long``, and so do those after it when the child had to be killed."""
    if not items:
        return []
    texts = [i.decode("utf-8", "surrogatepass") if isinstance(i, bytes) else i for i in items]
    request = json.dumps({"schema": schema_text, "items": texts, "limit_s": limit_s}).encode()
    try:
        child = _take()
    except WorkerUnavailable:
        return [[unavailable()] for _ in items]
    answer = child.ask(request, time.monotonic() + WALL_FACTOR * limit_s * len(items) + GRACE_S)
    if answer is None:  # killed: nothing it was doing goes on
        return [[too_long(limit_s)] for _ in items]
    _give(child)
    return [[from_data(reason) for reason in reasons] for reasons in json.loads(answer)]


def stop_all() -> None:
    """Stop the idle children (tests, shutdown)."""
    with _lock:
        children, _idle[:] = list(_idle), []
    for child in children:
        child.kill()


# --- the child's side -----------------------------------------------------------------------


class _TooLong(BaseException):  # not an Exception: nothing in the validator catches it
    pass


def _alarm(signum, frame):
    raise _TooLong


def serve(validate: Callable[[Any, Any], list]) -> None:
    """The child's loop: requests in on stdin, answers out on stdout, until stdin closes."""
    signal.signal(signal.SIGPROF, _alarm)
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sink.write(b"R")
    sink.flush()
    while True:
        header = source.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return  # the caller went away
        request = json.loads(source.read(_HEADER.unpack(header)[0]))
        schema, limit_s, out = json.loads(request["schema"]), float(request["limit_s"]), []
        for text in request["items"]:
            try:
                signal.setitimer(signal.ITIMER_PROF, limit_s)
                try:
                    reasons = validate(schema, json.loads(text) if text else {})
                finally:
                    signal.setitimer(signal.ITIMER_PROF, 0)
            except _TooLong:
                reasons = [too_long(limit_s)]
            out.append([as_data(r, limit=500) for r in reasons])
        answer = json.dumps(out).encode()
        sink.write(_HEADER.pack(len(answer)) + answer)
        sink.flush()
