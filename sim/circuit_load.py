"""Open-loop load for the circuit-switched tree: offered load against throughput and latency.

One :class:`OpenLoop` drives one measurement point on any implementation of the tree's stream
ports: the cycle-exact model (:func:`run_model_point`, pure Python) or the RTL (the cocotb
module :mod:`fattree.sim.benches.circuit_tree_load`). Both call it the same way, cycle by
cycle, so the RTL and the model see the same draws and the same inputs:

1. ``inputs()``: new messages are generated, then the per-node inputs of this cycle
   (``tx`` valid, dest, data; ``rx`` ready);
2. ``observe(tx_ready, rx_valid, rx_data)``: the outputs of this cycle (all registered, so
   they do not depend on this cycle's inputs) record the handshakes.

Definitions (docs/circuit_tree.md, "Load and latency"):

* **Traffic.** Each node has an unbounded source queue. In every cycle ``t < warmup +
  window`` node ``p`` generates a message with probability ``load`` (one Bernoulli draw per
  node and cycle from ``random.Random(seed)``), to ``pattern``'s destination: ``random``
  uniform over the other nodes; ``transpose``, ``bit-reversal``, ``shift`` (by 1) and
  ``hotspot`` (to node 0) from :mod:`fattree.spec.traffic`. A node the pattern maps to itself
  generates nothing (and draws nothing). The head of the queue is offered on ``tx``.
* **Times.** ``offer`` = the cycle the message is generated (queued); ``accept`` = the cycle
  of its ``tx`` handshake (valid and ready); ``deliver`` = the cycle of the ``rx`` handshake at
  its destination. **Latency** = ``deliver - offer`` (source queueing included);
  **network latency** = ``deliver - accept``.
* **Window.** Cycles ``warmup .. warmup + window - 1``; the run stops at its end (no drain).
  Counted are the messages *delivered* in the window, whatever their offer cycle.
  **Accepted throughput** = those messages / (nodes * window), every node in the
  denominator (also those that generate nothing); **offered** = messages generated in the
  window / (nodes * window), the same denominator.
* Percentiles are nearest-rank: ``p``-th = the ``ceil(p/100 * N)``-th smallest.

The data word of each message is a sequence number (mod ``2^(width*length)``), which is how a
delivery is matched to its message: the oldest message in flight to that node with that data.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass

from ..spec.traffic import PATTERNS, destination
from .models.circuit import CircuitTreeModel

__all__ = [
    "LOAD_PATTERNS",
    "FIGURES",
    "Point",
    "OpenLoop",
    "percentile",
    "run_model_point",
    "min_latency",
]

#: The patterns the load experiment offers.
#: The traffic patterns of the definitions layer, all of which run open loop.
LOAD_PATTERNS = PATTERNS

#: The figures of one point, in the order the experiment prints them.
FIGURES = (
    "offered",
    "accepted",
    "delivered",
    "mean",
    "p50",
    "p99",
    "max",
    "net_mean",
    "net_p99",
)


@dataclass(frozen=True)
class Point:
    """One measurement point: ``stall`` is the probability a receiver is not ready in a
    cycle (0: always ready)."""

    pattern: str
    load: float
    warmup: int
    window: int
    seed: int = 1
    stall: float = 0.0

    def __post_init__(self):
        if self.pattern not in LOAD_PATTERNS:
            raise ValueError(
                f"pattern must be one of {', '.join(LOAD_PATTERNS)}, not {self.pattern!r}"
            )
        if not 0 < self.load <= 1:
            raise ValueError(f"load must be above 0 and at most 1, not {self.load!r}")
        if not 0 <= self.stall < 1:
            raise ValueError(f"stall must be at least 0 and below 1, not {self.stall!r}")
        if self.warmup < 0 or self.window < 1:
            raise ValueError(f"window must be at least 1 cycle, not {self.window!r}")

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def destinations(pattern: str, leaves: int) -> list[int | None]:
    """Per node its fixed destination, ``None`` for ``random``; a node mapped to itself gets
    -1 (it generates nothing)."""
    h = leaves.bit_length() - 1
    out: list[int | None] = []
    for p in range(leaves):
        q = None if pattern == "random" else destination(pattern, p, h)
        out.append(-1 if q == p else q)
    return out


def percentile(values: list[int], p: float) -> int | None:
    """Nearest rank: the ``ceil(p/100 * N)``-th smallest of ``values`` (None if empty)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


