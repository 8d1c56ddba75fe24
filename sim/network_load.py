"""Open-loop load on any network with stream endpoints: offered load against throughput and
latency, the same traffic on the RTL and on the model.

One :class:`NetworkLoad` drives one measurement :class:`Point` on ``nodes`` stream endpoints,
cycle by cycle, whatever the implementation behind them (a cycle-exact model, or the RTL
through cocotb), so both see the same draws and the same inputs:

1. ``inputs()``: new messages are generated, then this cycle's inputs: per node the ``tx``
   beat offered (``(dest, word, last)``, or None) and ``rx`` ready;
2. ``observe(tx_ready, rx)``: the outputs of this cycle (all registered, so they do not
   depend on this cycle's inputs; ``rx`` per node ``(word, last)`` or None) record the
   handshakes.

A message is ``beats`` words of ``word_bits`` each, word 0 first: one beat that carries the
whole message (``beats`` = 1: the circuit tree, the hypercube, the on-line Leiserson tree) or
a frame of beats with ``last`` on the final one (the RN1 endpoints).

Definitions (docs/noc_compare.md, "How it is measured"; docs/circuit_tree.md, "Load and
latency"):

* **Traffic.** Each node has an unbounded source queue. In every cycle ``t < warmup +
  window`` node ``p`` generates a message with probability ``load`` (one Bernoulli draw per
  node and cycle from ``random.Random(seed)``), to ``pattern``'s destination: ``random``
  uniform over the other nodes; ``transpose``, ``bit-reversal``, ``shift`` (by 1) and
  ``hotspot`` (to node 0) from :mod:`fattree.spec.traffic`. A node the pattern maps to itself
  generates nothing (and draws nothing). The head of the queue is offered on ``tx``.
* **Times.** ``offer`` = the cycle the message is generated (queued); ``accept`` = the cycle
  of its first ``tx`` handshake; ``deliver`` = the cycle of the ``rx`` handshake of its last
  beat at its destination. **Latency** = ``deliver - offer`` (source queueing included);
  **network latency** = ``deliver - accept``.
* **Window.** Cycles ``warmup .. warmup + window - 1``; the run stops at its end (no drain).
  Counted are the messages *delivered* in the window, whatever their offer cycle.
  **Accepted throughput** = those messages / (nodes * window), every node in the
  denominator (also those that generate nothing); **offered** = messages generated in the
  window / (nodes * window), the same denominator.
* Percentiles are nearest-rank: ``p``-th = the ``ceil(p/100 * N)``-th smallest.
* **Starvation.** ``wait_max`` = the longest time any message spent in the network
  (``accept`` to ``deliver``), counting also the messages taken but not delivered when the
  window ends (their age at its end): a message that never gets through shows here, not in
  the latencies. ``worst_share`` = the deliveries in the window of the worst-served source,
  divided by the mean over the sources that generate messages (1.0 when all are served
  alike, 0 when one is starved).

A message's data is a sequence number (mod ``2^(word_bits * beats)``), which is how a delivery
is matched to its message: the oldest message in flight to that node with that data.

:class:`ZeroLoad` offers a list of messages one at a time instead: the zero-load latency.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass

from ..spec.traffic import PATTERNS, destination

__all__ = [
    "LOAD_PATTERNS",
    "FIGURES",
    "Point",
    "NetworkLoad",
    "ZeroLoad",
    "destinations",
    "percentile",
]

#: The traffic patterns of the definitions layer, all of which run open loop.
LOAD_PATTERNS = PATTERNS

#: The figures of one point, in the order the experiments print them.
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
    "wait_max",
    "worst_share",
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


def destinations(pattern: str, nodes: int) -> list[int | None]:
    """Per node its fixed destination, ``None`` for ``random``; a node mapped to itself gets
    -1 (it generates nothing)."""
    h = nodes.bit_length() - 1
    out: list[int | None] = []
    for p in range(nodes):
        q = None if pattern == "random" else destination(pattern, p, h)
        out.append(-1 if q == p else q)
    return out


def percentile(values: list[int], p: float) -> int | None:
    """Nearest rank: the ``ceil(p/100 * N)``-th smallest of ``values`` (None if empty)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


