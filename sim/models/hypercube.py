"""Cycle-exact reference model of the Connection Machine's hypercube router (Stanfill 1987).

Restated from section 4.2 of the paper and the choices of docs/hypercube.md, not from the
RTL. Each node holds, as registers: one arrival register per wire (the message its neighbour
sent over that wire in the last cycle), ``buffers`` buffer slots (kept in order, oldest
first), an injection queue of :data:`~fattree.spec.hypercube.INJECT_DEPTH` messages per
processor, a receive register per processor and the count of its referrals in the last
cycle. In each cycle a node takes its messages in a fixed order, the *network* messages
first (buffer slots in order, then the arrivals by wire), then the heads of the injection
queues (by processor), and

1. **delivers**: per processor, the first message whose relative address is 0 and which is
   for that processor goes to its receive register, if that is empty or being read;
2. **routes**: each network message takes the lowest-numbered free wire whose bit is 1 in
   its relative address;
3. **buffers**: the network messages left keep (or take) the buffer slots, in order;
4. **refers**: the network messages left after that (the buffer is full) each take the
   lowest-numbered free wire: one step away, never dropped (there are always enough free
   wires: at most ``buffers + dim`` network messages, ``buffers + dim`` places);
5. **injects**: each injection head then takes, in turn, the lowest free wire of its
   relative address, else a free buffer slot, else waits in its queue (never referred).

A message sent over wire ``i`` has bit ``i`` of its relative address inverted. Outputs are
registers only: no output depends on an input in the same cycle.

:meth:`HypercubeModel.step` takes one cycle's inputs, returns the outputs visible in that
cycle (before the clock edge), then advances one clock. The model carries with each message
what the hardware does not (source, injection cycle, hops) to report the time in network.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

from ...spec.hypercube import (
    INJECT_DEPTH,
    check_hypercube,
    neighbour,
    proc_bits,
    relative_address,
    split_dest,
)
from ...spec.traffic import HOT_SPOT, destination
from ..coverage import Coverage, CoverPoint
from .driver import Driver

__all__ = [
    "Message",
    "HypercubeOutputs",
    "HypercubeModel",
    "Driver",
    "traffic",
    "run_model",
    "PATTERNS",
]

#: The traffic patterns :func:`traffic` makes.
PATTERNS = ("random", "permutation", "transpose", "bit-reversal", "hotspot")


@dataclass
class Message:
    """A message in flight: what the hardware carries (``rel``, ``proc``, ``data``) and what
    only the model keeps (``src``, ``dest``, ``sent``: the cycle its tx beat was taken,
    ``hops``, ``referrals``)."""

    rel: int
    proc: int
    data: int
    src: int
    dest: int
    sent: int
    hops: int = 0
    referrals: int = 0


@dataclass
class HypercubeOutputs:
    """The outputs of one cycle, per network processor (``tx_ready``, ``rx_valid``,
    ``rx_data``) and per node (``refer``: referrals the node made in the last cycle)."""

    tx_ready: list[int]
    rx_valid: list[int]
    rx_data: list[int]
    refer: list[int]


@dataclass
class Delivery:
    """A message taken by its receiver: where and when."""

    dest: int
    data: int
    src: int
    latency: int
    hops: int
    referrals: int


class _Node:
    def __init__(self, dim: int, procs: int, buffers: int):
        self.arrive: list[Message | None] = [None] * dim
        self.slots: list[Message | None] = [None] * buffers
        self.inject: list[list[Message]] = [[] for _ in range(procs)]
        self.rx: list[list[Message]] = [[] for _ in range(procs)]
        self.refer = 0
        # The last decision, carried out in this cycle: (kind, target, message, place).
        self.plan: list = []
        self.leaving: set[int] = set()  # slots whose message leaves in this cycle
        self.popping = [False] * procs  # queues whose head leaves in this cycle


class HypercubeModel:
    """``2^dim`` nodes of ``procs`` processors each, ``buffers`` buffer slots per node.

    Attributes
    ----------
    cycle : int
        Clock edges so far.
    delivered : list of Delivery
        Every message taken by a receiver, in order.
    referrals, hops : int
        Referrals and wire crossings so far, over the whole network.
    """

    #: What :meth:`start_coverage` counts into (None: not counted).
    coverage: Coverage | None = None

    def __init__(self, dim: int, procs: int = 1, buffers: int = 2, data_bits: int = 8):
        self.dim, self.procs, self.buffers, self.data_bits = check_hypercube(
            dim, procs, buffers, data_bits
        )
        self.nodes_count = 1 << dim
        self.processors = self.nodes_count * procs
        self.reset()

    def reset(self) -> None:
        self.nodes = [_Node(self.dim, self.procs, self.buffers) for _ in range(self.nodes_count)]
        self.cycle = 0
        self.delivered: list[Delivery] = []
        self.referrals = 0
        self.hops = 0
        self.injected = 0

    # -- coverage ----------------------------------------------------------------------------

    def cover_points(self) -> list[CoverPoint]:
        """The situations of the paper's rules (section 4.2) and of docs/hypercube.md's choices
        that this cube can meet (docs/hypercube.md, "Coverage"). Bins a point's parameters
        rule out are left out: contention between buffered messages needs two slots, between
        arrivals two wires, between injection heads two processors; with no buffer slot
        nothing is kept or buffered; at dim 1 no message is referred for want of a wire."""
        k, b = self.dim, self.buffers
        points = self._wire_points()
        kept = ("kept", "buffered") if b else ()
        points += [
            CoverPoint(
                "network",
                ("delivered", "routed", *kept, "referred"),
                "a network message's fate in a cycle: into its receive register, over a wire "
                "of its relative address, kept in or put into a buffer slot, referred",
            ),
            CoverPoint(
                "refer",
                # At dim 1 a blocked message's one wire is taken: none is left to refer it over
                # (b + 2 messages for b + 1 places), so the node never has one.
                ("at its node", "blocked") if k > 1 else ("at its node",),
                "why a message was referred: at its node with its receiver busy, or every wire "
                "of its relative address taken",
            ),
            CoverPoint(
                "referrals",
                tuple(str(r) for r in range(1, k + 1)),
                "referrals by one node in one cycle (its refer output): up to one per wire",
            ),
            CoverPoint(
                "places",
                ("all taken",),
                "a decision whose referrals take the last free wires with no slot left: the "
                "bound that leaves a wire for every referral",
            ),
        ]
        if b:
            points.append(
                CoverPoint(
                    "buffer",
                    tuple(str(n) for n in range(b + 1)),
                    "buffer slots in use after a cycle; all of them: the next blocked "
                    "message is referred",
                )
            )
        return points + [
            CoverPoint(
                "inject",
                ("delivered", "wire", *(("buffered",) if b else ()), "waits"),
                "an injection head's fate: delivered in its own node, over a wire, into a "
                "free buffer slot, or left waiting in its queue (never referred)",
            ),
            CoverPoint(
                "tx",
                ("refused",),
                "a processor offering a message while its injection queue is full",
            ),
            CoverPoint(
                "receive",
                ("into empty", "behind one", "full", "claimed"),
                "a message at its node and its receive queue: empty, with one message ahead, "
                "without room, or claimed by another message in the same decision",
            ),
            CoverPoint(
                "deliver",
                tuple(f"P{g}" for g in range(self.processors)),
                "messages put into each processor's receive register",
            ),
            CoverPoint(
                "distance",
                tuple(str(d) for d in range(k + 1)),
                "messages delivered per distance from their source node (bits of the relative "
                "address at injection): the own node up to the cube's diameter",
            ),
            CoverPoint(
                "path",
                ("shortest", "longer"),
                "a message delivered in as many hops as its distance, or in more after referrals",
            ),
        ]

    def _wire_points(self) -> list[CoverPoint]:
        """Per wire ``i``: the links, what crossed the wire, and who won it from whom."""
        k, p, b = self.dim, self.procs, self.buffers
        contend = (
            ("buffer over buffer",) * (b >= 2)
            + ("buffer over arrival",) * (b >= 1)
            + ("arrival over arrival",) * (k >= 2)
            + ("network over injection", "referral over injection")
            + ("injection over injection",) * (p >= 2)
        )
        points = []
        for i in range(k):
            points += [
                CoverPoint(
                    f"link/W{i}",
                    tuple(f"N{n}" for n in range(self.nodes_count)),
                    "a message sent by each node over its wire i: every link of the cube used",
                ),
                CoverPoint(
                    f"wire/W{i}",
                    ("route", "inject", "refer"),
                    "a message crossing wire i: a network message over a wire of its relative "
                    "address, an injection head, or a referral (one step away)",
                ),
                CoverPoint(
                    f"contend/W{i}",
                    contend,
                    "wire i taken by a message earlier in the node's order while a later one "
                    "wanted it: buffer slots oldest first, then arrivals, referrals, injections",
                ),
            ]
        return points

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read."""
        self.coverage = Coverage(self.cover_points())
        return self.coverage

    def clone(self) -> HypercubeModel:
        """An independent copy in the same state (its coverage too), to try traffic on."""
        return copy.deepcopy(self)

    # -- outputs -----------------------------------------------------------------------------

    def outputs(self) -> HypercubeOutputs:
        p = self.procs
        tx_ready, rx_valid, rx_data = [], [], []
        for node in self.nodes:
            for q in range(p):
                room = len(node.inject[q]) < INJECT_DEPTH or node.popping[q]
                tx_ready.append(int(room))
                held = node.rx[q][0] if node.rx[q] else None
                rx_valid.append(int(held is not None))
                rx_data.append(held.data if held is not None else 0)
        return HypercubeOutputs(tx_ready, rx_valid, rx_data, [n.refer for n in self.nodes])

    def held_for_receivers(self) -> int:
        """Messages a decision delivered that their receiver has not taken yet: in receive
        queues, or being written into one in this cycle."""
        queued = sum(len(rx) for node in self.nodes for rx in node.rx)
        return queued + sum(kind == "rx" for node in self.nodes for kind, *_ in node.plan)

    def in_flight(self) -> int:
        """Messages taken from a processor and not yet taken by their receiver."""
        return self.injected - len(self.delivered)

    # -- one clock ---------------------------------------------------------------------------

    def step(self, tx_valid, tx_dest, tx_data, rx_ready=None) -> HypercubeOutputs:
        """Outputs of this cycle, then one clock edge with these inputs (per processor)."""
        out = self.outputs()
        p, dim = self.procs, self.dim
        mask = (1 << self.data_bits) - 1
        if rx_ready is None:
            rx_ready = [1] * self.processors
        sent: list[list[Message | None]] = []
        for n, node in enumerate(self.nodes):
            ready = rx_ready[n * p : (n + 1) * p]
            sent.append(self._node_step(n, node, ready))
            # Injection after the node's decisions: the new message joins the queue's tail.
            for q in range(p):
                g = n * p + q
                if tx_valid[g] and not out.tx_ready[g] and self.coverage is not None:
                    self.coverage.hit("tx", "refused")
                if tx_valid[g] and out.tx_ready[g]:
                    dest = tx_dest[g] & (self.processors - 1)
                    dst_node, dst_proc = split_dest(dest, p)
                    rel = relative_address(n, dst_node)
                    msg = Message(rel, dst_proc, tx_data[g] & mask, g, dest, self.cycle)
                    node.inject[q].append(msg)
                    self.injected += 1
        for n, node in enumerate(self.nodes):
            for wire in range(dim):
                node.arrive[wire] = sent[neighbour(n, wire)][wire]
        self.cycle += 1
        return out

    def _node_step(self, n: int, node: _Node, ready) -> list[Message | None]:
        """One node's cycle: the send stage carries out the last decision, the decide stage
        makes the next from what the node holds now. Returns what it sends on each wire."""
        p = self.procs
        read = [bool(node.rx[q]) and bool(ready[q]) for q in range(p)]
        for q in range(p):
            if read[q]:
                held = node.rx[q].pop(0)
                latency = self.cycle - held.sent
                self.delivered.append(
                    Delivery(n * p + q, held.data, held.src, latency, held.hops, held.referrals)
                )
        wires: list[Message | None] = [None] * self.dim
        writes: dict[int, Message] = {}
        into_rx: list[Message | None] = [None] * p
        for kind, target, msg, _ in node.plan:  # send stage
            if kind == "wire":
                msg.rel ^= 1 << target
                msg.hops += 1
                wires[target] = msg
            elif kind == "slot":
                writes[target] = msg
            else:
                into_rx[target] = msg
        # A receive queue has room for a decision if at most one entry is taken once this
        # cycle's write is in (the next read is not known yet).
        room = [len(node.rx[q]) + (into_rx[q] is not None) <= 1 for q in range(p)]
        plan = self._decide(n, node, room, set(writes))
        for s in node.leaving:  # the clock edge
            node.slots[s] = None
        for s, msg in writes.items():
            node.slots[s] = msg
        for q in range(p):
            if node.popping[q]:
                node.inject[q].pop(0)
            if into_rx[q] is not None:
                node.rx[q].append(into_rx[q])
        node.plan = plan
        node.leaving = {who[1] for *_, who in plan if who[0] == "slot"}
        node.popping = [("head", q) in {who for *_, who in plan} for q in range(p)]
        if self.coverage is not None and self.buffers:
            self.coverage.hit("buffer", str(sum(m is not None for m in node.slots)))
        return wires

    def _candidates(self, node: _Node) -> list[tuple[tuple[str, int], Message]]:
        """The decide stage's messages in the node's order, each with its place: the slots
        whose message is not leaving, the arrivals by wire, per processor the first queue
        entry not leaving."""
        cands = [
            (("slot", s), msg)
            for s, msg in enumerate(node.slots)
            if msg is not None and s not in node.leaving
        ]
        cands += [(("arrival", i), msg) for i, msg in enumerate(node.arrive) if msg is not None]
        for q, queue in enumerate(node.inject):
            first = 1 if node.popping[q] else 0
            if len(queue) > first:
                cands.append((("head", q), queue[first]))
        return cands

    def _decide(self, n: int, node: _Node, room: list[bool], filling: set[int]) -> list:
        """The decide stage: ``(kind, target, message, place)`` per message that moves in the
        next cycle; kind ``wire``, ``slot`` or ``rx``."""
        cover = self.coverage
        cands = self._candidates(node)
        plan = []
        moved: set[tuple[str, int]] = set()
        # 1. deliver: per processor the first message for it, if its receive queue has room.
        claimed: set[int] = set()
        for who, msg in cands:
            if msg.rel:
                continue
            if cover is not None:
                cover.hit("receive", _receive_bin(msg.proc, room, claimed, node.rx))
            if room[msg.proc] and msg.proc not in claimed:
                claimed.add(msg.proc)
                plan.append(("rx", msg.proc, msg, who))
                moved.add(who)
                if cover is not None:
                    self._cover_delivery(cover, n * self.procs + msg.proc, msg)
        network = [(who, msg) for who, msg in cands if who[0] != "head"]
        heads = [(who, msg) for who, msg in cands if who[0] == "head"]
        # 2. route: the lowest free wire whose bit is 1.
        free = (1 << self.dim) - 1
        if cover is not None:
            self._owner: list[str | None] = [None] * self.dim  # who took each wire
            self._node = n
        for who, msg in network:
            if who in moved:
                continue
            kind = "buffer" if who[0] == "slot" else "arrival"
            if cover is not None:
                self._cover_contention(msg.rel, free, kind)
            avail = msg.rel & free
            if avail:
                free = self._take(plan, moved, who, msg, avail, free, kind)
        # 3. buffer: free slots are those not being written now and empty, leaving, or whose
        # message moves in this decision; a buffered message not moved keeps its slot.
        slots = [
            s
            for s in range(self.buffers)
            if s not in filling
            and (node.slots[s] is None or s in node.leaving or ("slot", s) in moved)
        ]
        referred = []
        for who, msg in network:
            if who in moved or who[0] == "slot":
                continue
            if slots:
                plan.append(("slot", slots.pop(0), msg, who))
                moved.add(who)
            else:
                referred.append((who, msg))
        # 4. refer: the rest over the lowest free wires (never short of one: see the module).
        for who, msg in referred:
            if not free:
                raise AssertionError(f"node {n}: no free wire to refer a message to")
            msg.referrals += 1
            free = self._take(plan, moved, who, msg, free, free, "referral")
        self.referrals += len(referred)
        node.refer = len(referred)
        if cover is not None:
            self._cover_places(cover, network, plan, referred, free, slots)
        # 5. inject: a wire of the relative address, else a free slot, else wait.
        for who, msg in heads:
            fate = "delivered" if who in moved else "waits"
            if who not in moved:
                if cover is not None:
                    self._cover_contention(msg.rel, free, "injection")
                avail = msg.rel & free
                if avail:
                    free = self._take(plan, moved, who, msg, avail, free, "injection")
                    fate = "wire"
                elif slots:
                    plan.append(("slot", slots.pop(0), msg, who))
                    fate = "buffered"
            if cover is not None:
                cover.hit("inject", fate)
        return plan

    def _take(self, plan, moved, who, msg: Message, avail: int, free: int, kind: str) -> int:
        """Plan ``msg`` over the lowest wire of ``avail``; returns the wires still free."""
        wire = (avail & -avail).bit_length() - 1
        if self.coverage is not None:
            self._owner[wire] = kind
            self.coverage.hit(f"link/W{wire}", f"N{self._node}")
            self.coverage.hit(f"wire/W{wire}", _HOW[kind])
        plan.append(("wire", wire, msg, who))
        moved.add(who)
        self.hops += 1  # counted when decided, as the coverage counts the wire
        return free & ~(1 << wire)

    def _cover_delivery(self, cover: Coverage, g: int, msg: Message) -> None:
        distance = (relative_address(msg.src // self.procs, g // self.procs)).bit_count()
        cover.hit("deliver", f"P{g}")
        cover.hit("distance", str(distance))
        cover.hit("path", "shortest" if msg.hops == distance else "longer")

    def _cover_contention(self, rel: int, free: int, kind: str) -> None:
        """Count each wire of ``rel`` below the one this message gets (all of them if it gets
        none) as lost to the message that took it earlier in the node's order (covering only)."""
        avail = rel & free
        lost = rel & ~free & ((avail & -avail) - 1 if avail else -1)
        while lost:
            wire = (lost & -lost).bit_length() - 1
            lost &= lost - 1
            self.coverage.hit(f"contend/W{wire}", _CONTENTION[self._owner[wire], kind])

    def _cover_places(self, cover, network, plan, referred, free, slots) -> None:
        """Each network message's fate, why each referral, and whether every place is taken."""
        fates = {who: kind for kind, _, _, who in plan}
        sent_away = {who for who, _ in referred}
        for who, msg in network:
            if fates.get(who) == "rx":
                fate = "delivered"
            elif who in sent_away:
                fate = "referred"
                cover.hit("refer", "blocked" if msg.rel else "at its node")
            elif fates.get(who) == "wire":
                fate = "routed"
            elif fates.get(who) == "slot":
                fate = "buffered"
            else:
                fate = "kept"
            cover.hit("network", fate)
        if referred:
            cover.hit("referrals", str(len(referred)))
        if referred and not free and not slots:
            cover.hit("places", "all taken")


#: The wire a message of each kind takes: which bin of ``wire/W<i>`` it counts in.
_HOW = {"buffer": "route", "arrival": "route", "referral": "refer", "injection": "inject"}
#: ``(winner, loser)`` of a wire: which bin of ``contend/W<i>`` it counts in. Only kinds
#: earlier in the node's order win: buffer slots, arrivals, referrals, then injection heads.
_CONTENTION = {
    ("buffer", "buffer"): "buffer over buffer",
    ("buffer", "arrival"): "buffer over arrival",
    ("arrival", "arrival"): "arrival over arrival",
    ("buffer", "injection"): "network over injection",
    ("arrival", "injection"): "network over injection",
    ("referral", "injection"): "referral over injection",
    ("injection", "injection"): "injection over injection",
}


def _receive_bin(proc: int, room: list, claimed: set, rx: list) -> str:
    """A message at its node against its receive queue (before it is placed)."""
    if proc in claimed:
        return "claimed"
    if not room[proc]:
        return "full"
    return "behind one" if rx[proc] else "into empty"


def traffic(
    pattern: str,
    dim: int,
    procs: int,
    data_bits: int,
    rng: random.Random,
    *,
    messages: int = 1,
) -> list[list[tuple[int, int]]]:
    """Per network processor, a queue of ``(dest, data)`` messages.

    ``random``: ``messages`` random destinations each; ``permutation``: one random
    permutation (one-to-one, ``messages`` rounds of it); ``transpose``, ``bit-reversal``:
    the patterns of :mod:`fattree.spec.traffic` on the ``dim + lg procs``-bit processor
    number (fixed points send nothing); ``hotspot``: ``messages`` each to processor
    :data:`~fattree.spec.traffic.HOT_SPOT` (which sends nothing).
    """
    n = (1 << dim) * procs
    bits = dim + proc_bits(procs)
    queues: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    if pattern == "random":
        for g in range(n):
            queues[g] = [(rng.randrange(n), rng.getrandbits(data_bits)) for _ in range(messages)]
    elif pattern == "permutation":
        for _ in range(messages):
            perm = list(range(n))
            rng.shuffle(perm)
            for g in range(n):
                queues[g].append((perm[g], rng.getrandbits(data_bits)))
    elif pattern in ("transpose", "bit-reversal"):
        for g in range(n):
            d = destination(pattern, g, bits)
            if d != g:
                queues[g] = [(d, rng.getrandbits(data_bits)) for _ in range(messages)]
    elif pattern == "hotspot":
        for g in range(n):
            if g != HOT_SPOT:
                queues[g] = [(HOT_SPOT, rng.getrandbits(data_bits)) for _ in range(messages)]
    else:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    return queues


@dataclass
class RunResult:
    """What :func:`run_model` measured."""

    cycles: int
    messages: int
    referrals: int
    hops: int
    longest: int  # most cycles from a tx beat taken to its rx beat taken
    deliveries: list[Delivery] = field(repr=False, default_factory=list)


def run_model(model: HypercubeModel, queues, *, limit: int = 1_000_000, rx_ready=None) -> RunResult:
    """Run ``queues`` (:func:`traffic`) on ``model`` until every message is taken by its
    receiver; ``rx_ready(cycle)`` gives the receivers' ready list (default: always ready)."""
    driver = Driver(queues)
    total = driver.pending()
    first_delivery = len(model.delivered)
    referrals, hops, start = model.referrals, model.hops, model.cycle
    while len(model.delivered) - first_delivery < total:
        if model.cycle - start >= limit:
            raise RuntimeError(f"not every message delivered in {limit} cycles")
        valid, dest, data = driver.inputs()
        ready = rx_ready(model.cycle) if rx_ready is not None else None
        out = model.step(valid, dest, data, ready)
        driver.taken(out.tx_ready)
    deliveries = model.delivered[first_delivery:]
    return RunResult(
        cycles=model.cycle - start,
        messages=total,
        referrals=model.referrals - referrals,
        hops=model.hops - hops,
        longest=max((d.latency for d in deliveries), default=0),
        deliveries=deliveries,
    )
