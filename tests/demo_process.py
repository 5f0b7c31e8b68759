"""``siltwatch demo --web`` as the README runs it, in a subprocess, for the tests that
look at it (tests/foundation/test_demo.py over HTTP, tests/console/test_browser_demo.py
in Chromium): on a free port, its output read as it comes, Ctrl-C at the end."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
SERVING = "serving until Ctrl-C"


@dataclass
class DemoProcess:
    proc: subprocess.Popen[str]
    port: int
    lines: list[str] = field(default_factory=list)
    serving: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stdout(self) -> str:
        return "".join(self.lines)

    def serves(self, timeout_s: float = 300) -> bool:
        """Whether the demo ran its week and now serves the console."""
        return self.serving.wait(timeout_s) and self.proc.poll() is None

    def password(self) -> str:
        """The demo account's password, as the demo printed it."""
        found = re.search(r"log in as 'demo' with password '([^']+)'", self.stdout())
        assert found, self.stdout()[-2000:]
        return found.group(1)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if SERVING in line:
                self.serving.set()
        self.serving.set()


@contextmanager
def demo_process(out: Path) -> Iterator[DemoProcess]:
    """The demo writing to ``out``, serving on a free port; stopped with Ctrl-C (SIGINT)
    on leaving, its exit code then in ``proc.returncode``."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "demo", "--out", str(out),
         "--web", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )  # fmt: skip
    demo = DemoProcess(proc, port)
    reader = threading.Thread(target=demo._read, daemon=True)
    reader.start()
    try:
        yield demo
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
