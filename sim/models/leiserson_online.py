"""Reference model of the on-line Leiserson fat-tree (design ``leiserson-online``).

Restated from section II of the paper and the definitions of
:mod:`fattree.spec.leiserson_online`, never from the RTL:

* :func:`route_cycle` is one delivery cycle of the network: every message's M bit leaves its
  leaf in cycle 1, passes each node's selector in 2 cycles and each concentrator stage in 1.
  A stage input carrying an M bit takes, in that cycle, the **first edge (in adjacency
  order) whose output is still free** in this delivery cycle; inputs whose M bits arrive in
  the same cycle choose in input order (a greedy matching, built as messages arrive),
  starting, at a cascade's first stage, from an input that moves on by one every delivery
  cycle (:func:`first_input`), and from input 0 at its other stages. An input that finds
  every output of its edges taken loses its message there.
* :class:`LeisersonOnlineModel` is the whole design at its ports, cycle by cycle: a queue of
  ``queue`` messages per leaf (``tx``), a global delivery-cycle counter, each leaf sending
  its oldest message every delivery cycle until it is acknowledged, and each receiver
  (``rx``, one holding register) acknowledging a message only if its register is free when
  the message's last bit arrives; an acknowledged message leaves the sender's queue in the
  last cycle of the delivery cycle.
* :func:`run_online` delivers a whole message set (receivers always ready) and counts the
  delivery cycles, for the experiments; its delivery cycles are turns 0, 1, 2, ... as the
  hardware's after reset.

The model shares the graphs (:class:`~fattree.spec.capacities.TreeLayout`), the frame and the
delivery-cycle length with the hardware; the greedy choice, the timing of the events and the
queues are its own.
"""

from __future__ import annotations

import copy
from collections import defaultdict, deque
from dataclasses import dataclass, field

from ...spec.capacities import TreeLayout
from ...spec.concentrator_graph import max_matching
from ...spec.leiserson_online import (
    LEISERSON_ONLINE,
    check_online_layout,
    cycle_length,
)
from ..coverage import Coverage, CoverPoint
from .leiserson_coverage import TreeCounter, tree_points

__all__ = [
    "Outcome",
    "CycleResult",
    "first_input",
    "route_cycle",
    "root_search",
    "LeisersonOnlineModel",
    "run_online",
]


@dataclass(frozen=True)
class Outcome:
    """What happened to one message in one delivery cycle."""

    src: int
    dst: int
    delivered: bool
    #: Cycles from its M bit on the send wire to its M bit on ``dst``'s wire (if delivered).
    latency: int | None
    #: Stages passed (registers on the acknowledgement's way back), if delivered.
    stages: int | None
    #: ``(node, port, stage)`` where it was lost, or None.
    lost_at: tuple[int, str, int] | None = None


@dataclass
class CycleResult:
    outcomes: dict[int, Outcome]
    #: Per stage instance ``(node, port, stage)``: inputs that arrived, inputs the greedy
    #: routed, and a maximum matching of the same inputs (with hindsight, as if all had
    #: been known at once).
    stage_stats: dict[tuple[int, str, int], tuple[int, int, int]] = field(default_factory=dict)

    @property
    def delivered(self) -> list[int]:
        return sorted(s for s, o in self.outcomes.items() if o.delivered)

    @property
    def lost(self) -> list[int]:
        return sorted(s for s, o in self.outcomes.items() if not o.delivered)


def _out_port(n: int, node: int, in_port: str, dst: int) -> str:
    """Where the message goes at ``node``: up, unless ``dst`` is below it; then towards it."""
    level = node.bit_length() - 1
    height = (n.bit_length() - 1) - level
    below = (n + dst) >> (height - 1)  # dst's ancestor one level below node
    if below >> 1 != node:
        return "U"
    return "LR"[below & 1]


