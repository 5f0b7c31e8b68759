"""A benchmark's sides in their own processes: each measures with its own peak RSS and
no cache warmed by the side before it, and hands its figures back as one JSON line.

Shared by benchmarks/replay.py and benchmarks/year.py (``--side NAME ARGS...`` runs
one side of the module and prints its JSON as the last line).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def peak_rss_mb() -> float:
    """This process's peak resident set size (Linux reports kilobytes, macOS bytes).

    On Linux it is ``VmHWM`` of /proc/self/status: ``ru_maxrss`` survives ``exec``, so
    a side started from a benchmark that already holds 455 MB reported 455 MB whatever
    it used itself (issue 24's import and replay sides both showed the parent's peak).
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def side_in_subprocess(module: str, which: str, *args: str) -> dict[str, Any]:
    """Run ``python -m module --side which args...`` from the repository root; the
    figures of the JSON line it printed last. A side that fails stops the benchmark."""
    done = subprocess.run(
        [sys.executable, "-m", module, "--side", which, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the {which} side failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
