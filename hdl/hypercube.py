"""The Connection Machine's hypercube router and network (Stanfill 1987, section 4.2).

:class:`HypercubeNode` is one node: ``procs`` processors' stream ports, ``dim`` wires (full
duplex, one message per wire and direction per cycle), ``buffers`` buffer slots. It does the
paper's five functions every cycle, in a fixed order of the messages it holds: the *network*
messages first (buffer slots in order, oldest first, then the arrivals by wire number), then
the heads of the processors' injection queues (by processor):

1. **deliver**: per processor, the first message whose relative address is all zeros and
   which is for that processor goes into its receive register, if that is empty or being
   read in this cycle;
2. **route**: each network message takes the lowest-numbered free wire whose bit is 1 in its
   relative address (fixed priority: the older message and the lower dimension first);
3. **buffer**: the network messages left keep (or take) the buffer slots, in order;
4. **refer**: those left when the buffer is full each take the lowest-numbered free wire
   (which is a step away: every wire of their relative address was taken). A node holds at
   most ``buffers + dim`` network messages and has ``buffers + dim`` places, so a free wire
   is always there: nothing is ever dropped;
5. **inject**: each injection head takes the lowest free wire of its relative address, else a
   free buffer slot, else waits in its queue. Injection has the lowest priority for every
   resource, so it can never take a place a network message needs.

Store-and-forward of whole messages on parallel links: a link carries one whole message
(valid, relative address, processor, data) per cycle into the neighbour's arrival register.
Sending over wire ``i`` inverts bit ``i`` of the relative address. Timing of a message from
processor ``a`` of node ``s`` to processor ``b`` of the neighbour ``d = s XOR 2^i``
(docs/hypercube.md)::

    cycle          t        t+1          t+2           t+3
    tx[a]          valid,   (queue head)
                   ready
    node s                  route: wire i
    link s->d, i            ----msg----> arrival reg
    node d                               deliver
    rx[b]                                              valid (held until ready)

Every output is a register (``tx.ready`` = the injection queue has room, ``rx`` = the
receive register, ``refer`` = the last cycle's referral count): no output depends on an input
in the same cycle. :class:`HypercubeNetwork` wires ``2^dim`` nodes into the cube.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..spec.hypercube import (
    INJECT_DEPTH,
    check_hypercube,
    link_fields,
    neighbour,
    proc_bits,
    rx_fields,
    tx_fields,
)
from ._validation import validates_parameters

__all__ = ["HypercubeNode", "HypercubeNetwork", "link_layout", "tx_layout", "rx_layout"]


def link_layout(dim: int, procs: int, data_bits: int) -> data.StructLayout:
    """A message on a link or in a register: ``valid``, ``rel``, ``proc``, ``data``."""
    return data.StructLayout(link_fields(dim, procs, data_bits))


def tx_layout(dim: int, procs: int, data_bits: int) -> data.StructLayout:
    """A processor's message to send: ``dest`` (network processor number), ``data``."""
    return data.StructLayout(tx_fields(dim, procs, data_bits))


def rx_layout(data_bits: int) -> data.StructLayout:
    """A message received: its ``data``."""
    return data.StructLayout(rx_fields(data_bits))


def _lowest(bits):
    """One-hot of the lowest set bit of ``bits`` (0 if none)."""
    return (bits & (~bits + 1))[: len(bits)]


def _select(choices, width):
    """AND-OR of one-hot selected ``(value, select)`` pairs: no priority chain of
    multiplexers."""
    out = Const(0, width)
    for value, sel in choices:
        out = out | (value & sel.replicate(width))
    return out


class _ChainSignals:
    """Puts each link of a priority chain in a signal of its own (no expression is copied),
    named after its role and numbered in the order made: ``chain(value, shape, name)``."""

    def __init__(self, m: Module):
        self.m = m
        self.step = 0

    def __call__(self, value, shape, name: str) -> Signal:
        sig = Signal(shape, name=f"{name}{self.step}")
        self.step += 1
        self.m.d.comb += sig.eq(value)
        return sig


