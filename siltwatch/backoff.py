"""Exponential backoff, written once: reconnects, retried writes, redeliveries.

:func:`delay` is pure; the caller keeps its own attempt counter, its own base
and cap, and (for jitter) its own random generator, so tests can pin every wait.
"""

from __future__ import annotations

import math
import random


def delay(
    attempt: int,
    base: float,
    cap: float = math.inf,
    *,
    factor: float = 2.0,
    jitter_fraction: float = 0.0,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based): ``base * factor**attempt``.

    Capped at ``cap``. With ``jitter_fraction`` f > 0, the last fraction f of the
    wait is random (f = 0.5 is "equal jitter": half fixed, half uniform), so a
    fleet that lost its broker at once does not come back at once.
    """
    try:
        grown = base * float(factor) ** attempt
    except OverflowError:
        grown = math.inf
    wait = min(cap, grown)
    if jitter_fraction <= 0:
        return wait
    if rng is None:
        raise ValueError("jitter needs an rng")
    spread = wait * jitter_fraction
    return (wait - spread) + rng.uniform(0, spread)
