"""``siltwatch record``: capture a site's MQTT traffic to a JSONL file for replay.

One line per message, ``{"topic": ..., "payload": <the JSON payload>,
"received_at": ...}``; a payload that is not JSON is kept as a string so that
the capture shows exactly what was on the wire (replay then reports that line
as bad, with its number).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import paho.mqtt.client as mqtt

from ingest.mqtt.session import BrokerSettings
from siltwatch.schema import site_subscription
from siltwatch.timefmt import utc_iso


class Recorder:
    """Subscribes to ``siltwatch/v1/{site}/#`` and appends each message to ``out``.

    The client comes from :meth:`BrokerSettings.client`, as ``serve``'s and ``log``'s do,
    so a capture reaches every broker they reach (``mqtts://`` with a CA and a client
    certificate, MQTT v5 or 3.1.1) without a second URL parser."""

    def __init__(
        self,
        site: str,
        out: Path,
        broker: BrokerSettings,
        *,
        clock_ms: Callable[[], float] | None = None,
    ) -> None:
        self.site = site
        self.out = out
        self.count = 0
        self._fh: IO[str] | None = None
        self._lock = threading.Lock()
        self._clock_ms = clock_ms
        self.subscribed = threading.Event()
        self.broker = broker
        self.client = broker.client(f"siltwatch-record-{site}")
        self.client.on_connect = lambda c, *a: c.subscribe(site_subscription(site), qos=1)
        self.client.on_subscribe = lambda *a: self.subscribed.set()
        self.client.on_message = self._on_message

    def _on_message(self, client: mqtt.Client, userdata: object, msg: mqtt.MQTTMessage) -> None:
        try:
            payload: Any = json.loads(msg.payload)
        except (ValueError, UnicodeDecodeError):
            payload = bytes(msg.payload).decode("utf-8", errors="replace")
        entry: dict[str, Any] = {"topic": msg.topic, "payload": payload}
        if self._clock_ms is not None:
            entry["received_at"] = utc_iso(int(self._clock_ms()))
        with self._lock:
            if self._fh is not None:
                self._fh.write(json.dumps(entry) + "\n")
                self._fh.flush()
                self.count += 1

    def start(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.out.open("a", encoding="utf-8")
        self.client.connect(self.broker.host, self.broker.port, keepalive=30)
        self.client.loop_start()

    def stop(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
