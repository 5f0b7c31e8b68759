"""A real HTTP server on loopback that records requests and answers from a script.

Why real: grafana-client speaks through niquests and influxdb-client through
urllib3, and neither is intercepted by requests-mock or responses; a socket on 127.0.0.1 is what both really talk to, so
the test sees the bytes a production server would see.

Used as the stand-in for InfluxDB 2.x's ``/api/v2/write`` (a recorded contract:
tests/ingest/test_influx_v2.py) and for Grafana's HTTP API (tests/dashboards).
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.servers import ThreadedHttpServer


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it (body already un-gzipped)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: bytes
    gzipped: bool

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any = None  # dict/list -> JSON, bytes/str as is, None -> empty
    headers: dict[str, str] = field(default_factory=dict)


Router = Callable[[Recorded], Reply]


class StandIn(ThreadedHttpServer):
    """Start with ``with StandIn(router) as s:``; ``s.url``, ``s.requests``."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                split = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                gzipped = (self.headers.get("Content-Encoding") or "").lower() == "gzip"
                body = gzip.decompress(raw) if gzipped and raw else raw
                rec = Recorded(
                    method=self.command,
                    path=split.path,
                    query={k: v[-1] for k, v in parse_qs(split.query).items()},
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    gzipped=gzipped,
                )
                with outer._lock:
                    outer.requests.append(rec)
                reply = outer.router(rec)
                if reply.body is None:
                    payload = b""
                elif isinstance(reply.body, bytes):
                    payload = reply.body
                elif isinstance(reply.body, str):
                    payload = reply.body.encode()
                else:
                    payload = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                if payload and not any(k.lower() == "content-type" for k in reply.headers):
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if payload:
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

        super().__init__(Handler)
