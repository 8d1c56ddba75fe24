"""The on-line Leiserson fat-tree (Fat-Trees, 1985, section II): switches set in hardware.

Section II describes delivery cycles in which concentrators lose the messages they have no
wire for, acknowledgements go back from destination to source and the sources send again
what was lost; the paper then assumes off-line settings. This design is the on-line tree
(design ``leiserson-online``, docs/leiserson.md "On-line operation"):

* :class:`OnlineStage`: one partial concentrator stage (the verified Pippenger graph of
  :mod:`fattree.spec.concentrator_graph`) whose setting is decided in hardware. In the cycle
  an input's M bit arrives it takes the **first edge whose output is still free** in this
  delivery cycle; inputs whose M bits arrive together choose in input order from the
  stage's first input round (a priority chain whose start, in a cascade's first stage,
  moves on by one input every delivery cycle, so no input is always last). The M bit
  leaves one cycle later, the rest of the message follows; an input that finds no free
  output loses its message. The stage keeps each path until the next ``start`` and carries
  acknowledgements back along it, one register per stage.
* :class:`OnlineNode`: Fig. 3 with those stages, plus a reverse wire for every wire.
* :class:`OnlineTree`: the nodes wired as a tree (no external interface at the root).
* :class:`LeisersonOnline`: the tree with a network interface per leaf: a queue of
  ``queue`` messages (``tx``), its oldest message sent every delivery cycle until it is
  acknowledged; a receive register (``rx``), which acknowledges a message only if it is free
  when the message's last bit arrives (a slow receiver makes the sender try again).

Frame, latencies and the delivery-cycle length are :mod:`fattree.spec.leiserson_online`;
the reference model is :mod:`fattree.sim.models.leiserson_online`.
"""

from __future__ import annotations

from functools import reduce
from operator import or_

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import check_int_range
from ..spec.capacities import PORT_GROUPS, TreeLayout, check_root_capacity
from ..spec.concentrator_graph import BipartiteGraph, Cascade
from ..spec.leiserson_online import (
    LEISERSON_ONLINE,
    check_online_layout,
    cycle_length,
    rx_fields,
    tx_fields,
)
from ._validation import validates_parameters
from .selector import Selector

__all__ = [
    "OnlineStage",
    "OnlineSwitch",
    "OnlineNode",
    "OnlineTree",
    "LeisersonOnline",
    "leiserson_online",
]


def _or(terms):
    return reduce(or_, terms) if terms else Const(0, 1)