class HypercubeNode(wiring.Component):
    """One router node of the hypercube with its processors' stream ports.

    The node's own number is an input port, ``addr``, not a parameter: every node of a
    network is the same circuit, so the network's Verilog holds one node module that each node
    instantiates (:class:`HypercubeNetwork` drives each ``addr`` from a register that holds
    the node's number from reset on).

    Parameters
    ----------
    dim : int
        Dimension of the cube (wires per node), ``1 .. 6``.
    procs : int
        Processors per node, a power of two ``1 .. 16``.
    buffers : int
        Buffer slots, ``0 .. 16``.
    data_bits : int
        Data bits per message, ``1 .. 64``.

    Attributes
    ----------
    addr : In(dim)
        This node's number, ``0 .. 2^dim - 1``; held constant (a message a processor injects
        gets the relative address ``dest node XOR addr``).
    link_in : In(link_layout).array(dim)
        What the neighbour over wire ``i`` sends in this cycle (registered here).
    link_out : Out(link_layout).array(dim)
        What this node sends over wire ``i`` in this cycle.
    tx : In(stream.Signature(tx_layout)).array(procs)
        Per processor, messages to send.
    rx : Out(stream.Signature(rx_layout)).array(procs)
        Per processor, messages received, each held until ``ready``.
    refer : Out(range(dim + 1))
        Messages this node referred in the last cycle.
    """

    @validates_parameters
    def __init__(self, dim=4, procs=1, buffers=2, data_bits=8):
        check_hypercube(dim, procs, buffers, data_bits, model=False)
        self.dim, self.procs = dim, procs
        self.buffers, self.data_bits = buffers, data_bits
        self.link = link_layout(dim, procs, data_bits)
        super().__init__(
            {
                "addr": In(dim),
                "link_in": In(self.link).array(dim),
                "link_out": Out(self.link).array(dim),
                "tx": In(stream.Signature(tx_layout(dim, procs, data_bits))).array(procs),
                "rx": Out(stream.Signature(rx_layout(data_bits))).array(procs),
                "refer": Out(range(dim + 1)),
            }
        )
        # Every place a message can be, made here (not in elaborate) so the proofs
        # (fattree/proofs/hypercube.py) can say that a message is always in exactly one:
        # the arrival registers, the buffer slots, the injection queues, the receive registers.
        link = self.link
        self.arrive = [Signal(link, name=f"arrive{i}") for i in range(dim)]
        self.buf = [Signal(link, name=f"buf{s}") for s in range(buffers)]
        self.queue = [
            [Signal(link, name=f"inj{q}_{e}") for e in range(INJECT_DEPTH)] for q in range(procs)
        ]
        self.rx_valid = [Signal(name=f"rx_valid{q}") for q in range(procs)]
        self.rx_data = [Signal(data_bits, name=f"rx_data{q}") for q in range(procs)]

    def elaborate(self, platform):
        m = Module()
        for i in range(self.dim):
            m.d.sync += self.arrive[i].eq(self.link_in[i])

        # The candidates of this cycle: the buffered and arriving messages, then the heads of
        # the processors' injection queues.
        network = self.buf + self.arrive
        heads = [self.queue[q][0] for q in range(self.procs)]
        cands = network + heads
        chain = _ChainSignals(m)
        delivered = self._deliver(m, chain, cands)
        free = Const((1 << self.dim) - 1, self.dim)  # the outgoing wires still free
        wire = [Const(0, self.dim) for _ in cands]  # per candidate, the wire it leaves on
        free, left = self._route(m, chain, network, delivered, wire, free)
        free, slot, buffered, used = self._buffer_and_refer(m, chain, network, left, wire, free)
        pops = self._inject(m, chain, heads, delivered, wire, free, slot, buffered, used)
        self._next_buffers(m, chain, cands, slot, buffered)
        self._drive_links(m, cands, wire)
        self._shift_queues(m, pops)
        return m

    def _deliver(self, m, chain, cands):
        """1. Deliver: per processor the first candidate for it, if its receive register is
        free. Returns per candidate whether it is delivered in this cycle."""
        pbits = proc_bits(self.procs)
        rx_valid, rx_data = self.rx_valid, self.rx_data
        rx_free = [~rx_valid[q] | self.rx[q].ready for q in range(self.procs)]
        delivered = [Const(0) for _ in cands]
        for q in range(self.procs):
            taken = Const(0)
            hits = []
            for c, msg in enumerate(cands):
                for_q = (msg.proc == q) if pbits else Const(1)
                hit = Signal(name=f"deliver{c}_{q}")
                m.d.comb += hit.eq(msg.valid & (msg.rel == 0) & for_q & rx_free[q] & ~taken)
                taken = chain(taken | hit, 1, "taken")
                delivered[c] = delivered[c] | hit
                hits.append((msg.data, hit))
            with m.If(taken):
                m.d.sync += [rx_valid[q].eq(1), rx_data[q].eq(_select(hits, self.data_bits))]
            with m.Elif(self.rx[q].ready):
                m.d.sync += rx_valid[q].eq(0)
            m.d.comb += [self.rx[q].valid.eq(rx_valid[q]), self.rx[q].payload.data.eq(rx_data[q])]
        return [chain(d, 1, "delivered") for d in delivered]

    def _route(self, m, chain, network, delivered, wire, free):
        """2. Route network messages: the lowest free wire whose bit is 1 (into ``wire``).
        Returns the wires still free and, per network message, whether it found none."""
        dim = self.dim
        left = []
        for c, msg in enumerate(network):
            active = chain(msg.valid & ~delivered[c], 1, "active")
            onehot = Signal(dim, name=f"route{c}")
            m.d.comb += onehot.eq(_lowest(msg.rel & free & active.replicate(dim)))
            wire[c] = onehot
            free = chain(free & ~onehot, dim, "free")
            left.append(chain(active & ~onehot.any(), 1, "left"))
        return free, left

    def _buffer_and_refer(self, m, chain, network, left, wire, free):
        """3. Buffer the messages left over, in order; 4. refer what does not fit over the
        lowest free wires (into ``wire``). Returns the wires still free, per network message
        its buffer rank and whether it is buffered, and the buffer slots used."""
        dim, nbuf = self.dim, self.buffers
        slot = []
        buffered = []
        rank = Const(0)
        referred = []
        for c in range(len(network)):
            slot.append(rank)
            keep = chain(left[c] & (rank < nbuf), 1, "keep") if nbuf else Const(0)
            refer = chain(left[c] & ~keep, 1, "referred")
            buffered.append(keep)
            referred.append(refer)
            onehot = Signal(dim, name=f"refer{c}")
            m.d.comb += onehot.eq(_lowest(free & refer.replicate(dim)))
            wire[c] = wire[c] | onehot
            free = chain(free & ~onehot, dim, "free")
            rank = chain(rank + left[c], range(len(network) + 1), "rank")
        m.d.sync += self.refer.eq(sum(referred[1:], referred[0]) if referred else 0)
        used = Signal(range(nbuf + 1), name="buffered")
        m.d.comb += used.eq(Mux(rank > nbuf, nbuf, rank))
        return free, slot, buffered, used

    def _inject(self, m, chain, heads, delivered, wire, free, slot, buffered, used):
        """5. Inject: a queue's head takes a wire of its relative address (into ``wire``),
        else a free buffer slot (appended to ``slot`` and ``buffered``). Returns per processor
        whether its head leaves the queue."""
        dim, nbuf = self.dim, self.buffers
        first = len(wire) - len(heads)
        count = used
        pops = []
        for q, msg in enumerate(heads):
            c = first + q
            active = chain(msg.valid & ~delivered[c], 1, "active")
            onehot = Signal(dim, name=f"inject{q}")
            m.d.comb += onehot.eq(_lowest(msg.rel & free & active.replicate(dim)))
            wire[c] = onehot
            free = chain(free & ~onehot, dim, "free")
            keep = Const(0)
            if nbuf:
                keep = chain(active & ~onehot.any() & (count < nbuf), 1, "keep")
            slot.append(count)
            buffered.append(keep)
            count = chain(count + keep, range(nbuf + 1), "count")
            pops.append(chain(delivered[c] | onehot.any() | keep, 1, "pop"))
        return pops

    def _next_buffers(self, m, chain, cands, slot, buffered):
        """The next buffer: slot ``s`` takes the candidate buffered at rank ``s``."""
        for s in range(self.buffers):
            chosen = [
                (msg.as_value(), chain(buffered[c] & (slot[c] == s), 1, "slot"))
                for c, msg in enumerate(cands)
            ]
            m.d.sync += self.buf[s].eq(_select(chosen, self.link.size))

    def _drive_links(self, m, cands, wire):
        """Links: the message on wire ``i`` has bit ``i`` of its relative address inverted."""
        link = self.link
        rel_at = link["rel"].offset
        for i in range(self.dim):
            at = rel_at + i
            # The bit inverted, not XORed with a constant: the Verilog export rewrites an XOR
            # with a constant into cells named by a design-wide counter, written in an order
            # that differs from node to node (and nodes would no longer share one module).
            chosen = [
                (Cat(bits[:at], ~bits[at], bits[at + 1 :]), wire[c][i])
                for c, bits in enumerate(msg.as_value() for msg in cands)
            ]
            m.d.comb += self.link_out[i].eq(_select(chosen, link.size))

    def _shift_queues(self, m, pops):
        """Injection queues: the head leaves (``pops``), a new message joins at the first
        free entry."""
        link = self.link
        pbits = proc_bits(self.procs)
        for q in range(self.procs):
            tx = self.tx[q]
            entries = self.queue[q]
            m.d.comb += tx.ready.eq(~entries[-1].valid)
            new = Signal(link, name=f"new{q}")
            dest_node = tx.payload.dest[pbits:]
            m.d.comb += [
                new.valid.eq(1),
                new.rel.eq(dest_node ^ self.addr),
                new.data.eq(tx.payload.data),
            ]
            if pbits:
                m.d.comb += new.proc.eq(tx.payload.dest[:pbits])
            accept = tx.valid & tx.ready
            shifted = []
            for e in range(INJECT_DEPTH):
                nxt = entries[e + 1].as_value() if e + 1 < INJECT_DEPTH else Const(0, link.size)
                sh = Signal(link, name=f"shift{q}_{e}")
                m.d.comb += sh.eq(Mux(pops[q], nxt, entries[e].as_value()))
                shifted.append(sh)
            for e in range(INJECT_DEPTH):
                first_free = ~shifted[e].valid
                if e:
                    first_free = first_free & shifted[e - 1].valid
                with m.If(accept & first_free):
                    m.d.sync += entries[e].eq(new)
                with m.Else():
                    m.d.sync += entries[e].eq(shifted[e])


