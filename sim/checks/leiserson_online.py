"""The on-line Leiserson fat-tree against :class:`LeisersonOnlineModel`, in lock step.

Messages (``(src, dst)`` pairs, random data) are offered on the senders' transmit streams
(a sender idles a cycle at random before offering its next message; a valid, once high,
stays high until its transfer), the receivers stall at random, and two checks run side by
side:

* cycle by cycle, every output (``cycle_start``, every ``tx.ready``, every ``rx`` valid with
  its source and data) against the cycle-exact model;
* message by message, every message received once, at its destination, from its source, with
  its data: a receipt nobody sent (or sent fewer times) is a mismatch, and so is a message
  still missing when the run ends.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Awaitable, Callable

from ..models.leiserson_online import LeisersonOnlineModel
from ..scoreboard import Scoreboard

__all__ = ["CHECKS", "OUTPUTS", "LeisersonOnlineCheck"]

CHECKS = ("cycle_mismatches", "message_mismatches")
OUTPUTS = ("cycle_start", "tx_ready", "rx", "error")


class LeisersonOnlineCheck:
    """``read()`` gives ``(cycle_start, [tx_ready], [(src, data) or None], [error])``;
    ``drive(beats, rx_ready)`` sets the inputs (``beats[leaf]``: ``(dst, data)`` or None);
    ``tick()`` waits one cycle. ``stall``: probability a receiver is not ready in a cycle;
    ``idle``: probability a sender waits a cycle before offering its next message."""

    def __init__(
        self,
        model: LeisersonOnlineModel,
        scoreboard: Scoreboard,
        read: Callable[[], tuple],
        drive: Callable[[list, list[int]], None],
        tick: Callable[[], Awaitable],
        *,
        rng: random.Random,
        stall: float = 0.3,
        idle: float = 0.25,
    ):
        self.model = model
        self.scoreboard = scoreboard
        self.read, self.drive, self.tick = read, drive, tick
        self.rng, self.stall, self.idle = rng, stall, idle
        self.cycle = 0
        self.received = 0
        self.backpressure_cycles = 0

    async def before_turn(self, turn: int, turns: int) -> None:
        """Idle (no message offered, receivers as usual) through the start of a delivery
        cycle, so that what is offered next goes out in the following one, whose turn is
        ``turn`` modulo ``turns``."""
        model, n = self.model, self.model.leaves
        while True:
            due = model.start and (model.delivery_cycles + 1) % turns == turn % turns
            expected = model.outputs()
            seen = tuple(self.read())
            self.scoreboard.compare(
                "cycle_mismatches", f"idle, cycle {self.cycle}", seen, expected, OUTPUTS
            )
            ready = [int(self.rng.random() >= self.stall) for _ in range(n)]
            self.drive([None] * n, ready)
            model.tick([None] * n, ready)
            await self.tick()
            self.cycle += 1
            if due:
                return

    async def deliver(self, messages, label: str, *, limit: int = 200_000, hold: int = 0) -> int:
        """Offer every message, run until every one is received (or ``limit`` cycles), and
        return how many were received. ``hold``: no receiver is ready in the set's first
        ``hold`` cycles."""
        model, sb, rng = self.model, self.scoreboard, self.rng
        n, dbits = model.leaves, model.data_bits
        pending = [deque() for _ in range(n)]
        want: Counter = Counter()
        for src, dst in messages:
            data = rng.getrandbits(dbits)
            pending[src].append((dst, data))
            if src != dst:  # a message to itself is dropped (and flagged in `error`)
                want[(src, dst, data)] += 1
        got: Counter = Counter()
        offering = [False] * n
        received = 0
        start = self.cycle
        while received < sum(want.values()) or any(pending):
            if self.cycle - start >= limit:
                sb.fail("message_mismatches", f"{label}: still missing after {limit} cycles")
                break
            expected = model.outputs()
            seen = tuple(self.read())
            sb.compare("cycle_mismatches", f"{label}, cycle {self.cycle}", seen, expected, OUTPUTS)
            _, tx_ready, rx, _ = expected
            beats = []
            for leaf in range(n):
                if pending[leaf] and (offering[leaf] or rng.random() >= self.idle):
                    offering[leaf] = True
                    beats.append(pending[leaf][0])
                else:
                    beats.append(None)
            ready = [int(rng.random() >= self.stall) for _ in range(n)]
            if self.cycle - start < hold:
                ready = [0] * n
            for leaf in range(n):
                if beats[leaf] is not None and tx_ready[leaf]:
                    pending[leaf].popleft()
                    offering[leaf] = False
                if rx[leaf] is not None:
                    if not ready[leaf]:
                        self.backpressure_cycles += 1
                        continue
                    src, data = rx[leaf]
                    key = (src, leaf, data)
                    sb.checked += 1
                    received += 1
                    got[key] += 1
                    sb.compare(
                        "message_mismatches",
                        f"{label}, receipt at leaf {leaf} in cycle {self.cycle}",
                        got[key] <= want[key],
                        True,
                    )
            self.drive(beats, ready)
            model.tick(beats, ready)
            await self.tick()
            self.cycle += 1
        if got != want:
            sb.fail("message_mismatches", f"{label}: received {got - want}, missing {want - got}")
        self.received += received
        return received
