"""A Leiserson fat-tree behind stream ports against :class:`LeisersonStreamModel`, in lock step.

Every delivery cycle of an off-line schedule is loaded into the senders' transmit streams
(headers from :func:`plan_cycle`, random data, random idle cycles before a beat), then started
with a ``cycle`` beat; the receivers stall at random. Two checks run side by side:

* cycle by cycle, every output (``cycle.ready``, every ``tx.ready``, every ``rx`` valid with
  its data and wire) against the cycle-exact model;
* delivery cycle by delivery cycle, the messages each leaf's receive stream gave against the
  messages scheduled to it (a multiset per destination: none lost or duplicated).

Streams keep their rules: a valid, once high, stays high until its transfer.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Awaitable, Callable

from ..models.leiserson_schedule import plan_cycle
from ..models.leiserson_stream import LeisersonStreamModel
from ..scoreboard import Scoreboard

__all__ = ["CHECKS", "OUTPUTS", "LeisersonStreamCheck"]

CHECKS = ("cycle_mismatches", "message_mismatches")
OUTPUTS = ("cycle_ready", "tx_ready", "rx")

#: A transmit beat as driven: (header as a number, MSB first; header length; data), or None.
Beat = tuple[int, int, int] | None


class LeisersonStreamCheck:
    """``read()`` gives ``(cycle_ready, [tx_ready per leaf], [(data, wire) or None per leaf])``;
    ``drive(beats, cycle_valid, rx_ready)`` sets the inputs (``beats[leaf]``: :data:`Beat`);
    ``tick()`` waits one cycle. ``stall``: probability a receiver is not ready in a cycle;
    ``idle``: probability a sender waits a cycle before offering its next message."""

    def __init__(
        self,
        model: LeisersonStreamModel,
        scoreboard: Scoreboard,
        read: Callable[[], tuple],
        drive: Callable[[list[Beat], int, list[int]], None],
        tick: Callable[[], Awaitable],
        *,
        rng: random.Random,
        stall: float = 0.3,
        idle: float = 0.25,
        header_bits: int,
    ):
        self.model = model
        self.scoreboard = scoreboard
        self.read, self.drive, self.tick = read, drive, tick
        self.rng, self.stall, self.idle = rng, stall, idle
        self.header_bits = header_bits
        self.cycle = 0
        self.delivery_cycles = 0
        self.backpressure_cycles = 0

    async def deliver(self, messages, schedule, label: str, *, limit: int = 100_000) -> int:
        """Load, start and drain every delivery cycle of ``schedule`` (lists of indices into
        ``messages``, ``(src, dst)`` pairs); returns how many messages were received."""
        layout, sb, rng = self.model.layout, self.scoreboard, self.rng
        n, dbits = layout.leaves, self.model.data_bits
        received_total = 0
        for number, cycle in enumerate(schedule):
            queues: list[list[Beat]] = [[] for _ in range(n)]
            want = Counter()
            for plan in plan_cycle(layout, messages, cycle).messages:
                if len(plan.header) > self.header_bits:
                    raise RuntimeError(f"header of {len(plan.header)} bits exceeds the bound")
                data = rng.getrandbits(dbits)
                header = int("".join(map(str, plan.header)) or "0", 2)
                queues[plan.src].append((header, len(plan.header), data))
                want[(plan.dst, data)] += 1
            got = Counter()
            offering = [False] * n
            started = drained = False
            delay = rng.randrange(3)
            first = self.cycle
            while not drained and self.cycle - first < limit:
                for leaf in range(n):
                    if queues[leaf] and not offering[leaf]:
                        offering[leaf] = rng.random() >= self.idle
                beats = [queues[leaf][0] if offering[leaf] else None for leaf in range(n)]
                loaded = not any(queues)
                if loaded and not started and delay:
                    delay -= 1
                cycle_valid = int(loaded and not started and not delay)
                ready = [int(rng.random() >= self.stall) for _ in range(n)]
                seen = self.read()
                self.drive(beats, cycle_valid, ready)
                model_beats = [_bits(b) for b in beats]
                out = self.model.step(model_beats, cycle_valid, ready)
                expected = (out.cycle_ready, list(out.tx_ready), list(out.rx))
                sb.compare("cycle_mismatches", f"{label}, cycle {self.cycle}", seen, expected)
                cycle_ready, tx_ready, rx = seen
                for leaf in range(n):
                    if offering[leaf] and tx_ready[leaf]:
                        queues[leaf].pop(0)
                        offering[leaf] = False
                    if rx[leaf] is not None:
                        if ready[leaf]:
                            got[(leaf, rx[leaf][0])] += 1
                        else:
                            self.backpressure_cycles += 1
                if cycle_valid and cycle_ready:
                    started = True
                elif started and cycle_ready:
                    drained = True  # the cycle is over and every message was taken
                self.cycle += 1
                await self.tick()
            self.delivery_cycles += 1
            sb.checked += sum(want.values())
            received_total += sum(got.values())
            if not drained:
                sb.fail("message_mismatches", f"{label}: delivery cycle {number} stuck")
            if got != want:
                lost, extra = dict(want - got), dict(got - want)
                sb.fail(
                    "message_mismatches",
                    f"{label}, delivery cycle {number}: lost {lost}, unexpected {extra}",
                )
        return received_total


def _bits(beat: Beat):
    """A driven beat as the model takes it: (header bits, data)."""
    if beat is None:
        return None
    header, length, data = beat
    return [(header >> (length - 1 - b)) & 1 for b in range(length)], data
