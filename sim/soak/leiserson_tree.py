"""Soak of Leiserson's universal fat-tree: off-line schedules delivered, every leaf's receive
wires checked in every cycle.

Message sets as the bench draws them (random sets, random permutations, bit reversal in
turn, each made to load factor above 1) are scheduled off-line by Theorem 1 under the tree's
alpha-derated capacities; each delivery cycle gets switch settings and headers, random data
and senders staggered by up to 2 cycles (:func:`fattree.sim.models.leiserson_tree.
delivery_waves`). The stimulus is ``start`` and every leaf's send wires, cycle by cycle; the
expectation every leaf's receive wires and the root's output (idle: the root has no parent).
Beside it, each arrival in the model is checked against its message (destination and data)
and every message of a set must arrive exactly once. A tree with ``start_lead = d`` gets
``start`` d cycles early: the send words and expectations are held d cycles back, quiet before
the first delivery cycle (as :class:`fattree.sim.checks.leiserson_tree.LeisersonTreeCheck`).
"""

from __future__ import annotations

import random
from collections import deque

import numpy as np

from ...spec.capacities import TreeLayout
from ..checks.leiserson_tree import DATA_BITS, data_bits
from ..models.leiserson_schedule import (
    layout_capacities,
    load_factor,
    message_set,
    schedule_theorem1,
)
from ..models.leiserson_tree import delivery_waves
from .harness import Layout, Port

__all__ = ["LeisersonTreeSoak"]

KINDS = ("random", "permutation", "bit-reversal")
#: Cycles per chunk handed to the harness.
CHUNK = 16384


class LeisersonTreeSoak:
    """``messages`` messages through the Leiserson tree of ``params``."""

    unit = "messages"
    #: Messages per segment (each from reset; fattree.sim.soak).
    SEGMENT = 20_000

    def __init__(self, params: dict, *, messages: int, seed: int):
        self.n = params["leaves"]
        self.layout_ = TreeLayout.universal(self.n, params.get("w") or None, params.get("seed", 0))
        self.caps = layout_capacities(self.layout_)
        self.start_lead = params.get("start_lead", 0)
        self.messages = messages
        self.rng = random.Random(seed)
        self.failures: list[str] = []
        self.checked = 0
        self.sets = 0
        self.delivery_cycles = 0
        self.counts: dict[str, int] = {}

    def layout(self) -> Layout:
        n, caps = self.n, self.layout_.capacities
        leaf, root = caps[-1], caps[0]
        return Layout(
            inputs=[Port("start", 1)] + [Port(f"send__{k}", leaf) for k in range(n)],
            outputs=[Port(f"recv__{k}", leaf) for k in range(n)] + [Port("root_o", root)],
            tied=[Port("root_i", root)],
        )

    def _message_sets(self):
        n, rng = self.n, self.rng
        planned = 0
        while planned < self.messages:
            kind = KINDS[self.sets % len(KINDS)]
            messages = message_set(kind, n, rng)
            if load_factor(n, messages, self.caps) <= 1 and kind != "random":
                messages = messages + message_set("random", n, rng)  # make lambda > 1
                kind += "+random"
            self.sets += 1
            # The last set is cut to what is left; it is then still complete by itself.
            messages = messages[: self.messages - planned]
            planned += len(messages)
            yield kind, messages

    def chunks(self, chunk: int = CHUNK):
        n = self.n
        ins: list[list[int]] = []
        outs: list[list[int]] = []
        # (send row, expected outputs) of the cycles whose `start` is already driven.
        held = deque(([0] * n, [0] * (n + 1)) for _ in range(self.start_lead))
        for kind, messages in self._message_sets():
            schedule = schedule_theorem1(n, messages, self.caps)
            waves = delivery_waves(self.layout_, messages, schedule, self.rng, DATA_BITS)
            arrived = []
            for wave in waves:
                for t, row in enumerate(wave.drive):
                    held.append((row, [*wave.expect[t], 0]))
                    row, expect = held.popleft()
                    ins.append([int(t == 0), *row])
                    outs.append(expect)
                    if len(ins) == chunk:
                        yield self._pack(ins, outs)
                        ins, outs = [], []
                for a in wave.delivery.arrivals:
                    index, data = wave.sent[(a.src, a.src_wire)]
                    if a.where != ("leaf", messages[index][1]) or a.bits != data_bits(data):
                        self.failures.append(
                            f"message {messages[index]}: model delivers {a.bits} at {a.where}"
                        )
                    arrived.append(index)
                self.delivery_cycles += 1
            if sorted(arrived) != list(range(len(messages))):
                self.failures.append(f"{kind} set: not every message arrived exactly once")
            self.checked += len(arrived)
            key = kind.split("+")[0]
            self.counts[key] = self.counts.get(key, 0) + len(messages)
        for row, expect in held:
            ins.append([0, *row])
            outs.append(expect)
        if ins:
            yield self._pack(ins, outs)

    @staticmethod
    def _pack(ins, outs):
        return np.array(ins, np.uint64), np.array(outs, np.uint64), None, None

    def summary(self) -> dict:
        return {
            "messages_by_pattern": dict(self.counts),
            "message_sets": self.sets,
            "delivery_cycles": self.delivery_cycles,
        }
