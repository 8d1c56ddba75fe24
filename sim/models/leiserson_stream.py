"""Cycle-exact reference of a Leiserson fat-tree behind stream ports (docs/leiserson.md,
"Stream ports").

The contract, stated independently of the RTL (:mod:`fattree.hdl.leiserson_stream`):

* a leaf's transmit stream is ready while no delivery cycle is running and the leaf has taken
  fewer messages than it has wires; its k-th message goes out on wire k;
* the ``cycle`` stream is ready while no delivery cycle is running and no received message
  waits; a beat in cycle t starts a delivery cycle in cycle s = t + 1, and every message
  taken up to cycle t goes out from cycle s (M bit, header, data); the delivery cycle runs in
  cycles s .. s + :func:`fattree.spec.leiserson_frames.cycle_length` - 1;
* a message whose M bit reaches its destination ``latency`` cycles after s
  (:func:`fattree.sim.models.leiserson_tree.deliver`) is offered on the destination's receive
  stream from cycle ``s + latency + data_bits + 1`` (its last data bit shifted in), held
  until taken, lowest wire first.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ...spec.capacities import TreeLayout
from ...spec.leiserson_frames import LEISERSON_STREAM, cycle_length
from ..coverage import Coverage, CoverPoint
from .leiserson_coverage import TreeCounter, tree_points
from .leiserson_tree import deliver

__all__ = ["StreamOutputs", "LeisersonStreamModel"]


@dataclass(frozen=True)
class StreamOutputs:
    cycle_ready: int
    tx_ready: tuple[int, ...]
    #: Per leaf ``(data, wire)`` on offer, or None.
    rx: tuple[tuple[int, int] | None, ...]


class LeisersonStreamModel:
    """Step with :meth:`step` once per clock cycle; :meth:`outputs` are the outputs of the
    current cycle (before its rising edge). ``tx[leaf]`` beats are ``(header bits, data)``."""

    #: What :meth:`start_coverage` counts into (None: not counted).
    coverage: Coverage | None = None
    _counter: TreeCounter | None = None

    def __init__(self, layout: TreeLayout, data_bits: int = 8):
        self.layout = layout
        self.data_bits = LEISERSON_STREAM.check("data_bits", data_bits, model=True)
        self.wires = layout.cap(layout.levels)
        self.length = cycle_length(layout, data_bits)
        n = layout.leaves
        self.left = 0  # cycles of the running delivery cycle still to go
        self.taken: list[list[list[int]]] = [[] for _ in range(n)]  # frames for the next cycle
        self.held: list[dict[int, int]] = [{} for _ in range(n)]  # wire -> data on offer
        self.due: list[tuple[int, int, int, int]] = []  # (cycle, leaf, wire, data)
        self.cycle = 0

    def cover_points(self) -> list[CoverPoint]:
        """The tree's routing (no external channel: the root has no stream port) and the
        streams' handshakes (docs/leiserson.md, "Coverage")."""
        return tree_points(self.layout, external=False) + [
            CoverPoint(
                "tx",
                ("taken", "refused: running"),
                "a leaf's message offered and taken, or refused while a delivery cycle runs",
            ),
            CoverPoint(
                "cycle",
                ("started", "waits: running", "waits: received"),
                "a cycle beat offered and taken (the delivery cycle starts), or waiting while "
                "one runs or while a received message is not yet taken",
            ),
            CoverPoint(
                "rx",
                ("taken", "stalled"),
                "a received message on offer taken, or held while its receiver is not ready "
                "(nothing is lost, the next delivery cycle waits)",
            ),
        ]

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read."""
        self.coverage = Coverage(self.cover_points())
        self._counter = TreeCounter(self.coverage, self.layout)
        return self.coverage

    def clone(self) -> LeisersonStreamModel:
        """An independent copy in the same state (its coverage too)."""
        return copy.deepcopy(self)

    def outputs(self) -> StreamOutputs:
        idle = self.left == 0
        return StreamOutputs(
            int(idle and not any(self.held)),
            tuple(int(idle and len(t) < self.wires) for t in self.taken),
            tuple((h[min(h)], min(h)) if h else None for h in self.held),
        )

    def step(self, tx, cycle_valid: int, rx_ready) -> StreamOutputs:
        """Apply one cycle's inputs (``tx[leaf]``: a beat or None; ``rx_ready[leaf]``) and
        return the outputs that were seen in it."""
        out = self.outputs()
        start = bool(cycle_valid and out.cycle_ready)  # the delivery cycle runs from the next
        if self.coverage is not None:
            self._cover(out, tx, cycle_valid, rx_ready)
        for leaf, beat in enumerate(tx):
            if beat is not None and out.tx_ready[leaf]:
                header, data = beat
                bits = [(data >> (self.data_bits - 1 - b)) & 1 for b in range(self.data_bits)]
                self.taken[leaf].append([1, *header, *bits])
        for leaf, ready in enumerate(rx_ready):
            if ready and out.rx[leaf] is not None:
                del self.held[leaf][out.rx[leaf][1]]
        if start:
            self.left = self.length
        elif self.left:
            self.left -= 1
        self.cycle += 1
        if start:
            self._launch()
        for item in [d for d in self.due if d[0] == self.cycle]:
            _, leaf, wire, data = item
            self.held[leaf][wire] = data
        self.due = [d for d in self.due if d[0] > self.cycle]
        return out

    def _launch(self) -> None:
        frames = {
            (leaf, wire): frame
            for leaf, taken in enumerate(self.taken)
            for wire, frame in enumerate(taken)
        }
        self.taken = [[] for _ in self.taken]
        for a in deliver(self.layout, frames, self._counter).arrivals:
            if a.where[0] != "leaf":
                continue  # the root's external interface has no stream port
            data = int("".join(map(str, a.bits[1 : 1 + self.data_bits])) or "0", 2)
            self.due.append((self.cycle + a.latency + self.data_bits + 1, a.where[1], a.wire, data))

    def _cover(self, out: StreamOutputs, tx, cycle_valid: int, rx_ready) -> None:
        cover = self.coverage
        for leaf, beat in enumerate(tx):
            if beat is not None:
                if out.tx_ready[leaf]:
                    cover.hit("tx", "taken")
                elif self.left:
                    cover.hit("tx", "refused: running")
        if cycle_valid:
            if out.cycle_ready:
                cover.hit("cycle", "started")
            else:
                cover.hit("cycle", "waits: running" if self.left else "waits: received")
        for leaf, ready in enumerate(rx_ready):
            if out.rx[leaf] is not None:
                cover.hit("rx", "taken" if ready else "stalled")