def first_input(turn: int, inputs: int) -> int:
    """The input of a cascade's first stage (``inputs`` inputs) that chooses first among
    simultaneous arrivals in delivery cycle ``turn`` (0 = the first after reset): input 0,
    then each delivery cycle the next one, round and round. The later stages of a cascade
    keep input 0 first: what arrives there together arrived together at the first stage, on
    the outputs that stage's rotated order gave it."""
    return turn % inputs


def route_cycle(
    layout: TreeLayout,
    sends: dict[int, int],
    *,
    turn: int = 0,
    stats: bool = False,
    counter: TreeCounter | None = None,
) -> CycleResult:
    """Delivery cycle ``turn`` (0 = the first after reset; it sets the first input of each
    cascade's first stage, :func:`first_input`): ``sends[src] = dst`` (one message per leaf).
    With ``stats``, the greedy's routed count against a maximum matching per stage instance;
    ``counter`` counts the cover points."""
    check_online_layout(layout)
    n = layout.leaves
    for src, dst in sends.items():
        if not 0 <= src < n or not 0 <= dst < n or src == dst:
            raise ValueError(f"message {src} -> {dst} is not between two leaves of {n}")
    cycle = _DeliveryCycle(layout, sends, turn, counter)
    if counter is not None:
        counter.begin()
    for src in sorted(sends):
        if counter is not None:
            counter.enter(src)
        cycle.enter(src, (n + src) >> 1, "LR"[(n + src) & 1], 0, 1)
    cycle.run()
    if counter is not None:
        counter.end()
    result = CycleResult(dict(sorted(cycle.outcomes.items())))
    if stats:
        for key, inputs in cycle.arrived.items():
            graph = cycle.graph_of(key)
            matched = len(max_matching(graph, inputs))
            result.stage_stats[key] = (len(inputs), cycle.routed[key], matched)
    return result


