"""Export streaming benchmark: first-byte time and the web process's memory while a
large failed-jobs export streams, and while clients that stopped reading hold exports open.

    .venv/bin/python bench/export_stream.py [--jobs 200000] [--payload 4096] [--stalled 2]

Starts a private redis-server and the web server Queuewatch ships (``python -m
dashboard.serve``) on loopback, seeds JOBS failed jobs of PAYLOAD bytes of data each, downloads
the export through the API and prints the time to the first byte, the total time, and the web
process's RSS before, at its peak during, and after the download. Then STALLED clients send the
same export request and never read: once the exporter has stopped reading Redis for them (its
HMGET count holds still for a second), it prints the RSS, the jobs read for them, and the RSS
after they hang up."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = [sys.executable, "-m", "dashboard.serve"]
EXPORT = "/api/v1/queues/default/bull/big/export?state=failed&format=jsonl"


def hmgets(r: redis.Redis) -> int:
    return int(r.info("commandstats").get("cmdstat_hmget", {}).get("calls", 0))


def stalled_phase(r: redis.Redis, pid: int, port: int, token: str, clients: int) -> dict:
    """``clients`` sockets that send the export request and never read; the RSS once the
    exporter has stopped for them, and after they hang up."""
    reads0, before = hmgets(r), rss_mb(pid)
    socks = []
    for _ in range(clients):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        sock.connect(("127.0.0.1", port))
        head = f"GET {EXPORT} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"
        sock.sendall(head.encode())
        socks.append(sock)
    seen: list[int] = []
    peak = before
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not (len(seen) > 10 and len(set(seen[-10:])) == 1):
        time.sleep(0.1)
        seen.append(hmgets(r))
        peak = max(peak, rss_mb(pid))
    stalled = rss_mb(pid)
    for sock in socks:
        sock.close()
    time.sleep(2)  # a figure, not a test: let the server notice the hang-ups
    return {
        "stalled_clients": clients,
        "stalled_jobs_read": seen[-1] - reads0,
        "rss_stalled_before_mb": round(before),
        "rss_stalled_mb": round(stalled),
        "rss_stalled_peak_mb": round(peak),
        "rss_after_hangup_mb": round(rss_mb(pid)),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024


def seed(r: redis.Redis, jobs: int, payload: int) -> None:
    data = '{"blob":"' + "x" * payload + '"}'
    for start in range(0, jobs, 5000):
        pipe = r.pipeline(transaction=False)
        for i in range(start, min(jobs, start + 5000)):
            pipe.hset(
                f"bull:big:{i}",
                mapping={
                    "name": "work",
                    "data": data,
                    "timestamp": 1_700_000_000_000 + i,
                    "finishedOn": 1_700_000_000_000 + i,
                    "failedReason": "boom",
                    "atm": 1,
                },
            )
            pipe.zadd("bull:big:failed", {str(i): 1_700_000_000_000 + i})
        pipe.execute()
    r.hset("bull:big:meta", mapping={"opts.maxLenEvents": 10000})
    # A one-job queue for the warm-up export (a name-filtered warm-up of the big queue would
    # walk all of it).
    r.hset("bull:warm:meta", mapping={"opts.maxLenEvents": 10000})
    r.hset("bull:warm:1", mapping={"name": "work", "data": "{}", "finishedOn": 1_700_000_000_000, "atm": 1})
    r.zadd("bull:warm:failed", {"1": 1_700_000_000_000})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--payload", type=int, default=4096)
    parser.add_argument("--stalled", type=int, default=2, help="clients that request the export and never read")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="qw-export-bench-")
    redis_port, web_port = free_port(), free_port()
    procs = []
    try:
        procs.append(
            subprocess.Popen(
                [
                    shutil.which("redis-server"),
                    "--port",
                    str(redis_port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    work,
                ],
                stdout=subprocess.DEVNULL,
            )
        )
        r = redis.Redis(port=redis_port)
        while True:
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        t0 = time.monotonic()
        seed(r, args.jobs, args.payload)
        print(f"seeded {args.jobs} jobs x {args.payload} B in {time.monotonic() - t0:.1f} s", flush=True)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("QUEUEWATCH_")},
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "QUEUEWATCH_SECRET_KEY": "bench-" + "x" * 40,
            "QUEUEWATCH_INSECURE_DEV": "1",
            "QUEUEWATCH_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "DATABASE_URL": f"sqlite:///{work}/db.sqlite3",
            "QUEUEWATCH_LOG_LEVEL": "WARNING",
        }

        def manage(*a):
            return subprocess.run(
                [sys.executable, "manage.py", *a], cwd=ROOT, env=env, check=True, capture_output=True, text=True
            ).stdout.strip()

        manage("migrate", "-v0")
        manage("demo_user", "--username", "bench")
        token = manage("api_token", "bench")
        web = subprocess.Popen(
            [*SERVER, "--host", "127.0.0.1", "--port", str(web_port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,  # its access log
            stderr=subprocess.DEVNULL,
        )
        procs.append(web)
        while True:
            try:
                http.client.HTTPConnection("127.0.0.1", web_port, timeout=1).request("GET", "/login/")
                break
            except OSError:
                time.sleep(0.1)
        # One small export first, so imports and connections are not counted as the big one's.
        warm = http.client.HTTPConnection("127.0.0.1", web_port)
        warm.request(
            "GET",
            "/api/v1/queues/default/bull/warm/export?state=failed&format=csv",
            headers={"Authorization": f"Bearer {token}"},
        )
        warm.getresponse().read()
        # What a running monitor publishes (dashboard.core.dash_redis.publish_queue_list): the
        # request reads the queue list instead of discovering (no monitor runs here).
        r.set("queuewatch:queues:default", json.dumps([["bull", "big"], ["bull", "warm"]]), ex=600)
        before = rss_mb(web.pid)
        peak = [before]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], rss_mb(web.pid))
                time.sleep(0.05)

        threading.Thread(target=sample, daemon=True).start()
        conn = http.client.HTTPConnection("127.0.0.1", web_port)
        start = time.monotonic()
        conn.request("GET", EXPORT, headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        response.read(1)
        first_byte = time.monotonic() - start
        total_bytes = 1
        while chunk := response.read(1 << 20):
            total_bytes += len(chunk)
        elapsed = time.monotonic() - start
        done.set()
        print(f"jobs {args.jobs}, payload {args.payload} B, {total_bytes / 1e6:.0f} MB downloaded")
        print(f"first byte {first_byte:.3f} s, whole export {elapsed:.1f} s")
        print(
            f"web RSS: before {before:.0f} MB, peak {peak[0]:.0f} MB (+{peak[0] - before:.0f}), "
            f"after {rss_mb(web.pid):.0f} MB"
        )
        stalled = stalled_phase(r, web.pid, web_port, token, args.stalled) if args.stalled else {}
        if stalled:
            print(
                f"{args.stalled} stalled clients: {stalled['stalled_jobs_read']} jobs read for them, "
                f"web RSS {stalled['rss_stalled_before_mb']} -> {stalled['rss_stalled_mb']} MB "
                f"(peak {stalled['rss_stalled_peak_mb']}), after they hung up {stalled['rss_after_hangup_mb']} MB"
            )
        print(
            json.dumps(
                {
                    "jobs": args.jobs,
                    "payload": args.payload,
                    "downloaded_mb": round(total_bytes / 1e6),
                    "first_byte_s": round(first_byte, 3),
                    "total_s": round(elapsed, 1),
                    "rss_before_mb": round(before),
                    "rss_peak_mb": round(peak[0]),
                    **stalled,
                }
            )
        )
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