class HypercubeNetwork(wiring.Component):
    """``2^dim`` nodes (:class:`HypercubeNode`) wired into a ``dim``-cube, with stream ports
    per processor.

    Parameters
    ----------
    dim, procs, buffers, data_bits
        As :class:`HypercubeNode`.

    Attributes
    ----------
    tx : In(stream.Signature(tx_layout)).array(2^dim * procs)
        Per network processor ``g`` (processor ``g mod procs`` of node ``g div procs``),
        messages to send: ``payload.dest`` (a network processor number), ``payload.data``.
    rx : Out(stream.Signature(rx_layout)).array(2^dim * procs)
        Per network processor, messages received, each held until ``ready``.
    refer : Out(range(dim + 1)).array(2^dim)
        Per node, the messages it referred in the last cycle.
    """

    @validates_parameters
    def __init__(self, dim=4, procs=2, buffers=2, data_bits=8):
        check_hypercube(dim, procs, buffers, data_bits, model=False)
        self.dim, self.procs, self.buffers, self.data_bits = dim, procs, buffers, data_bits
        self.nodes = 1 << dim
        self.processors = self.nodes * procs
        n = self.processors
        super().__init__(
            {
                "tx": In(stream.Signature(tx_layout(dim, procs, data_bits))).array(n),
                "rx": Out(stream.Signature(rx_layout(data_bits))).array(n),
                "refer": Out(range(dim + 1)).array(self.nodes),
            }
        )

    def elaborate(self, platform):
        m = Module()
        dim, procs = self.dim, self.procs
        nodes = []
        for n in range(self.nodes):
            node = HypercubeNode(dim, procs, self.buffers, self.data_bits)
            m.submodules[f"node{n}"] = node
            nodes.append(node)
            # The address as a register that keeps its reset value, not a constant: Amaranth
            # carries a constant into the node, which would make every node a Verilog module
            # of its own; synthesis turns the register back into the constant.
            addr = Signal(dim, init=n, name=f"addr{n}")
            m.d.sync += addr.eq(addr)
            m.d.comb += node.addr.eq(addr)
            for q in range(procs):
                g = n * procs + q
                wiring.connect(m, wiring.flipped(self.tx[g]), node.tx[q])
                wiring.connect(m, node.rx[q], wiring.flipped(self.rx[g]))
            m.d.comb += self.refer[n].eq(node.refer)
        for n, node in enumerate(nodes):
            for i in range(dim):
                m.d.comb += node.link_in[i].eq(nodes[neighbour(n, i)].link_out[i])
        return m


def hypercube(dim=4, procs=2, buffers=2, data_bits=8) -> HypercubeNetwork:
    """The command line's ``hypercube`` design."""
    return HypercubeNetwork(dim, procs, buffers, data_bits)
