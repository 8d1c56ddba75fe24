"""What the lock-step checks of the networks with receive streams share: the callables they
drive the design through, and receivers that stall at random."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

from ..scoreboard import Scoreboard

__all__ = ["LockstepCheck"]


class LockstepCheck:
    """``read()`` gives the design's outputs, ``drive(...)`` sets its inputs, ``tick()`` waits
    one cycle; ``stall`` is the probability that a receiver is not ready in a cycle (0: always
    ready), drawn from ``rng``. :attr:`cycle` counts the cycles run, :attr:`backpressure_cycles`
    the receiver-cycles in which a message waited for a receiver that was not ready."""

    def __init__(
        self,
        model,
        scoreboard: Scoreboard,
        read: Callable[[], list[list[int]]],
        drive: Callable[..., None],
        tick: Callable[[], Awaitable],
        *,
        stall: float = 0.0,
        rng: random.Random | None = None,
    ):
        if not 0 <= stall < 1:
            raise ValueError(f"stall must be at least 0 and below 1, not {stall!r}")
        self.model = model
        self.scoreboard = scoreboard
        self.read, self.drive, self.tick = read, drive, tick
        self.stall = stall
        self.rng = rng if rng is not None else random.Random(0)
        self.cycle = 0
        self.backpressure_cycles = 0

    def receivers_ready(self, count: int) -> list[int]:
        """This cycle's ``ready`` of ``count`` receivers."""
        if not self.stall:
            return [1] * count
        return [int(self.rng.random() >= self.stall) for _ in range(count)]
