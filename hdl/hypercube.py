"""The Connection Machine's hypercube router and network (Stanfill 1987, section 4.2).

:class:`HypercubeNode` is one node: ``procs`` processors' stream ports, ``dim`` wires (full
duplex, one message per wire and direction per cycle), ``buffers`` buffer slots. It is a
two-stage pipeline: in the **decide** stage it chooses, from the messages' headers alone,
what each message it holds does, and registers the choice as one-hot selects; in the
**send** stage, one cycle later, the selects move the messages (AND-OR of the registered
selects, no priority logic). A message is in the decide stage in its arrival register, its
buffer slot or at the head of its injection queue, and in the send stage in the arrival's
hold register, the same slot or the same queue entry. The decision takes the messages in a
fixed order: the *network* messages first (buffer slots in order, then the arrivals by wire
number), then the injection heads (by processor):

1. **deliver**: per processor, the first message whose relative address is all zeros and
   which is for that processor goes to its receive queue (two entries), if that will have
   room when the message is written;
2. **route**: each network message takes the lowest-numbered free wire whose bit is 1 in its
   relative address (the older message and the lower dimension first);
3. **buffer**: a buffered message that is not sent keeps its slot; an arrival left over
   takes the lowest free slot (free: empty, leaving, or its message sent in this decision);
4. **refer**: the arrivals left when no slot is free each take the lowest-numbered free
   wire (every wire of their relative address was taken). The wires of a decision are the
   next cycle's, all ``dim`` of them, and every slot a sent buffered message frees is free
   again, so the arrivals always find ``dim`` places beside the slots: nothing is dropped;
5. **inject**: each injection head takes the lowest free wire of its relative address, else
   a free slot, else waits in its queue. Injection comes last for every resource.

Store-and-forward of whole messages on parallel links: a link carries one whole message
(valid, relative address, processor, data) per cycle into the neighbour's arrival register.
Sending over wire ``i`` inverts bit ``i`` of the relative address. Timing of a message from
processor ``a`` of node ``s`` to processor ``b`` of the neighbour ``d = s XOR 2^i``
(docs/hypercube.md)::

    cycle     t         t+1          t+2          t+3          t+4          t+5
    tx[a]     valid,
              ready
    node s              decide:      send:
                        wire i       link s->d --> arrival reg
    node d                                        decide:      send: into
                                                  deliver      receive queue
    rx[b]                                                                   valid

Every output is a register (``tx.ready`` = the injection queue has room or its head leaves
in this cycle, ``rx`` = the head of the receive queue, ``refer`` = the referrals of the last
decision): no output depends on an input in the same cycle. :class:`HypercubeNetwork` wires
``2^dim`` nodes into the cube.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..spec.hypercube import (
    INJECT_DEPTH,
    RECEIVE_DEPTH,
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


def _any(bits) -> Value:
    """OR of a list of 1-bit values (0 for none)."""
    return Cat(*bits).any() if bits else Const(0)


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
        Messages the node's last decision referred (they leave in this cycle).
    """

    @validates_parameters
    def __init__(self, dim=4, procs=1, buffers=2, data_bits=8):
        check_hypercube(dim, procs, buffers, data_bits, model=False)
        self.dim, self.procs = dim, procs
        self.buffers, self.data_bits = buffers, data_bits
        self.link = link = link_layout(dim, procs, data_bits)
        super().__init__(
            {
                "addr": In(dim),
                "link_in": In(link).array(dim),
                "link_out": Out(link).array(dim),
                "tx": In(stream.Signature(tx_layout(dim, procs, data_bits))).array(procs),
                "rx": Out(stream.Signature(rx_layout(data_bits))).array(procs),
                "refer": Out(range(dim + 1)),
            }
        )
        # Every place a message can be, made here (not in elaborate) so the proofs
        # (fattree/proofs/hypercube.py) can say that a message is always in exactly one:
        # arrival and hold registers, buffer slots, injection queues, receive queues.
        self.arrive = [Signal(link, name=f"arrive{i}") for i in range(dim)]
        self.hold = [Signal(link, name=f"hold{i}") for i in range(dim)]
        self.buf = [Signal(link, name=f"buf{s}") for s in range(buffers)]
        self.queue = [
            [Signal(link, name=f"inj{q}_{e}") for e in range(INJECT_DEPTH)] for q in range(procs)
        ]
        self.rx_valid = [
            [Signal(name=f"rx_valid{q}_{e}") for e in range(RECEIVE_DEPTH)] for q in range(procs)
        ]
        self.rx_data = [
            [Signal(data_bits, name=f"rx_data{q}_{e}") for e in range(RECEIVE_DEPTH)]
            for q in range(procs)
        ]
        # The registered decision, per candidate (slots, arrivals, heads): the wire it is
        # sent over, the slot it is written into, the receive queue it goes to.
        cands = buffers + dim + procs
        self.wire_sel = [Signal(dim, name=f"wsel{c}") for c in range(cands)]
        self.slot_sel = [Signal(buffers, name=f"bsel{c}") for c in range(cands)]
        self.rx_sel = [Signal(procs, name=f"dsel{c}") for c in range(cands)]
        self.leave = [Signal(name=f"leave{s}") for s in range(buffers)]
        self.pop = [Signal(name=f"pop{q}") for q in range(procs)]

    def elaborate(self, platform):
        m = Module()
        for i in range(self.dim):
            m.d.sync += [self.arrive[i].eq(self.link_in[i]), self.hold[i].eq(self.arrive[i])]
        # Send stage: the messages the last decision chose, where they are now.
        sources = self.buf + self.hold + [self.queue[q][0] for q in range(self.procs)]
        fill = [_any([sel[s] for sel in self.slot_sel]) for s in range(self.buffers)]
        room = self._send(m, sources, fill)
        self._decide(m, fill, room)
        self._shift_queues(m)
        return m

    def _candidates(self, m):
        """The decide stage's messages, as ``(valid, rel, proc)``: the slots not leaving, the
        arrivals, and per processor the first queue entry not leaving."""
        cands = [
            (b.valid & ~gone, b.rel, b.proc) for b, gone in zip(self.buf, self.leave, strict=True)
        ]
        cands += [(a.valid, a.rel, a.proc) for a in self.arrive]
        for q in range(self.procs):
            head = Signal(self.link, name=f"head{q}")
            first, second = self.queue[q][0], self.queue[q][1]
            m.d.comb += head.eq(Mux(self.pop[q], second.as_value(), first.as_value()))
            cands.append((head.valid, head.rel, head.proc))
        return cands

    def _decide(self, m, fill, room):
        """Decide stage: per candidate its wire, slot or receive queue, registered."""
        dim, nbuf = self.dim, self.buffers
        cands = self._candidates(m)
        delivered = self._decide_delivery(m, cands, room)
        free = Const((1 << dim) - 1, dim)  # the next cycle's wires still free
        wire = [Const(0, dim) for _ in cands]
        slot = [Const(0, max(nbuf, 1)) for _ in cands]
        # 2. route the network messages (slots, then arrivals), in order.
        network = nbuf + dim
        for c in range(network):
            valid, rel, _ = cands[c]
            wire[c] = Signal(dim, name=f"route{c}")
            m.d.comb += wire[c].eq(_lowest(rel & free & valid.replicate(dim)))
            free = self._chain(m, free & ~wire[c], f"free{c}")
        # 3. slots free for this decision: not being filled, and empty, leaving, or sent now.
        sent = [wire[s].any() | delivered[s] for s in range(nbuf)]
        alloc = Cat(
            ~fill[s] & (~b.valid | self.leave[s] | (cands[s][0] & sent[s]))
            for s, b in enumerate(self.buf)
        )
        referred = []
        for c in range(nbuf, network):
            left = cands[c][0] & ~wire[c].any() & ~delivered[c]
            if nbuf:
                slot[c] = Signal(nbuf, name=f"slot{c}")
                m.d.comb += slot[c].eq(_lowest(alloc) & left.replicate(nbuf))
                alloc = self._chain(m, alloc & ~slot[c], f"alloc{c}")
                left = left & ~slot[c].any()
            # 4. refer: the lowest free wire.
            referred.append(left)
            refer = Signal(dim, name=f"refer{c}")
            m.d.comb += refer.eq(_lowest(free & left.replicate(dim)))
            wire[c] = wire[c] | refer
            free = self._chain(m, free & ~refer, f"free{c}r")
        m.d.sync += self.refer.eq(sum(referred[1:], referred[0]))
        # 5. inject: a wire of the relative address, else a free slot, else wait.
        for q in range(self.procs):
            c = network + q
            valid, rel, _ = cands[c]
            active = valid & ~delivered[c]
            wire[c] = Signal(dim, name=f"inject{q}")
            m.d.comb += wire[c].eq(_lowest(rel & free & active.replicate(dim)))
            free = self._chain(m, free & ~wire[c], f"free{c}")
            if nbuf:
                slot[c] = Signal(nbuf, name=f"slot{c}")
                m.d.comb += slot[c].eq(_lowest(alloc) & (active & ~wire[c].any()).replicate(nbuf))
                alloc = self._chain(m, alloc & ~slot[c], f"alloc{c}")
            m.d.sync += self.pop[q].eq(delivered[c] | wire[c].any() | slot[c].any())
        for c in range(len(cands)):
            m.d.sync += self.wire_sel[c].eq(wire[c])
            if nbuf:
                m.d.sync += self.slot_sel[c].eq(slot[c])
        for s in range(nbuf):
            m.d.sync += self.leave[s].eq(cands[s][0] & sent[s])

    @staticmethod
    def _chain(m, value, name):
        """A link of a priority chain in a signal of its own (no expression is copied)."""
        sig = Signal(len(value), name=name)
        m.d.comb += sig.eq(value)
        return sig

    def _decide_delivery(self, m, cands, room):
        """1. Deliver: per processor the first candidate for it, if its receive queue has
        room; registered into ``rx_sel``. Returns per candidate whether it is delivered."""
        pbits = proc_bits(self.procs)
        hits = [[] for _ in cands]
        for q in range(self.procs):
            matches = []
            for c, (valid, rel, proc) in enumerate(cands):
                for_q = (proc == q) if pbits else Const(1)
                match = Signal(name=f"at_node{c}_{q}")
                m.d.comb += match.eq(valid & (rel == 0) & for_q)
                hit = Signal(name=f"deliver{c}_{q}")
                m.d.comb += hit.eq(match & room[q] & ~_any(matches))
                matches.append(match)
                hits[c].append(hit)
        for c, hit in enumerate(hits):
            m.d.sync += self.rx_sel[c].eq(Cat(hit))
        return [_any(hit) for hit in hits]

    def _send(self, m, sources, fill):
        """Send stage: links, buffer slots and receive queues from the registered selects.
        Returns per processor whether its receive queue has room for a decision now."""
        link = self.link
        rel_at = link["rel"].offset
        for i in range(self.dim):
            at = rel_at + i
            # The bit inverted, not XORed with a constant: the Verilog export rewrites an XOR
            # with a constant into cells named by a design-wide counter, written in an order
            # that differs from node to node (and nodes would no longer share one module).
            chosen = [
                (Cat(bits[:at], ~bits[at], bits[at + 1 :]), sel[i])
                for bits, sel in zip((s.as_value() for s in sources), self.wire_sel, strict=True)
            ]
            m.d.comb += self.link_out[i].eq(_select(chosen, link.size))
        for s, slot in enumerate(self.buf):
            chosen = [
                (src.as_value(), sel[s]) for src, sel in zip(sources, self.slot_sel, strict=True)
            ]
            with m.If(fill[s]):
                m.d.sync += slot.eq(_select(chosen, link.size))
            with m.Elif(self.leave[s]):
                m.d.sync += slot.valid.eq(0)
        return [self._receive(m, q, sources) for q in range(self.procs)]

    def _receive(self, m, q, sources):
        """Processor ``q``'s receive queue: the head is the rx port; the write of the last
        decision joins behind what is left after a read. Returns whether a decision in this
        cycle may deliver to it (at most one entry taken once this cycle's write is in)."""
        (v0, v1), (d0, d1) = self.rx_valid[q], self.rx_data[q]
        port = self.rx[q]
        m.d.comb += [port.valid.eq(v0), port.payload.data.eq(d0)]
        write = _any([sel[q] for sel in self.rx_sel])
        data = _select(
            [(src.data, sel[q]) for src, sel in zip(sources, self.rx_sel, strict=True)], len(d0)
        )
        read = v0 & port.ready
        after0 = Mux(read, v1, v0)  # entry 0 after the read, before the write
        after1 = v1 & ~read
        with m.If(write & ~after0):
            m.d.sync += [v0.eq(1), d0.eq(data), v1.eq(0)]
        with m.Else():
            m.d.sync += [v0.eq(after0), d0.eq(Mux(read, d1, d0))]
            with m.If(write):
                m.d.sync += [v1.eq(1), d1.eq(data)]
            with m.Else():
                m.d.sync += v1.eq(after1)
        room = Signal(name=f"rx_room{q}")
        m.d.comb += room.eq(~after1 & ~(after0 & write))
        return room

    def _shift_queues(self, m):
        """Injection queues: the head the last decision chose leaves (``pop``), a new message
        joins at the first free entry."""
        link = self.link
        pbits = proc_bits(self.procs)
        for q in range(self.procs):
            tx = self.tx[q]
            entries = self.queue[q]
            # Room: the last entry empty, or the head leaving in this cycle (``pop`` is a
            # register, so ready still depends on no input of this cycle).
            m.d.comb += tx.ready.eq(~entries[-1].valid | self.pop[q])
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
                m.d.comb += sh.eq(Mux(self.pop[q], nxt, entries[e].as_value()))
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