class OnlineStage(wiring.Component):
    """One concentrator stage wired as ``graph``, set on-line by a greedy matching.

    Inputs whose M bits arrive in the same cycle choose in turn from the stage's first
    input: with ``rotate``, 0 in the first delivery cycle after reset, then 1, 2, ...,
    ``r - 1``, 0, ... (one further at every ``start``); without, always 0.

    Parameters
    ----------
    graph : BipartiteGraph
        The stage's wiring, ``r`` inputs to ``s`` outputs.
    rotate : bool
        Move the first input on every delivery cycle (a cascade's first stage).

    Attributes
    ----------
    start : In(1)
        Begins a delivery cycle: frees every output, releases every path, arms every input.
    i, o : In(r), Out(s)
        Forward wires (``o`` registered: one cycle).
    back_i, back_o : In(s), Out(r)
        Acknowledgements: from each output's wire back to the input holding it (registered).
    """

    @validates_parameters
    def __init__(self, graph: BipartiteGraph, *, rotate: bool = True):
        if not isinstance(graph, BipartiteGraph):
            raise TypeError(f"graph must be a BipartiteGraph, not {graph!r}")
        if not isinstance(rotate, bool):
            raise TypeError(f"rotate must be a bool, not {rotate!r}")
        self.graph = graph
        self.rotate = rotate and graph.r > 1
        super().__init__(
            {
                "start": In(1),
                "i": In(graph.r),
                "o": Out(graph.s),
                "back_i": In(graph.s),
                "back_o": Out(graph.r),
            }
        )

    def elaborate(self, platform):
        m = Module()
        g = self.graph
        taken = Signal(g.s)  # outputs given to a path in this delivery cycle
        avail = Signal(g.s, name="avail0")
        m.d.comb += avail.eq(Mux(self.start, (1 << g.s) - 1, ~taken))
        # The input that chooses first: r - 1 after reset, so the first delivery cycle's
        # `start` makes it 0; then one further each delivery cycle, so that no input stays
        # behind the others (the paper leaves the order open; a fixed one starves).
        first = Const(0, 1)
        if self.rotate:
            first = Signal(range(g.r), init=g.r - 1)
            with m.If(self.start):
                m.d.sync += first.eq(Mux(first == g.r - 1, 0, first + 1))
        requests = []
        for k in range(g.r):
            wire = self.i[k]
            armed = Signal(name=f"armed{k}")
            armed_now = armed | self.start
            m.d.sync += armed.eq(armed_now & ~wire)
            requests.append(armed_now & wire)  # this input's M bit is here
        # The chain from `first` round to first - 1: inputs first .. r - 1, then 0 .. first - 1.
        grants = [[] for _ in range(g.r)]
        for lap in (0, 1) if self.rotate else (0,):
            for k, row in enumerate(g.adjacency):
                if lap and k == g.r - 1:
                    break  # input r - 1 always comes in the first lap
                in_lap = (k >= first) if lap == 0 else (k < first)
                grant, avail = self._choose(m, row, requests[k] & in_lap, avail, f"{lap}_{k}")
                grants[k].append(grant)
        drivers = [[] for _ in range(g.s)]
        backs = []
        for k, row in enumerate(g.adjacency):
            wire = self.i[k]
            grant = Signal(len(row), name=f"grant{k}")
            m.d.comb += grant.eq(_or(grants[k]))
            route = Signal(len(row), name=f"route{k}")
            m.d.sync += route.eq(Mux(self.start, grant, route | grant))
            for e, j in enumerate(row):
                drivers[j].append((route[e] & ~self.start & wire) | grant[e])
            backs.append(_or([route[e] & self.back_i[j] for e, j in enumerate(row)]))
        m.d.sync += [
            taken.eq(~avail),
            self.o.eq(Cat(_or(d) for d in drivers)),
            self.back_o.eq(Cat(backs)),
        ]
        return m

    def _choose(self, m, row, request, avail, name):
        """One link of the chain: ``request`` takes the first edge of ``row`` whose output is
        in ``avail``; returns the grant per edge and the outputs still free after it."""
        grant = Signal(len(row), name=f"grant{name}")
        found = Const(0, 1)
        for e, j in enumerate(row):
            m.d.comb += grant[e].eq(request & avail[j] & ~found)
            found = found | avail[j]
        nxt = Signal(self.graph.s, name=f"avail{name}")
        m.d.comb += nxt.eq(
            avail
            & ~Cat(
                _or([grant[e] for e, x in enumerate(row) if x == j]) for j in range(self.graph.s)
            )
        )
        return grant, nxt


class OnlineSwitch(wiring.Component):
    """A cascade of :class:`OnlineStage` from ``r`` to ``s`` wires (plain wires if no stage).

    Only the first stage rotates its first input: messages that reach a later stage together
    reached the first together, and arrive on the outputs its rotated order gave them.
    """

    @validates_parameters
    def __init__(self, cascade: Cascade):
        if not isinstance(cascade, Cascade):
            raise TypeError(f"cascade must be a Cascade, not {cascade!r}")
        self.cascade = cascade
        self.stages = [
            OnlineStage(stage.graph, rotate=t == 0) for t, stage in enumerate(cascade.stages)
        ]
        r, s = cascade.r, cascade.s
        super().__init__(
            {"start": In(1), "i": In(r), "o": Out(s), "back_i": In(s), "back_o": Out(r)}
        )

    def elaborate(self, platform):
        m = Module()
        c = self.cascade
        if not self.stages:
            width = min(c.r, c.s)
            m.d.comb += [
                self.o[:width].eq(self.i[:width]),
                self.back_o[:width].eq(self.back_i[:width]),
            ]
            return m
        forward, back = self.i, self.back_o
        for t, stage in enumerate(self.stages):
            m.submodules[f"stage{t}"] = stage
            m.d.comb += [stage.start.eq(self.start), stage.i.eq(forward), back.eq(stage.back_o)]
            forward, back = stage.o, stage.back_i
        m.d.comb += [self.o.eq(forward), back.eq(self.back_i)]
        return m


