"""Edge agent benchmark: resource use at a real station's rate, and backlog flush speed.

Run: ``.venv/bin/python -m benchmarks.edge`` (needs mosquitto installed).

1. **RSS and CPU seconds per hour at 4 sensors x 1 Hz**, measured two ways:
   - *real time*: the agent process runs ``--real-s`` real seconds at 4 x 1 Hz
     and its CPU time is scaled to one hour (x 3600 / N). This includes the
     idle costs (polling, keepalives) a real station pays.
   - *simulated clock*: the agent runs with ``--time-scale F`` (readings are
     sampled F times faster, stamped with simulated time) for ``--sim-s`` real
     seconds; CPU per simulated hour = CPU / simulated hours. This is the
     per-reading cost (sampling, SQLite commit with fsync, publish, ack);
     idle costs are compressed, so the two figures bracket the truth.
   RSS is the peak resident set (VmHWM) of the agent process.
2. **Outbox flush rate** after a 24-hour backlog (4 x 86,400 readings written
   straight into the outbox file): the publisher drains it to a local
   Mosquitto with default settings (batches of 500, 20 in flight, QoS 1,
   delete on PUBACK); a subscriber confirms every reading arrived.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from edge.clock import SystemClock
from edge.config import load_config
from edge.outbox import Outbox
from edge.publisher import Publisher
from siltwatch.schema import iso_utc
from tests.edge.helpers import agent_toml
from tests.servers import MosquittoServer

REPO = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def proc_rss_mb(pid: int) -> tuple[float, float]:
    """(current VmRSS, peak VmHWM) in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, kb, _ = line.split()
            values[key] = int(kb) / 1024
    return values["VmRSS:"], values["VmHWM:"]


