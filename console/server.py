"""The console's HTTP server: uvicorn in a thread beside the MQTT loop.

``siltwatch serve --http`` and ``siltwatch demo --web`` run the console in the
process that ingests, so it reads the store the service writes and its
acknowledgements stop the escalations that process schedules. One thread, one
event loop; the service's own threads are untouched. Port 0 picks a free port
(tests); ``url`` then says which.

Proxies: uvicorn believes ``X-Forwarded-For`` from 127.0.0.1 unless told
otherwise, so anyone who can reach the port on loopback (or through a local
tunnel) could pick the address the login throttle counts. Here it believes no
proxy unless ``trusted_proxies`` names them (``--trusted-proxy``): behind an
ingress, give its address, and each person is counted by their own address.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import uvicorn


class ConsoleServer:
    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 8080,
        trusted_proxies: Sequence[str] = (),
    ) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            access_log=False,
            proxy_headers=bool(trusted_proxies),
            forwarded_allow_ips=list(trusted_proxies),
        )
        self.server = uvicorn.Server(config)
        self.host = host
        self._thread = threading.Thread(target=self.server.run, name="console-http", daemon=True)

    @property
    def port(self) -> int:
        sockets = [s for srv in self.server.servers for s in srv.sockets]
        return int(sockets[0].getsockname()[1]) if sockets else 0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout_s: float = 15.0) -> None:
        """Serve; returns once listening, or raises OSError (e.g. the port is taken)."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"the console could not listen on {self.host}")
            time.sleep(0.02)

    def stop(self, timeout_s: float = 10.0) -> None:
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6) for ``--http``/``--web``; ValueError says why."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: expected HOST:PORT, e.g. 127.0.0.1:8080")
    return (host.strip("[]") or "127.0.0.1"), int(port)