class OnlineNode(wiring.Component):
    """A fat-tree node (Fig. 3) with on-line switches and a reverse wire per wire.

    ``u_i``/``l_i``/``r_i`` in, ``u_o``/``l_o``/``r_o`` out as :class:`FatTreeNode`;
    ``x_bo`` carries acknowledgements back out along ``x_i``'s wires, ``x_bi`` brings them in
    along ``x_o``'s. Selectors as the off-line node (one per wire, armed by ``start``).
    """

    @validates_parameters
    def __init__(self, layout: TreeLayout, level: int):
        if not isinstance(layout, TreeLayout):
            raise TypeError(f"layout must be a TreeLayout, not {layout!r}")
        check_int_range("level", level, 0, layout.levels - 1)
        self.layout, self.level = layout, level
        up, down = layout.cap(level), layout.cap(level + 1)
        self.switches = {p: OnlineSwitch(layout.cascade(level, p)) for p in "ULR"}
        ports = {"start": In(1)}
        for p, width in (("u", up), ("l", down), ("r", down)):
            ports |= {f"{p}_i": In(width), f"{p}_o": Out(width)}
            ports |= {f"{p}_bi": In(width), f"{p}_bo": Out(width)}
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        layout, level = self.layout, self.level
        branches = {}
        for port in "ULR":
            bundle = getattr(self, f"{port.lower()}_i")
            ones, zeros = [], []
            for w in range(len(bundle)):
                selector = Selector(1)
                m.submodules[f"sel_{port.lower()}{w}"] = selector
                armed = Signal(name=f"armed_{port.lower()}{w}")
                armed_now = armed | self.start
                m.d.sync += armed.eq(armed_now & ~bundle[w])
                m.d.comb += [selector.start.eq(armed_now & bundle[w]), selector.i.eq(bundle[w])]
                ones.append(selector.one)
                zeros.append(selector.zero)
            branches[(port, 1)], branches[(port, 0)] = ones, zeros
        for port, switch in self.switches.items():
            m.submodules[f"switch_{port.lower()}"] = switch
            feed = [bit for group in PORT_GROUPS[port] for bit in branches[group]]
            m.d.comb += [
                switch.start.eq(self.start),
                switch.i.eq(Cat(*feed)),
                getattr(self, f"{port.lower()}_o").eq(switch.o),
                switch.back_i.eq(getattr(self, f"{port.lower()}_bi")),
            ]
        # An input wire's acknowledgement: from whichever of its two branches holds a path.
        for port in "ULR":
            back = getattr(self, f"{port.lower()}_bo")
            for w in range(len(back)):
                terms = [
                    self.switches[out].back_o[layout.group_offset(level, out, port) + w]
                    for out in "ULR"
                    if any(p == port for p, _ in PORT_GROUPS[out])
                ]
                m.d.comb += back[w].eq(_or(terms))
        return m