def min_latency(leaves: int, length: int, turn_level: int = 0) -> int:
    """The fewest cycles from ``tx`` handshake to ``rx`` handshake, with nothing else in the
    network, for a message whose path turns at ``turn_level``: the shortest is 0."""
    model = CircuitTreeModel(leaves, 1, length)
    dest = 1 << turn_level
    for t in range(1000):
        out = model.step(
            [int(t == 0)] + [0] * (leaves - 1), [dest] + [0] * (leaves - 1), [0] * leaves
        )
        if out.rx_valid[dest]:
            return t  # offered (and taken: idle interface) at cycle 0
    raise RuntimeError("no delivery")  # pragma: no cover


class OpenLoop:
    """Generates, offers and times the messages of one :class:`Point` on ``leaves`` nodes."""

    def __init__(self, leaves: int, width: int, length: int, point: Point):
        self.leaves, self.point = leaves, point
        self.bits = width * length
        self.rng = random.Random(point.seed)
        self.stall_rng = random.Random(point.seed + 0x5EED)
        self.dest = destinations(point.pattern, leaves)
        self.end = point.warmup + point.window
        self.cycle = 0
        self.sequence = 0
        #: Per node its queue of (offer cycle, dest, data); the head is offered on tx.
        self.queues: list[deque] = [deque() for _ in range(leaves)]
        #: (dest, data) -> deque of (offer cycle, accept cycle), messages taken, in flight.
        self.flight: dict[tuple[int, int], deque] = {}
        self.generated = 0  # in the window
        self.latency: list[int] = []  # delivered in the window
        self.network: list[int] = []
        self._ready: list[int] = [1] * leaves
        self._offered: list[tuple[int, int] | None] = [None] * leaves

    @property
    def finished(self) -> bool:
        return self.cycle >= self.end

    def _generate(self) -> None:
        rng, load, leaves = self.rng, self.point.load, self.leaves
        in_window = self.cycle >= self.point.warmup
        for p in range(leaves):
            q = self.dest[p]
            if q == -1 or rng.random() >= load:
                continue
            if q is None:
                r = rng.randrange(leaves - 1)
                q = r + (r >= p)
            data = self.sequence & ((1 << self.bits) - 1)
            self.sequence += 1
            self.queues[p].append((self.cycle, q, data))
            self.generated += in_window

    def inputs(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """This cycle's inputs: ``tx`` valid, dest, data and ``rx`` ready, per node."""
        self._generate()
        heads = [q[0] if q else None for q in self.queues]
        valid = [int(h is not None) for h in heads]
        dest = [h[1] if h else 0 for h in heads]
        data = [h[2] if h else 0 for h in heads]
        stall = self.point.stall
        if stall:
            self._ready = [int(self.stall_rng.random() >= stall) for _ in range(self.leaves)]
        return valid, dest, data, list(self._ready)

    def observe(self, tx_ready: list[int], rx_valid: list[int], rx_data: list[int]) -> None:
        """This cycle's outputs: record the ``tx`` and ``rx`` handshakes, then advance."""
        t = self.cycle
        for p, q in enumerate(self.queues):
            if q and tx_ready[p]:
                offer, dest, data = q.popleft()
                self.flight.setdefault((dest, data), deque()).append((offer, t))
        counted = t >= self.point.warmup
        for n in range(self.leaves):
            if rx_valid[n] and self._ready[n]:
                waiting = self.flight.get((n, rx_data[n]))
                if not waiting:
                    raise RuntimeError(f"cycle {t}: node {n} received {rx_data[n]:#x}, not sent")
                offer, accept = waiting.popleft()
                if counted:
                    self.latency.append(t - offer)
                    self.network.append(t - accept)
        self.cycle += 1

    def figures(self) -> dict:
        """The point's figures (:data:`FIGURES`), rounded for tables; latencies in cycles."""
        cells = self.leaves * self.point.window
        lat, net = self.latency, self.network

        def mean(values):
            return round(sum(values) / len(values), 3) if values else None

        return {
            "offered": round(self.generated / cells, 5),
            "accepted": round(len(lat) / cells, 5),
            "delivered": len(lat),
            "mean": mean(lat),
            "p50": percentile(lat, 50),
            "p99": percentile(lat, 99),
            "max": max(lat) if lat else None,
            "net_mean": mean(net),
            "net_p99": percentile(net, 99),
        }


def run_model_point(
    leaves: int, width: int, length: int, seed: int, retry: str, point: Point
) -> dict:
    """One point on the cycle-exact model alone (pure Python), from reset: its figures."""
    model = CircuitTreeModel(leaves, width, length, seed, retry)
    run = OpenLoop(leaves, width, length, point)
    while not run.finished:
        valid, dest, data, ready = run.inputs()
        out = model.step(valid, dest, data, ready)
        run.observe(out.tx_ready, out.rx_valid, out.rx_data)
    return run.figures()
