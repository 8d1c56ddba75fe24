"""A Leiserson fat-tree behind stream ports against :class:`LeisersonStreamModel`, in lock step.

Every delivery cycle of an off-line schedule is loaded into the senders' transmit streams
(headers from :func:`plan_cycle`, every switch a random maximum matching, random data,
random idle cycles before a beat), then started
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

from ..models.leiserson_schedule import dropping_header, plan_cycle
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
        #: Messages received, and sent to be dropped (not counted as checked).
        self.received = 0
        self.dropped = 0

    async def deliver(
        self,
        messages,
        schedule,
        label: str,
        *,
        limit: int = 100_000,
        eager: bool = False,
        drop=(),
        wires=None,
    ) -> int:
        """Load, start and drain every delivery cycle of ``schedule`` (lists of indices into
        ``messages``, ``(src, dst)`` pairs; ``wires``: a message's wire at its source);
        returns how many messages were received. ``eager``: every delivery cycle but the first
        is offered (its messages, then its cycle beat) while the one before still runs, and
        the receivers hold that one's messages until the cycle beat is offered. ``drop``:
        messages sent with a header that names an edge a switch lacks, where their path has
        one (they must vanish)."""
        before, pending = self.received, None
        for number, cycle in enumerate(schedule):
            queues, want = self._queues(messages, cycle, set(drop), wires)
            early = eager and number < len(schedule) - 1
            current = (want, Counter(), f"{label}, delivery cycle {number}")
            hold = eager and number > 0
            pending = await self._run(queues, current, pending, early=early, hold=hold, limit=limit)
            self.delivery_cycles += 1
        return self.received - before

    def _queues(self, messages, cycle, drop: set, wires):
        """Per leaf the beats of one delivery cycle, and what each destination must get."""
        layout, n = self.model.layout, self.model.layout.leaves
        queues: list[list[Beat]] = [[] for _ in range(n)]
        want = Counter()
        try:  # every switch a random maximum matching, so that every edge is used
            plans = plan_cycle(layout, messages, cycle, wires, self.rng).messages
        except RuntimeError:  # a greedy random matching stage by stage can route fewer
            plans = plan_cycle(layout, messages, cycle, wires).messages
        for plan in plans:
            if len(plan.header) > self.header_bits:
                raise RuntimeError(f"header of {len(plan.header)} bits exceeds the bound")
            data = self.rng.getrandbits(self.model.data_bits)
            bits = dropping_header(layout, plan) if plan.index in drop else None
            if bits is None:
                bits = plan.header
                want[(plan.dst, data)] += 1
            else:
                self.dropped += 1
            header = int("".join(map(str, bits)) or "0", 2)
            queues[plan.src].append((header, len(bits), data))
        return queues, want

    async def _run(self, queues, current, pending, *, early: bool, hold: bool, limit: int):
        """Offer one delivery cycle's beats, then its cycle beat, until it starts (``early``)
        or until it is over and every message it carried was taken; messages received before
        it starts are the ``pending`` cycle's (verified when it starts); ``hold``: no
        receiver is ready before the cycle beat is offered. Returns the cycle still to
        verify, or None."""
        sb, rng, n = self.scoreboard, self.rng, self.model.layout.leaves
        offering = [False] * n
        started = drained = offered = False
        delay = 0 if early else rng.randrange(3)
        first = self.cycle
        while not (drained or (early and started)) and self.cycle - first < limit:
            for leaf in range(n):
                if queues[leaf] and not offering[leaf]:
                    offering[leaf] = rng.random() >= self.idle
            beats = [queues[leaf][0] if offering[leaf] else None for leaf in range(n)]
            loaded = not any(queues)
            if loaded and not started and delay:
                delay -= 1
            cycle_valid = int(loaded and not started and not delay)
            offered |= bool(cycle_valid)
            ready = [int(rng.random() >= self.stall) for _ in range(n)]
            if hold and not offered:
                ready = [0] * n
            seen = self.read()
            self.drive(beats, cycle_valid, ready)
            out = self.model.step([_bits(b) for b in beats], cycle_valid, ready)
            expected = (out.cycle_ready, list(out.tx_ready), list(out.rx))
            sb.compare("cycle_mismatches", f"{current[2]}, cycle {self.cycle}", seen, expected)
            cycle_ready, tx_ready, rx = seen
            got = current[1] if started or pending is None else pending[1]
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
                if pending is not None:
                    self._verify(*pending, over=True)
                    pending = None
            elif started and cycle_ready:
                drained = True  # the cycle is over and every message was taken
            self.cycle += 1
            await self.tick()
        if early and started:
            return current
        if pending is not None:
            self._verify(*pending, over=False)
        self._verify(*current, over=drained)
        return None

    def _verify(self, want: Counter, got: Counter, where: str, *, over: bool) -> None:
        """One delivery cycle's receipts against what it carried."""
        sb = self.scoreboard
        sb.checked += sum(want.values())
        self.received += sum(got.values())
        if not over:
            sb.fail("message_mismatches", f"{where} stuck")
        if got != want:
            lost, extra = dict(want - got), dict(got - want)
            sb.fail("message_mismatches", f"{where}: lost {lost}, unexpected {extra}")


def _bits(beat: Beat):
    """A driven beat as the model takes it: (header bits, data)."""
    if beat is None:
        return None
    header, length, data = beat
    return [(header >> (length - 1 - b)) & 1 for b in range(length)], data
