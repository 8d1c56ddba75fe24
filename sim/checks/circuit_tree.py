"""The circuit-switched fat tree against :class:`CircuitTreeModel`, in lock step.

Two checks run side by side:

* cycle by cycle, every output of every node (``tx_ready``, ``tx_done``, ``tx_reject``,
  ``rx_valid``, ``rx_data``) against the cycle-exact model, with the same LFSRs, arbitration
  and interface state machines;
* message by message, every message taken by a node is delivered exactly once, to its
  destination, with its data intact (a multiset per destination: none lost or duplicated).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable

from ..models.circuit import CircuitTreeModel, Driver
from ..scoreboard import Scoreboard

__all__ = ["OUTPUTS", "INPUTS", "CHECKS", "CircuitTreeCheck"]

OUTPUTS = ("tx_ready", "tx_done", "tx_reject", "rx_valid", "rx_data")
INPUTS = ("tx_valid", "tx_dest", "tx_data")
CHECKS = ("cycle_mismatches", "message_mismatches")


class CircuitTreeCheck:
    """Drives phases of traffic into a circuit tree and checks it against ``model``.

    ``read()`` gives the per-node output lists in :data:`OUTPUTS` order, ``drive(valid, dest,
    data)`` sets the per-node inputs, ``tick()`` waits one cycle. :attr:`cycle` counts the
    cycles run, over every phase.
    """

    def __init__(
        self,
        model: CircuitTreeModel,
        scoreboard: Scoreboard,
        read: Callable[[], list[list[int]]],
        drive: Callable[[list[int], list[int], list[int]], None],
        tick: Callable[[], Awaitable],
    ):
        self.model = model
        self.scoreboard = scoreboard
        self.read, self.drive, self.tick = read, drive, tick
        self.cycle = 0

    async def phase(self, name: str, queues: list[list[tuple[int, int]]], limit: int) -> int:
        """Offer every node its queue of ``(dest, data)`` messages until each is acknowledged
        (at most ``limit`` cycles), then check what was delivered; returns how many there
        were."""
        sb, leaves = self.scoreboard, self.model.leaves
        driver = Driver(queues)
        total = sum(len(q) for q in queues)
        done = 0
        received = []
        start = self.cycle
        while done < total and self.cycle - start < limit:
            seen = self.read()
            inputs = driver.inputs()
            self.drive(*inputs)
            want = self.model.step(*inputs)
            expected = [want.tx_ready, want.tx_done, want.tx_reject, want.rx_valid, want.rx_data]
            sb.compare("cycle_mismatches", f"cycle {self.cycle}", seen, expected, OUTPUTS)
            driver.taken(seen[0])
            done += sum(seen[1])
            received += [(n, seen[4][n]) for n in range(leaves) if seen[3][n]]
            self.cycle += 1
            await self.tick()
        if done < total:
            sb.fail(
                "message_mismatches",
                f"{name}: {total - done} messages not acknowledged in {limit} cycles",
            )
        # The last acknowledge arrives after the last delivery: nothing is left in flight.
        want_messages = Counter((dest, data) for _src, dest, data in driver.sent)
        got_messages = Counter(received)
        sb.checked += len(driver.sent)
        if want_messages != got_messages:
            lost = dict(want_messages - got_messages)
            extra = dict(got_messages - want_messages)
            sb.fail("message_mismatches", f"{name}: lost {lost}, unexpected or duplicated {extra}")
        return total
