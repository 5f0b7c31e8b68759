"""The delivery thread of ``siltwatch serve``: an enqueue wakes it, stop() ends it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from alerts.outbox import Outbox
from alerts.worker import DeliveryThread, DeliveryWorker, OutboxSink
from tests.alerts.helpers import OFFICER, SITE, RecordingChannel, note


class SignallingChannel(RecordingChannel):
    def __init__(self) -> None:
        super().__init__()
        self.arrived = threading.Event()

    def transmit(self, address: str, message: dict[str, str], delivery: str) -> None:
        super().transmit(address, message, delivery)
        self.arrived.set()


def test_an_enqueue_wakes_the_thread_which_sends_and_stops_cleanly(tmp_path: Path) -> None:
    channel = SignallingChannel()
    outbox = Outbox(tmp_path / "o.sqlite3")
    worker = DeliveryWorker(outbox, [channel], clock=time.time, site=SITE)
    # A long idle sleep: only the wake-up from the enqueue can make the send happen in time.
    thread = DeliveryThread(worker, max_sleep_s=600)
    sink = OutboxSink(outbox, [channel], time.time, on_enqueue=thread.wake)
    thread.start()
    try:
        sink.send(note(recipients=(OFFICER,)))
        assert channel.arrived.wait(10), "the delivery thread did not send"
    finally:
        thread.stop()
    assert not thread._thread.is_alive()
    assert outbox.counts() == {"sent": 1}
    outbox.close()
