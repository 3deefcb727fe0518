"""A real webhook receiver for the notification tests: http.server on 127.0.0.1, in a thread."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from signoff.text.notify_signature import verify


@dataclass(frozen=True)
class Delivery:
    """One POST as it arrived."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data

    @property
    def event(self) -> str:
        return str(self.json["event"])

    @property
    def call_id(self) -> str:
        source = self.json.get("request") or self.json.get("decision") or {}
        return str(source.get("call_id"))

    def signed_with(self, secret: bytes) -> bool:
        header, delivery = self.headers.get("x-signoff-signature", ""), self.headers.get("x-signoff-delivery", "")
        return verify(secret, header, delivery, self.body, now=time.time())


class Receiver:
    """Records every POST and answers `status` (e.g. 500 for a failing channel)."""

    def __init__(self, status: int = 200, path: str = "/hook", headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.headers = dict(headers or {})
        self.path = path
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver._lock:
                    receiver._deliveries.append(Delivery(self.path, headers, body))
                self.send_response(receiver.status)
                for name, value in receiver.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.path}"

    @property
    def deliveries(self) -> list[Delivery]:
        with self._lock:
            return list(self._deliveries)

    def of(self, event: str, call_id: str | None = None) -> list[Delivery]:
        return [d for d in self.deliveries if d.event == event and call_id in (None, d.call_id)]

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
