"""The embedded MQTT broker: amqtt in-process, for the one-machine defaults.

``siltwatch demo`` and developers without Mosquitto get a real MQTT 3.1.1
broker with no set-up. Production uses Mosquitto (deploy/); the tests prefer
it too and fall back to this one.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from types import TracebackType
from typing import Any, Self

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port free on loopback right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


class StartStop:
    """``with`` support for a server: ``start()`` on enter, ``close()`` on exit.

    ``close()`` is ``stop()`` unless the server has more to release than its process or
    thread (a folder it created, say). The tests' servers (tests/servers.py) use it too.
    """

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class LoopbackServer(StartStop):
    """A server on 127.0.0.1 at a port chosen once: a restart listens where it did."""

    _port: int

    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def port(self) -> int:
        return self._port


class EmbeddedBroker(LoopbackServer):
    """An in-process amqtt broker (MQTT 3.1.1 only, anonymous) in a background thread.

    Why: the embedded default broker (and the tests' fallback where mosquitto is missing). amqtt needs an
    asyncio loop; tests are synchronous (paho has its own network thread), so the broker
    gets a private loop in a daemon thread. It does not enforce ACLs the way Mosquitto
    does, and refuses MQTT v5 clients, so tests that need those must require Mosquitto.
    """

    def __init__(self, port: int | None = None) -> None:
        self._port = port if port is not None else free_port()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._broker: Any = None

    @property
    def running(self) -> bool:
        return self._broker is not None

    def start(self) -> None:
        """Start the loop thread and the broker; return once the port accepts connections."""
        if self.running:
            return
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="amqtt-broker", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            future = asyncio.run_coroutine_threadsafe(self._start_broker(), loop)
            self._broker = future.result(timeout=START_TIMEOUT_S)
        except BaseException:
            self._stop_loop()
            raise
        # No TCP probe needed: Broker.start() returns after its listening socket is bound
        # (and a probe makes amqtt log "No data to decode MQTT packet" errors).

    async def _start_broker(self) -> Any:
        """Build the broker inside its loop (amqtt binds asyncio objects to the running loop)."""
        from amqtt.broker import Broker  # imported late: only needed for the fallback

        config: dict[str, Any] = {
            "listeners": {"default": {"type": "tcp", "bind": f"{LOOPBACK}:{self._port}"}},
            # Only anonymous auth: no $SYS publisher, no packet logger (noise in test logs).
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True},
            },
        }
        broker = Broker(config)
        await broker.start()
        return broker

    def stop(self) -> None:
        """Shut the broker down cleanly, then stop and close its loop."""
        if self._broker is not None and self._loop is not None:
            future = asyncio.run_coroutine_threadsafe(self._broker.shutdown(), self._loop)
            with contextlib.suppress(Exception):
                future.result(timeout=STOP_TIMEOUT_S)
        self._broker = None
        self._stop_loop()

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=STOP_TIMEOUT_S)
        if not loop.is_running():
            loop.close()