class _DeliveryCycle:
    """One delivery cycle's messages as they move: selectors take no stage time beyond their
    own two cycles, a stage one cycle, and the arrivals at a stage in one cycle choose their
    edges greedily in input order."""

    def __init__(self, layout: TreeLayout, sends: dict[int, int], turn: int, counter):
        self.layout, self.sends, self.turn, self.counter = layout, sends, turn, counter
        self.n = layout.leaves
        # Pending arrivals: time -> list of (stage key, input vertex, src). A message is at a
        # node's selector input at time t on wire w (t = 1 at its source's send wire).
        self.events: dict[int, list] = defaultdict(list)
        self.stages_of: dict[int, int] = defaultdict(int)
        self.outcomes: dict[int, Outcome] = {}
        self.taken: dict[tuple[int, str, int], set[int]] = defaultdict(set)
        self.arrived: dict[tuple[int, str, int], list[int]] = defaultdict(list)
        self.routed: dict[tuple[int, str, int], int] = defaultdict(int)

    def enter(self, src: int, node: int, in_port: str, wire: int, time: int) -> None:
        """Walk identity cascades (no stage, no delay) until a stage or the destination."""
        dst, counter = self.sends[src], self.counter
        while True:
            out = _out_port(self.n, node, in_port, dst)
            level = node.bit_length() - 1
            cascade = self.layout.cascade(level, out)
            vertex = self.layout.group_offset(level, out, in_port) + wire
            time += 2  # the selector
            if counter is not None:
                counter.turn(level, in_port, out)
                if not cascade.stages:
                    counter.passed(node, out)
            if cascade.stages:
                self.events[time].append(((node, out, 0), vertex, src))
                return
            wire = vertex
            node, in_port, done = self.next_channel(node, out)
            if done is not None:
                self.outcomes[src] = Outcome(src, dst, True, time - 1, self.stages_of[src])
                return

    def next_channel(self, node: int, out: str):
        """Where output ``out`` of ``node`` leads: (parent or child, its input, None), or
        (None, None, leaf) when it reaches a leaf."""
        if out == "U":
            return node >> 1, "LR"[node & 1], None
        child = 2 * node + (out == "R")
        if child >= self.n:
            return None, None, child - self.n
        return child, "U", None

    def graph_of(self, key):
        node, port, t = key
        return self.layout.cascade(node.bit_length() - 1, port).stages[t].graph

    def order(self, event):
        """Arrivals at one stage in one cycle choose in input order: from the first input
        round at a cascade's first stage, from input 0 at the others."""
        key, vertex, _src = event
        inputs = self.graph_of(key).r
        first = first_input(self.turn, inputs) if key[2] == 0 else 0
        return key, (vertex - first) % inputs

    def run(self) -> None:
        while self.events:
            time = min(self.events)
            now = sorted(self.events.pop(time), key=self.order)
            if self.counter is not None:
                _count_arrivals(self.counter, now)
            for key, vertex, src in now:
                self.arrive(time, key, vertex, src)

    def arrive(self, time: int, key, vertex: int, src: int) -> None:
        """A message at a stage's input: it takes its first free edge or is lost."""
        node, port, t = key
        graph, counter = self.graph_of(key), self.counter
        self.arrived[key].append(vertex)
        free = [j for j in graph.adjacency[vertex] if j not in self.taken[key]]
        if counter is not None:
            row = graph.adjacency[vertex]
            choice = row.index(free[0]) if free else None
            counter.edge(node.bit_length() - 1, port, t, choice, len(row))
        if not free:
            self.outcomes[src] = Outcome(src, self.sends[src], False, None, None, key)
            return
        self.taken[key].add(free[0])
        self.routed[key] += 1
        self.stages_of[src] += 1
        cascade = self.layout.cascade(node.bit_length() - 1, port)
        if t + 1 < cascade.depth:
            self.events[time + 1].append(((node, port, t + 1), free[0], src))
            return
        # Out of the cascade at time + 1, onto the next channel.
        if counter is not None:
            counter.passed(node, port)
        after, in_port, done = self.next_channel(node, port)
        if done is not None:
            self.outcomes[src] = Outcome(src, self.sends[src], True, time, self.stages_of[src])
            return
        self.enter(src, after, in_port, free[0], time + 1)


#: The root's down cascade is searched exhaustively (every set of the other child's wires
#: at every turn) while that is at most this many delivery cycles to route.
ROOT_SEARCH = 10_000
_searched: dict = {}


def root_search(layout: TreeLayout) -> dict[str, dict[str, tuple]] | None:
    """What the greedy can do at the root's L and R cascades, found by routing every set of
    messages across the root (leaves of the left half to the right half: each on its own
    wire of the root's input channel, all arriving together) at every turn of the first
    stage's rotated order: per point (``edge/L0/down/St``, ``load/C1/down``) each bin hit,
    with one ``(sources, turn)`` that hits it. None where that is more than
    :data:`ROOT_SEARCH` delivery cycles. The cascades see nothing else: the root has no
    external port, so only the other child's channel feeds them."""
    key = (layout.leaves, layout.capacities, layout.seed)
    if key in _searched:
        return _searched[key]
    half, turns = layout.leaves // 2, layout.cascade(0, "L").r
    found = None
    if (1 << layout.cap(1)) * turns <= ROOT_SEARCH and layout.cap(1) == half:
        found = {}
        coverage = Coverage(tree_points(layout, external=False, online=True))
        counter = TreeCounter(coverage, layout)
        names = [n for n in coverage.hits if n.startswith("edge/L0/down/") or n == "load/C1/down"]
        for mask in range(1, 1 << half):
            sources = tuple(i for i in range(half) if mask >> i & 1)
            for turn in range(turns):
                before = {n: dict(coverage.hits[n]) for n in names}
                route_cycle(layout, {i: i + half for i in sources}, turn=turn, counter=counter)
                for n in names:
                    for b, hits in coverage.hits[n].items():
                        if hits > before[n][b]:
                            found.setdefault(n, {}).setdefault(b, (sources, turn))
    _searched[key] = found
    return found