def run_agent(
    workdir: Path, port: int, seconds: float, time_scale: float | None, clock_check: str
) -> dict[str, float]:
    outbox = workdir / "outbox.sqlite"
    config = workdir / "agent.toml"
    text = agent_toml(outbox=outbox, port=port, sensors=4, interval_s=1.0)
    config.write_text(text.replace('clock_check = "year"', f'clock_check = "{clock_check}"'))
    cmd = [sys.executable, "-m", "edge", "--config", str(config), "--log-level", "WARNING"]
    if time_scale is not None:
        cmd += ["--time-scale", str(time_scale)]
    log = (workdir / "agent.log").open("wb")
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=log, stderr=log, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    try:
        time.sleep(1.5)  # imports and connect: not part of the steady state
        cpu0, t0, n0 = proc_cpu_s(proc.pid), time.monotonic(), stored_count(outbox)
        time.sleep(seconds)
        cpu1, t1, n1 = proc_cpu_s(proc.pid), time.monotonic(), stored_count(outbox)
        rss, hwm = proc_rss_mb(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()
    real = t1 - t0
    sim_hours = real * (time_scale or 1.0) / 3600
    readings = n1 - n0
    return {
        "cpu_per_hour": (cpu1 - cpu0) / sim_hours,
        # per reading, scaled to the 14,400 readings of an hour at 4 x 1 Hz: honest even
        # when an accelerated agent could not keep up with the simulated rate
        "cpu_per_14400": (cpu1 - cpu0) / max(readings, 1) * 14_400,
        "rss": rss,
        "hwm": hwm,
        "real_s": real,
        "sim_h": sim_hours,
        "readings": readings,
        "expected": 4 * sim_hours * 3600,
    }


def stored_count(outbox: Path) -> int:
    """Readings ever stored (sum of next seqs), read while the agent runs."""
    with sqlite3.connect(outbox, timeout=30) as conn:
        row = conn.execute("SELECT COALESCE(SUM(next_seq), 0) FROM sequences").fetchone()
    return int(row[0])


def fill_backlog(path: Path, per_sensor: int, sensors: int) -> int:
    """Write a day of 1 Hz readings straight into the outbox (setup, not measured)."""
    box = Outbox(path, max_readings=10_000_000)
    start = datetime(2026, 5, 1, tzinfo=UTC)
    conn = box.conn
    conn.execute("BEGIN")
    for s in range(sensors):
        rows = (
            (
                f"s{s}",
                i,
                iso_utc(start + timedelta(seconds=i)),
                10.0 + (i % 100) / 10,
                "NTU",
                None,
                '["simulated"]',
            )
            for i in range(per_sensor)
        )
        conn.executemany(
            "INSERT INTO outbox(sensor, seq, time, value, unit, raw, quality) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.execute("INSERT INTO sequences VALUES (?, ?)", (f"s{s}", per_sensor))
    total = per_sensor * sensors
    conn.execute("UPDATE counters SET value = ? WHERE name = 'backlog'", (total,))
    conn.execute("COMMIT")
    box.close()
    return total


def flush_rate(workdir: Path, port: int, per_sensor: int) -> dict[str, float]:
    outbox = workdir / "flush.sqlite"
    total = fill_backlog(outbox, per_sensor, 4)
    config = workdir / "flush.toml"
    config.write_text(
        agent_toml(outbox=outbox, port=port, max_readings=10_000_000).replace(
            "batch_max = 200", "batch_max = 500"
        )
    )
    cfg = load_config(config)

    received = 0
    done = threading.Event()
    lock = threading.Lock()

    def on_message(client: mqtt.Client, userdata: object, msg: mqtt.MQTTMessage) -> None:
        nonlocal received
        data = json.loads(msg.payload)
        if data.get("type") == "status":
            return
        with lock:
            received += len(data["readings"]) if data["type"] == "batch" else 1
            if received >= total:
                done.set()

    sub = mqtt.Client(
        CallbackAPIVersion.VERSION2, client_id="bench-ingest", protocol=MQTTProtocolVersion.MQTTv5
    )
    sub.on_message = on_message
    sub.connect("127.0.0.1", port)
    sub.subscribe("siltwatch/v1/+/+/+/reading", qos=1)
    sub.loop_start()
    time.sleep(0.5)
    pub = Publisher(cfg, SystemClock())
    t0 = time.monotonic()
    cpu0 = time.process_time()
    while not (pub.connected and pub.idle()):
        pub.step()
    elapsed = time.monotonic() - t0
    cpu = time.process_time() - cpu0
    pub.close()
    done.wait(30)
    sub.disconnect()
    sub.loop_stop()
    return {
        "readings": total,
        "seconds": elapsed,
        "rate": total / elapsed,
        "received": received,
        "cpu_s": cpu,
        "messages": pub.stats.published_messages,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--real-s", type=float, default=60.0)
    parser.add_argument("--sim-s", type=float, default=15.0)
    parser.add_argument("--time-scale", type=float, default=60.0)
    parser.add_argument("--per-sensor", type=int, default=86_400)
    args = parser.parse_args()
    if not MosquittoServer.available():
        sys.exit("mosquitto is not installed (apt-get install mosquitto)")
    with tempfile.TemporaryDirectory(prefix="siltwatch-bench-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)
        broker = MosquittoServer(work / "mosquitto", persistence=False)
        broker.start()
        try:
            (work / "real").mkdir()
            (work / "sim").mkdir()
            (work / "flush").mkdir()
            real = run_agent(work / "real", broker.port, args.real_s, None, "auto")
            sim = run_agent(work / "sim", broker.port, args.sim_s, args.time_scale, "year")
            flush = flush_rate(work / "flush", broker.port, args.per_sensor)
        finally:
            broker.stop()
    rows: list[tuple[str, str]] = [
        (
            f"real time, {real['real_s']:.0f} s at 4 x 1 Hz: CPU s per hour (x 3600/N)",
            f"{real['cpu_per_hour']:.1f}",
        ),
        (
            "real time: readings stored / expected",
            f"{real['readings']:.0f} / {real['expected']:.0f}",
        ),
        ("real time: RSS MB (current / peak)", f"{real['rss']:.1f} / {real['hwm']:.1f}"),
        (
            f"simulated clock x{args.time_scale:g}, {sim['sim_h']:.2f} sim h: CPU s per sim hour",
            f"{sim['cpu_per_hour']:.1f}",
        ),
        (
            "simulated clock: readings stored / expected",
            f"{sim['readings']:.0f} / {sim['expected']:.0f}",
        ),
        (
            "simulated clock: CPU s per 14,400 readings (= 1 h at 4 x 1 Hz)",
            f"{sim['cpu_per_14400']:.1f}",
        ),
        ("simulated clock: RSS MB (current / peak)", f"{sim['rss']:.1f} / {sim['hwm']:.1f}"),
        ("24 h backlog: readings (4 x 86,400)", f"{flush['readings']:.0f}"),
        ("24 h backlog: seconds until the outbox is empty", f"{flush['seconds']:.1f}"),
        ("24 h backlog: flush rate, readings/s (PUBACKed + deleted)", f"{flush['rate']:.0f}"),
        ("24 h backlog: MQTT messages (batches of <= 500)", f"{flush['messages']:.0f}"),
        ("24 h backlog: publisher CPU s", f"{flush['cpu_s']:.1f}"),
        ("24 h backlog: readings received by a subscriber", f"{flush['received']:.0f}"),
    ]
    print("\nsiltwatch edge agent benchmark (4 simulated sensors, local mosquitto)\n")
    print(f"| {'measurement':<62} | {'value':>15} |")
    print(f"|{'-' * 64}|{'-' * 17}|")
    for name, value in rows:
        print(f"| {name:<62} | {value:>15} |")


if __name__ == "__main__":
    main()
