"""Modbus TCP servers on loopback for the driver tests: a real pymodbus server,
one that never answers, and one that answers garbage."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import Any

from tests.servers import free_port


class PymodbusServer:
    """A pymodbus ``ModbusTcpServer`` holding ``holding`` registers for device ``device_id``.

    Holding register ``i`` (protocol address, 0-based) is ``holding[i]``; anything
    beyond answers with Modbus exception 2 (illegal data address).
    """

    def __init__(self, holding: list[int], device_id: int = 1) -> None:
        self.port = free_port()
        self.holding = holding
        self.device_id = device_id
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: Any = None

    async def _start(self) -> Any:
        from pymodbus.datastore import (
            ModbusDeviceContext,
            ModbusSequentialDataBlock,
            ModbusServerContext,
        )
        from pymodbus.server import ModbusTcpServer

        # Block address 1 is protocol address 0 (pymodbus datastore convention).
        block = ModbusSequentialDataBlock(1, list(self.holding))  # type: ignore[no-untyped-call]
        device = ModbusDeviceContext(hr=block)
        context = ModbusServerContext(devices={self.device_id: device})
        server = ModbusTcpServer(context, address=("127.0.0.1", self.port))
        await server.serve_forever(background=True)
        return server

    def __enter__(self) -> PymodbusServer:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._server.shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


class RawTcpServer:
    """Accepts connections; answers every request with ``reply`` (None = never answers)."""

    def __init__(self, reply: bytes | None) -> None:
        self.reply = reply
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port: int = self.sock.getsockname()[1]
        self.requests = 0
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(0.1)
        while not self._stop.is_set():
            try:
                data = conn.recv(256)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                return
            self.requests += 1
            if self.reply is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(self.reply)

    def __enter__(self) -> RawTcpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        for conn in self._conns:
            conn.close()
        self.sock.close()