def _count_arrivals(counter: TreeCounter, events) -> None:
    """Messages at each cascade's first stage in this cycle: alone or together."""
    at = defaultdict(int)
    for (node, port, t), _vertex, _src in events:
        if t == 0:
            at[node, port] += 1
    for (node, port), count in at.items():
        counter.arrive(node.bit_length() - 1, port, count)


class LeisersonOnlineModel:
    """The design at its ports, cycle by cycle.

    Call :meth:`outputs` for the values the outputs have in the current cycle (functions of
    registers only), then :meth:`tick` with the inputs of that cycle. ``tx[i]`` is a beat
    ``(dst, data)`` or None (valid low); ``rx_ready[i]`` is 0 or 1.
    """

    #: What :meth:`start_coverage` counts into (None: not counted).
    coverage: Coverage | None = None
    _counter: TreeCounter | None = None

    def __init__(self, layout: TreeLayout, data_bits: int = 8, queue: int = 4):
        self.layout = check_online_layout(layout)
        self.data_bits = LEISERSON_ONLINE.check("data_bits", data_bits, model=True)
        self.queue = LEISERSON_ONLINE.check("queue", queue, model=True)
        self.length = cycle_length(layout, data_bits)
        self.h = layout.levels
        n = self.leaves = layout.leaves
        self.count = 0  # the delivery-cycle counter, 0 .. length - 1
        self.start = False  # high in cycle 0 of every delivery cycle but the first after reset
        self.cycle = 0
        self.queues = [deque() for _ in range(n)]
        self.in_flight = [False] * n
        self.acked = [False] * n
        self.rx = [None] * n  # (src, data) held for the receiver
        #: A message to its own leaf was offered (it has no path: taken, dropped, flagged).
        self.error = [0] * n
        #: Absolute cycle -> [(dst, src, data)] whose last bit reaches dst in that cycle.
        self.arrivals: dict[int, list] = defaultdict(list)
        #: Per delivery cycle: the :class:`CycleResult` of the network.
        self.results: list[CycleResult] = []
        self.delivery_cycles = 0
        #: Messages the network delivered that the receiver refused (its register full).
        self.refused = 0
        self._tries = [0] * n  # times each leaf's oldest message was sent (coverage only)

    def cover_points(self) -> list[CoverPoint]:
        """The tree's routing as the greedy switches set it (no external channel) and the
        ports' protocol (docs/leiserson.md, "Coverage")."""
        exact = root_search(self.layout)
        return tree_points(self.layout, external=False, online=True, exact=exact) + [
            CoverPoint(
                "tx",
                ("taken", "refused: queue full", "to itself"),
                "a message offered and queued, refused with the sender's queue full, or "
                "addressed to its own leaf (taken, dropped and flagged on error)",
            ),
            CoverPoint(
                "send",
                ("first", "again"),
                "a leaf sending its oldest message for the first time, or again after a "
                "delivery cycle that did not acknowledge it (lost in the network or refused)",
            ),
            CoverPoint(
                "arrival",
                ("kept", "refused: register full"),
                "a message's last bit at its receiver: kept and acknowledged, or refused "
                "because the receiver still holds one (the sender tries again)",
            ),
            CoverPoint(
                "rx",
                ("taken", "stalled"),
                "a held message taken, or kept while its receiver is not ready",
            ),
        ]

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read."""
        self.coverage = Coverage(self.cover_points())
        self._counter = TreeCounter(self.coverage, self.layout)
        return self.coverage

    def clone(self) -> LeisersonOnlineModel:
        """An independent copy in the same state (its coverage too)."""
        return copy.deepcopy(self)

    def outputs(self):
        """``(cycle_start, [tx_ready per leaf], [(src, data) or None per leaf], [error per
        leaf])``."""
        ready = [int(len(q) < self.queue) for q in self.queues]
        return int(self.start), ready, list(self.rx), list(self.error)

    def tick(self, tx, rx_ready) -> None:
        n, now = self.leaves, self.cycle
        if self.start:
            self.delivery_cycles += 1
            sends = {}
            for leaf in range(n):
                self.in_flight[leaf] = bool(self.queues[leaf])
                self.acked[leaf] = False
                if self.queues[leaf]:
                    sends[leaf] = self.queues[leaf][0][0]
                    self._tries[leaf] += 1
                    if self.coverage is not None:
                        self.coverage.hit("send", "first" if self._tries[leaf] == 1 else "again")
            # The first delivery cycle after reset is turn 0.
            result = route_cycle(
                self.layout, sends, turn=self.delivery_cycles - 1, counter=self._counter
            )
            self.results.append(result)
            for src, outcome in result.outcomes.items():
                if outcome.delivered:
                    # The M bit leaves at now + 1; source and data follow it.
                    last = now + 1 + outcome.latency + self.h + self.data_bits
                    self.arrivals[last].append((outcome.dst, src, self.queues[src][0][1]))
        # The receivers: a take frees the register; a message whose last bit is now is
        # kept (and acknowledged) only if the register is free now.
        arriving = self.arrivals.pop(now, [])
        taken = [self.rx[i] is not None and rx_ready[i] for i in range(n)]
        cover = self.coverage
        if cover is not None:
            for i in range(n):
                if self.rx[i] is not None:
                    cover.hit("rx", "taken" if taken[i] else "stalled")
        for dst, src, data in arriving:
            if self.rx[dst] is None:
                self.rx[dst] = (src, data)
                self.acked[src] = True
            else:
                self.refused += 1
            if cover is not None:
                cover.hit("arrival", "kept" if self.acked[src] else "refused: register full")
        for i in range(n):
            if taken[i]:
                self.rx[i] = None
        # The senders: a beat is taken when the queue was not full at the cycle's start (the
        # ready the sender saw); the last cycle drops what was acknowledged.
        ready = [len(q) < self.queue for q in self.queues]
        if self.count == self.length - 1:
            for leaf in range(n):
                if self.in_flight[leaf] and self.acked[leaf]:
                    self.queues[leaf].popleft()
                    self._tries[leaf] = 0
        for leaf in range(n):
            beat = tx[leaf]
            if beat is not None and cover is not None:
                taken_as = "to itself" if beat[0] == leaf else "taken"
                cover.hit("tx", taken_as if ready[leaf] else "refused: queue full")
            if beat is not None and ready[leaf]:
                if beat[0] == leaf:
                    self.error[leaf] = 1
                else:
                    self.queues[leaf].append(tuple(beat))
        self.start = self.count == self.length - 1
        self.count = (self.count + 1) % self.length
        self.cycle += 1


def run_online(
    layout: TreeLayout, messages, *, max_cycles: int = 10_000, stats: bool = False
) -> tuple[int, list[CycleResult]]:
    """Deliver ``messages`` (``(src, dst)`` pairs, in each leaf's queue in list order) with
    every receiver always ready: each delivery cycle every leaf sends its oldest message not
    yet acknowledged. Returns the delivery cycles taken and each cycle's result; raises
    ``RuntimeError`` after ``max_cycles`` (a message that never gets through)."""
    check_online_layout(layout)
    queues: dict[int, deque] = defaultdict(deque)
    for src, dst in messages:
        queues[src].append(dst)
    results = []
    while any(queues.values()):
        if len(results) == max_cycles:
            left = sum(len(q) for q in queues.values())
            raise RuntimeError(f"{left} messages still undelivered after {max_cycles} cycles")
        sends = {src: q[0] for src, q in queues.items() if q}
        result = route_cycle(layout, sends, turn=len(results), stats=stats)
        for src in result.delivered:
            queues[src].popleft()
        results.append(result)
    return len(results), results
