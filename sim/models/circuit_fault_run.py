"""A fault run on the circuit trees' stream ports: the traffic every node sends and the
bookkeeping of what arrives, whoever computes the outputs (the model in the fault experiment,
:mod:`fattree.sim.experiments.faults`; the RTL in its bench,
:mod:`fattree.sim.benches.circuit_faults`).

The protocol has no time-out: a message into a dead link is neither acknowledged nor
rejected, and one to a node that cannot be reached is rejected for ever, so a message not
delivered within ``limit`` cycles of being taken is counted **timed out**, and the rest of its
sender's queue, which that interface never takes, **never sent**.

:class:`FastFaultRun` is the fast circuit tree's (``circuit-tree``): its nodes keep a
window of messages in flight and send each again until it is acknowledged, so it also counts
the acknowledgements (``tx_done``) against the deliveries: a stuck ``ack`` can acknowledge a
message that was lost.
"""

from __future__ import annotations

import random

from ...spec.circuit_fast import fate_delay

__all__ = ["FaultRun", "FastFaultRun", "RUNS", "fault_queues"]


def fault_queues(leaves: int, messages: int, rng: random.Random) -> list[list[tuple[int, int]]]:
    """Per node, ``messages`` messages ``(dest, data)`` to random other nodes; ``data`` is the
    message's number, so every message is told apart."""
    queues, number = [], 0
    for p in range(leaves):
        queue = []
        for _ in range(messages):
            q = rng.randrange(leaves - 1)
            queue.append((q + (q >= p), number))
            number += 1
        queues.append(queue)
    return queues


class FaultRun:
    """The traffic and the bookkeeping of one run, whoever computes the outputs (the model
    in the experiment, the RTL in the bench): :meth:`inputs` gives this cycle's transmit inputs,
    :meth:`observe` takes this cycle's outputs; :attr:`finished` once every node has sent its
    whole queue or holds a message older than ``limit``."""

    def __init__(self, queues, limit: int):
        self.queues = [list(q) for q in queues]
        self.limit = limit
        self.leaves = len(queues)
        self.next = [0] * self.leaves  # index of the message each node offers
        self.taken: dict[int, int] = {}  # message number -> cycle taken
        self.times: list[int] = []  # delivery times of the delivered messages
        self.delivered: set[int] = set()
        self.cycle = 0

    def inputs(self):
        valid, dest, data = [0] * self.leaves, [0] * self.leaves, [0] * self.leaves
        for n, queue in enumerate(self.queues):
            if self.next[n] < len(queue):
                valid[n] = 1
                dest[n], data[n] = queue[self.next[n]]
        return valid, dest, data

    def observe(self, valid, tx_ready, rx_valid, rx_data, tx_done=None, tx_reject=None) -> None:
        """This cycle's outputs (every receiver is always ready), for the inputs ``valid``
        (``tx_done`` and ``tx_reject`` are read by :class:`FastFaultRun`)."""
        for n in range(self.leaves):
            if valid[n] and tx_ready[n]:
                self.taken[self.queues[n][self.next[n]][1]] = self.cycle
                self.next[n] += 1
            if rx_valid[n]:
                number = rx_data[n]
                # A message the fault-free protocol cannot duplicate; count each once.
                if number in self.taken and number not in self.delivered:
                    self.delivered.add(number)
                    self.times.append(self.cycle - self.taken[number])
        self.cycle += 1

    @property
    def finished(self) -> bool:
        for n, queue in enumerate(self.queues):
            last = self.next[n] - 1  # the message in the interface, if any
            if last >= 0 and queue[last][1] not in self.delivered:
                if self.cycle - self.taken[queue[last][1]] <= self.limit:
                    return False
            elif self.next[n] < len(queue):
                return False
        return True

    def figures(self) -> dict:
        total = sum(map(len, self.queues))
        times = sorted(self.times)
        never = sum(len(q) - self.next[n] for n, q in enumerate(self.queues))
        return {
            "messages": total,
            "delivered": len(self.delivered),
            "timed_out": total - len(self.delivered) - never,
            "never_sent": never,
            "mean": sum(times) / len(times) if times else None,
            "p99": times[min(len(times) - 1, (99 * len(times)) // 100)] if times else None,
            "cycles": self.cycle,
        }


class FastFaultRun(FaultRun):
    """The fault run of the fast circuit tree. A message counts as delivered when it reaches
    its destination (elsewhere, or with a number no message has, it is **misdelivered**).
    Per sender, the acknowledgements (``tx_done`` pulses: one per message, whose slot they
    free) beyond its delivered messages are **falsely acknowledged**: lost, and never sent
    again. Without a stuck-at-0 ``ack`` every delivered message is acknowledged, so this is
    exact. ``resent`` counts the attempts not acknowledged (``tx_reject``).

    The run ends when every message taken is delivered or older than ``limit`` and no
    message was taken, delivered or acknowledged for ``F + 2`` cycles: a delivered
    message's acknowledgement is back within ``F + 1`` cycles of its delivery."""

    def __init__(self, queues, limit: int):
        super().__init__(queues, limit)
        self.quiet = fate_delay(self.leaves.bit_length() - 1) + 2
        self.dest = {number: dest for queue in queues for dest, number in queue}
        self.source = {number: n for n, queue in enumerate(queues) for _, number in queue}
        self.acknowledged = [0] * self.leaves
        self.sent_delivered = [0] * self.leaves  # per sender, its messages delivered
        self.resent = self.misdelivered = self.duplicates = 0
        self.event = 0  # the last cycle a message was taken, delivered or acknowledged

    def observe(self, valid, tx_ready, rx_valid, rx_data, tx_done=None, tx_reject=None) -> None:
        for n in range(self.leaves):
            if valid[n] and tx_ready[n]:
                self.taken[self.queues[n][self.next[n]][1]] = self.cycle
                self.next[n] += 1
                self.event = self.cycle
            if tx_done[n]:
                self.acknowledged[n] += 1
                self.event = self.cycle
            self.resent += tx_reject[n]
            if rx_valid[n]:
                self._received(n, rx_data[n])
        self.cycle += 1

    def _received(self, node: int, number: int) -> None:
        if number not in self.taken or self.dest[number] != node:
            self.misdelivered += 1
        elif number in self.delivered:
            self.duplicates += 1
        else:
            self.delivered.add(number)
            self.sent_delivered[self.source[number]] += 1
            self.times.append(self.cycle - self.taken[number])
            self.event = self.cycle

    @property
    def finished(self) -> bool:
        if self.cycle - self.event <= self.quiet:
            return False
        return all(
            number in self.delivered or self.cycle - taken > self.limit
            for number, taken in self.taken.items()
        )

    def figures(self) -> dict:
        false = sum(
            max(0, acked - got)
            for acked, got in zip(self.acknowledged, self.sent_delivered, strict=True)
        )
        return {
            **super().figures(),
            "acknowledged": sum(self.acknowledged),
            "false_ack": false,
            "resent": self.resent,
            "misdelivered": self.misdelivered,
            "duplicates": self.duplicates,
        }


#: The fault run of each circuit tree, by design name.
RUNS = {"circuit-tree-paper": FaultRun, "circuit-tree": FastFaultRun}
