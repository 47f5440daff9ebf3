"""Real receivers for alert notifications, on free local ports: an HTTP server (http.server in a
thread) for webhooks and an SMTP server (aiosmtpd) for email. They record what they got and can
be told how to answer, so tests exercise the real urllib and smtplib paths end to end."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.servers import free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class WebhookReceiver:
    """``answers`` is a queue of planned answers, one per request (an HTTP status, a
    ``(status, headers)`` pair, ``"drop"``: read the request, then close the connection
    without answering, as a receiver does when it crashes after acting, or ``"hang"``: do not
    answer until ``release`` is set or 5 s pass). When it is empty, requests get 200."""

    def __init__(self):
        self.port = free_port()
        self.received: list[Received] = []
        self.answers: list = []
        self.release = threading.Event()
        self._server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                answer = receiver.answers.pop(0) if receiver.answers else 200
                if answer == "drop":
                    self.close_connection = True
                    return
                if answer == "hang":  # longer than the sender's timeout, then give up
                    receiver.release.wait(5)
                    self.close_connection = True
                    return
                status, headers = answer if isinstance(answer, tuple) else (answer, {})
                text = b"ok" if status < 300 else f"<b>refused</b> with {status}".encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        self.release.set()
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def keys(self) -> list[str]:
        return [r.headers.get("idempotency-key") for r in self.received]


class SmtpReceiver:
    """aiosmtpd on a free port. Recipients at ``@refused.test`` are refused with 550, as a mail
    server does for an unknown mailbox."""

    def __init__(self):
        from aiosmtpd.controller import Controller

        self.messages = []
        receiver = self

        class Handler:
            async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
                if address.endswith("@refused.test"):
                    return "550 5.1.1 No such user here"
                envelope.rcpt_tos.append(address)
                return "250 OK"

            async def handle_DATA(self, server, session, envelope):
                receiver.messages.append(
                    (envelope.rcpt_tos, message_from_bytes(envelope.content, policy=policy.default))
                )
                return "250 Message accepted"

        self.port = free_port()
        self._controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self._controller.start()

    def stop(self) -> None:
        self._controller.stop()