class OnlineTree(wiring.Component):
    """:class:`OnlineNode` s as a tree of ``layout.leaves`` leaves, one wire per leaf.

    ``send[i]``/``send_back[i]``: leaf i's wire into the tree and the acknowledgements on it;
    ``recv[i]``/``recv_back[i]``: its wire out of the tree and the acknowledgements it sends.
    The root's external channel is not used (its U input and acknowledgements are 0).
    """

    @validates_parameters
    def __init__(self, layout: TreeLayout):
        self.layout = check_online_layout(layout)
        n = self.leaves = layout.leaves
        self.nodes = {v: OnlineNode(layout, v.bit_length() - 1) for v in range(1, n)}
        super().__init__(
            {
                "start": In(1),
                "send": In(1).array(n),
                "send_back": Out(1).array(n),
                "recv": Out(1).array(n),
                "recv_back": In(1).array(n),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.leaves
        for v, node in self.nodes.items():
            m.submodules[f"node{v}"] = node
            m.d.comb += node.start.eq(self.start)
            for child, side in ((2 * v, "l"), (2 * v + 1, "r")):
                i, o = getattr(node, f"{side}_i"), getattr(node, f"{side}_o")
                bi, bo = getattr(node, f"{side}_bi"), getattr(node, f"{side}_bo")
                if child >= n:
                    leaf = child - n
                    m.d.comb += [
                        i.eq(self.send[leaf]),
                        self.send_back[leaf].eq(bo),
                        self.recv[leaf].eq(o),
                        bi.eq(self.recv_back[leaf]),
                    ]
                else:
                    below = self.nodes[child]
                    m.d.comb += [
                        i.eq(below.u_o),
                        below.u_bi.eq(bo),
                        below.u_i.eq(o),
                        bi.eq(below.u_bo),
                    ]
        root = self.nodes[1]
        m.d.comb += [root.u_i.eq(0), root.u_bi.eq(0)]
        return m


class LeisersonOnline(wiring.Component):
    """The on-line fat-tree of ``leaves`` processors with a network interface per leaf.

    Parameters
    ----------
    leaves : int
        Processors, a power of two, 2 .. 256.
    w : int, optional
        Root capacity of the universal fat-tree, ``n^(2/3) <= w <= n`` (default n).
    seed : int
        Seed of the concentrator graphs, at least 0.
    data_bits : int
        Data bits per message, 1 .. 64.
    queue : int
        Messages each sender's queue holds, a power of two, 2 .. 64.

    Attributes
    ----------
    tx : In(stream.Signature(dst, data)).array(leaves)
        Messages to send; ready while the leaf's queue has room. A message to its own leaf
        is taken and dropped, and raises that leaf's ``error`` bit (it has no path).
    rx : Out(stream.Signature(src, data)).array(leaves)
        Messages received, each once, held until ready.
    cycle_start : Out(1)
        High in the first cycle of every delivery cycle.
    error : Out(leaves)
        Per leaf: a message to itself was offered (stays high).
    cycle_length : int
        Cycles per delivery cycle (:func:`fattree.spec.leiserson_online.cycle_length`).
    """

    @validates_parameters
    def __init__(
        self,
        leaves: int,
        *,
        w: int | None = None,
        seed: int = 0,
        data_bits: int = 8,
        queue: int = 4,
    ):
        LEISERSON_ONLINE.check("leaves", leaves)
        w = check_root_capacity(leaves, w) if w else leaves  # None or 0: w = n
        LEISERSON_ONLINE.check("seed", seed)
        self.data_bits = LEISERSON_ONLINE.check("data_bits", data_bits)
        self.queue = LEISERSON_ONLINE.check("queue", queue)
        self.layout = TreeLayout.universal(leaves, w, seed)
        self.leaves = leaves
        self.tree = OnlineTree(self.layout)
        self.cycle_length = cycle_length(self.layout, data_bits)
        self.tx_layout = data.StructLayout(tx_fields(leaves, data_bits))
        self.rx_layout = data.StructLayout(rx_fields(leaves, data_bits))
        super().__init__(
            {
                "tx": In(stream.Signature(self.tx_layout)).array(leaves),
                "rx": Out(stream.Signature(self.rx_layout)).array(leaves),
                "cycle_start": Out(1),
                "error": Out(leaves),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.tree = tree = self.tree
        length = self.cycle_length
        count = Signal(range(length))
        start = Signal()
        last = count == length - 1
        m.d.sync += [count.eq(Mux(last, 0, count + 1)), start.eq(last)]
        m.d.comb += [tree.start.eq(start), self.cycle_start.eq(start)]
        for leaf in range(self.leaves):
            self._sender(m, leaf, start, last)
            self._receiver(m, leaf, start)
        return m

    def _sender(self, m, leaf, start, last):
        """The leaf's queue; every delivery cycle its oldest message goes out (M bit,
        address, source, data from a shift register) until it is acknowledged."""
        h, dbits, q = self.layout.levels, self.data_bits, self.queue
        tx = self.tx[leaf]
        entry = h + dbits
        mem = Array(Signal(entry, name=f"q{leaf}_{k}") for k in range(q))
        head = Signal(range(q), name=f"head{leaf}")
        fill = Signal(range(q + 1), name=f"fill{leaf}")
        in_flight = Signal(name=f"in_flight{leaf}")
        got_ack = Signal(name=f"got_ack{leaf}")
        error = Signal(name=f"error{leaf}")
        m.d.comb += [tx.ready.eq(fill != q), self.error[leaf].eq(error)]
        own = tx.payload.dst == leaf
        push = tx.valid & tx.ready & ~own
        pop = last & in_flight & got_ack
        with m.If(tx.valid & tx.ready & own):
            m.d.sync += error.eq(1)
        tail = Signal(range(q), name=f"tail{leaf}")
        m.d.comb += tail.eq(head + fill)
        with m.If(push):
            m.d.sync += mem[tail].eq(Cat(tx.payload.dst, tx.payload.data))
        m.d.sync += fill.eq(fill + push - pop)
        with m.If(pop):
            m.d.sync += head.eq(head + 1)
        # The frame of the oldest message, first bit at the top (spec frame_bits): one case
        # per height g of the least common ancestor (the highest bit where dst differs).
        width = 1 + (2 * h - 1) + h + dbits
        frame = Signal(width, name=f"frame{leaf}")
        oldest = mem[head]
        dst, payload = oldest[:h], oldest[h:]
        differ = dst ^ leaf
        with m.Switch(differ):
            for g in range(1, h + 1):
                pattern = "0" * (h - g) + "1" + "-" * (g - 1)
                down = [dst[: g - 1]] if g > 1 else []
                ups = [Const((1 << (g - 1)) - 1, g - 1)] if g > 1 else []
                bits = Cat(
                    Const(0, 2 * (h - g)),
                    payload,
                    Const(leaf, h),
                    *down,
                    Const(0, 1),
                    *ups,
                    Const(1, 1),
                )
                with m.Case(pattern):
                    m.d.comb += frame.eq(bits)
        shift = Signal(width, name=f"shift{leaf}")
        with m.If(start):
            m.d.sync += [
                shift.eq(Mux(fill != 0, frame, 0)),
                in_flight.eq(fill != 0),
                got_ack.eq(0),
            ]
        with m.Else():
            m.d.sync += shift.eq(shift << 1)
            with m.If(self.tree.send_back[leaf]):
                m.d.sync += got_ack.eq(1)
        m.d.comb += self.tree.send[leaf].eq(shift[-1])

    def _receiver(self, m, leaf, start):
        """Wait for the M bit, shift in source and data; at the last bit keep the message
        and acknowledge it if the receive register is free, else let it go unacknowledged."""
        h, dbits = self.layout.levels, self.data_bits
        rx = self.rx[leaf]
        bit = self.tree.recv[leaf]
        armed = Signal(name=f"rarmed{leaf}")
        left = Signal(range(h + dbits + 1), name=f"rleft{leaf}")
        shift = Signal(h + dbits, name=f"rshift{leaf}")
        full = Signal(name=f"rfull{leaf}")
        held = Signal(h + dbits, name=f"rheld{leaf}")
        ack = Signal(name=f"ack{leaf}")
        word = Cat(bit, shift[:-1])
        m.d.sync += ack.eq(0)
        with m.If(start):
            m.d.sync += [armed.eq(1), left.eq(0)]
        with m.Elif(armed & bit):
            m.d.sync += [armed.eq(0), left.eq(h + dbits)]
        with m.Elif(left != 0):
            m.d.sync += [shift.eq(word), left.eq(left - 1)]
            with m.If((left == 1) & ~full):
                m.d.sync += [full.eq(1), held.eq(word), ack.eq(1)]
        with m.If(rx.valid & rx.ready):
            m.d.sync += full.eq(0)
        m.d.comb += [
            rx.valid.eq(full),
            rx.payload.data.eq(held[:dbits]),
            rx.payload.src.eq(held[dbits:]),
            self.tree.recv_back[leaf].eq(ack),
        ]


def leiserson_online(
    leaves: int, w: int = 0, seed: int = 0, data_bits: int = 8, queue: int = 4
) -> LeisersonOnline:
    """The command line's ``leiserson-online`` design: universal capacities, ``w = 0`` means n."""
    return LeisersonOnline(leaves, w=w or None, seed=seed, data_bits=data_bits, queue=queue)