class NetworkLoad:
    """Generates, offers and times the messages of one :class:`Point` on ``nodes`` stream
    endpoints; a message is ``beats`` words of ``word_bits``."""

    def __init__(self, nodes: int, word_bits: int, beats: int, point: Point):
        self.nodes, self.point = nodes, point
        self.word_bits, self.beats = word_bits, beats
        self.bits = word_bits * beats
        self.rng = random.Random(point.seed)
        self.stall_rng = random.Random(point.seed + 0x5EED)
        self.dest = destinations(point.pattern, nodes)
        self.end = point.warmup + point.window
        self.start = point.warmup
        self.cycle = 0
        self.sequence = 0
        #: Per node its queue of [offer cycle, dest, data, accept cycle]; the head is offered.
        self.queues: list[deque] = [deque() for _ in range(nodes)]
        #: Per node the beat of its head message on offer.
        self.beat = [0] * nodes
        #: Per node the words of the message being received.
        self.received: list[list[int]] = [[] for _ in range(nodes)]
        #: (dest, data) -> deque of (offer cycle, accept cycle, source), messages taken, in
        #: flight.
        self.flight: dict[tuple[int, int], deque] = {}
        self.generated = 0  # in the window
        self.latency: list[int] = []  # delivered in the window
        self.network: list[int] = []
        #: Per source its messages delivered in the window.
        self.served = [0] * nodes
        self._ready: list[int] = [1] * nodes

    @property
    def finished(self) -> bool:
        return self.cycle >= self.end

    def _queue(self, p: int, q: int) -> None:
        data = self.sequence & ((1 << self.bits) - 1)
        self.sequence += 1
        self.queues[p].append([self.cycle, q, data, None])
        self.generated += self.start <= self.cycle < self.end

    def _generate(self) -> None:
        rng, load, nodes = self.rng, self.point.load, self.nodes
        for p in range(nodes):
            q = self.dest[p]
            if q == -1 or rng.random() >= load:
                continue
            if q is None:
                r = rng.randrange(nodes - 1)
                q = r + (r >= p)
            self._queue(p, q)

    def inputs(self) -> tuple[list[tuple[int, int, int] | None], list[int]]:
        """This cycle's inputs: per node the ``tx`` beat ``(dest, word, last)`` (or None)
        and ``rx`` ready."""
        self._generate()
        mask = (1 << self.word_bits) - 1
        tx: list[tuple[int, int, int] | None] = []
        for p, q in enumerate(self.queues):
            if not q:
                tx.append(None)
                continue
            beat = self.beat[p]
            _, dest, data, _ = q[0]
            word = (data >> (beat * self.word_bits)) & mask
            tx.append((dest, word, int(beat == self.beats - 1)))
        stall = self.point.stall
        if stall:
            self._ready = [int(self.stall_rng.random() >= stall) for _ in range(self.nodes)]
        return tx, list(self._ready)

    def observe(self, tx_ready: list[int], rx: list[tuple[int, int] | None]) -> None:
        """This cycle's outputs: record the ``tx`` and ``rx`` handshakes, then advance."""
        t = self.cycle
        for p, q in enumerate(self.queues):
            if q and tx_ready[p]:
                self._taken(p, q, t)
        for n in range(self.nodes):
            if rx[n] is not None and self._ready[n]:
                self._received(n, *rx[n], t)
        self.cycle += 1

    def _taken(self, p: int, q: deque, t: int) -> None:
        head = q[0]
        if self.beat[p] == 0:
            head[3] = t
        self.beat[p] += 1
        if self.beat[p] == self.beats:
            self.beat[p] = 0
            offer, dest, data, accept = q.popleft()
            self.flight.setdefault((dest, data), deque()).append((offer, accept, p))

    def _received(self, n: int, word: int, last: int, t: int) -> None:
        words = self.received[n]
        words.append(word)
        if not last:
            return
        self.received[n] = []
        data = sum(w << (k * self.word_bits) for k, w in enumerate(words))
        waiting = self.flight.get((n, data))
        if len(words) != self.beats or not waiting:
            raise RuntimeError(f"cycle {t}: node {n} received {data:#x}, not sent")
        offer, accept, source = waiting.popleft()
        if t >= self.start:
            self.latency.append(t - offer)
            self.network.append(t - accept)
            self.served[source] += 1

    def figures(self) -> dict:
        """The point's figures (:data:`FIGURES`), rounded for tables; latencies in cycles."""
        cells = self.nodes * self.point.window
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
            "wait_max": self._wait_max(),
            "worst_share": self._worst_share(),
        }

    def _wait_max(self) -> int | None:
        """The longest accept-to-deliver time, or age at the window's end of a message in
        flight then."""
        ages = [self.end - accept for flight in self.flight.values() for _, accept, _ in flight]
        return max(self.network + ages, default=None)

    def _worst_share(self) -> float | None:
        """The worst-served source's deliveries over the mean of the sources that send."""
        sending = [p for p in range(self.nodes) if self.dest[p] != -1]
        if not sending:
            return None
        mean = sum(self.served[p] for p in sending) / len(sending)
        return round(min(self.served[p] for p in sending) / mean, 3) if mean else None


class ZeroLoad(NetworkLoad):
    """The messages ``pairs`` (``(src, dest)``) one at a time, each offered ``gap`` cycles
    after the one before was delivered, so that each has the network to itself; every one is
    counted, and the mean latency is the network's zero-load latency. A message not delivered
    within ``limit`` cycles is an error."""

    def __init__(self, nodes, word_bits, beats, pairs, gap: int = 64, limit: int = 10_000):
        super().__init__(nodes, word_bits, beats, Point("random", 1.0, 0, 1))
        self.pairs = deque(pairs)
        self.count = len(self.pairs)
        self.gap, self.limit = gap, limit
        self.next_offer: int | None = 0
        self.offered_at = 0

    @property
    def finished(self) -> bool:
        return len(self.latency) == self.count

    def _generate(self) -> None:
        if self.next_offer == self.cycle and self.pairs:
            self._queue(*self.pairs.popleft())
            self.next_offer, self.offered_at = None, self.cycle
        elif self.next_offer is None and self.cycle - self.offered_at > self.limit:
            raise RuntimeError(f"cycle {self.cycle}: a message was not delivered in {self.limit}")

    def _received(self, n: int, word: int, last: int, t: int) -> None:
        before = len(self.latency)
        super()._received(n, word, last, t)
        if len(self.latency) > before:
            self.next_offer = t + self.gap

    def figures(self) -> dict:
        """The latencies (cycles) of every message, offered to delivered and accepted to
        delivered, and how many."""
        lat, net = self.latency, self.network
        return {
            "messages": len(lat),
            "mean": round(sum(lat) / len(lat), 3) if lat else None,
            "min": min(lat, default=None),
            "max": max(lat, default=None),
            "net_mean": round(sum(net) / len(net), 3) if net else None,
        }
