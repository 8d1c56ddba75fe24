"""Properties of one :class:`fattree.hdl.hypercube.HypercubeNode` (Stanfill 1987, section 4.2;
docs/hypercube.md), for one tagged message among any others.

Free inputs: every incoming link (any message, or none, in any cycle), every processor's
transmit stream (any message at any time), every receive stream's ``ready`` and the node's
own number ``addr`` (any, chosen once: a network drives each node's with a constant). One data
value, chosen freely once (``AnyConst``), tags a message: it may enter (from a processor or
over a link) whenever the node does not hold it, and no other message carries it, so every
output carrying it is that message; the node never looks at the data, so what holds for the
tagged message holds for each. Read from inside: the places a message can be (arrival and
hold registers, buffer slots, injection queues, receive queues).

* **conserved**: while the node holds the tagged message, exactly one place holds it, with
  the address it came with; while it does not, none does; it leaves only from inside, at
  most once (never dropped, never duplicated, never invented);
* **exits_intact**: it leaves over wire ``i`` with bit ``i`` of its relative address
  inverted and the rest of its address unchanged, or into processor ``q``'s receive stream
  only if it is addressed to this node (relative address 0) and to ``q``;
* **referral_only_when_needed**: it leaves over a wire whose bit was 0 (a step away) only
  when every wire of its relative address carries another message in that cycle (the
  wires its decision, one cycle earlier, gave to others) and every buffer slot is full in
  the next (none was free for it).
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Signal
from amaranth.asserts import AnyConst  # not exported by amaranth.hdl in 0.5
from amaranth.hdl import Assume

from ..spec.hypercube import proc_bits
from .harness import Harness

__all__ = ["harness", "NodeProperties"]


def harness(params: dict, broken: bool) -> NodeProperties:
    return NodeProperties(
        params.get("dim", 2),
        params.get("procs", 2),
        params.get("buffers", 1),
        params.get("data_bits", 2),
        broken=broken,
    )


def _count(bits, width):
    total = Const(0, width)
    for b in bits:
        total = total + b
    return total


def _any(bits):
    total = Const(0)
    for b in bits:
        total = total | b
    return total


def _pipeline_consistent(dut) -> list:
    """What the send stage's registers say about the places (part of ``conserved``, so that
    induction starts only from states the pipeline can be in): each message being sent has
    exactly one destination, and only such a message has one; a wire, a slot, a receive
    queue entry is given to at most one message; a slot is written only when its message
    leaves or it is empty; a receive queue written has room; queues fill from the front; a
    receive queue is chosen only for a message addressed to it; only arrivals are referred,
    and only with every wire of their address taken and every slot kept full."""
    nbuf, dim, procs = dut.buffers, dut.dim, dut.procs
    sending = [b.valid & leave for b, leave in zip(dut.buf, dut.leave, strict=True)]
    sending += [h.valid for h in dut.hold]
    sending += [q[0].valid & pop for q, pop in zip(dut.queue, dut.pop, strict=True)]
    facts = []
    for c, (wire, slot, rx) in enumerate(zip(dut.wire_sel, dut.slot_sel, dut.rx_sel, strict=True)):
        chosen = _count([*wire, *slot, *rx], range(dim + nbuf + procs + 1))
        facts.append(chosen == sending[c].as_unsigned())
        if c < nbuf:
            facts.append(slot == 0)  # a buffered message is never written into a slot
    for s in range(nbuf):
        facts.append(~dut.leave[s] | dut.buf[s].valid)
    # A receive queue is chosen only for a message addressed to this node and that processor.
    pbits = proc_bits(procs)
    candidates = [*dut.buf, *dut.hold, *(q[0] for q in dut.queue)]
    for msg, rx in zip(candidates, dut.rx_sel, strict=True):
        for q in range(procs):
            right = (msg.rel == 0) & ((msg.proc == q) if pbits else Const(1))
            facts.append(~rx[q] | right)
    # Only the arrivals are referred: a slot's or a processor's message takes a wire of its
    # relative address.
    for c, msg in enumerate(candidates):
        if nbuf <= c < nbuf + dim:
            continue
        facts.append((dut.wire_sel[c] & ~msg.rel) == 0)
    # An arrival is referred only when every wire of its address is taken and every slot
    # stays full (held and not leaving, or filled by this decision).
    taken = Cat(_any(w[i] for w in dut.wire_sel) for i in range(dim))
    kept = [
        (b.valid & ~leave) | _any(sel[s] for sel in dut.slot_sel)
        for s, (b, leave) in enumerate(zip(dut.buf, dut.leave, strict=True))
    ]
    for c in range(nbuf, nbuf + dim):
        msg = candidates[c]
        referred = (dut.wire_sel[c] & ~msg.rel).any()
        facts.append(~referred | ((msg.rel & ~taken) == 0))
        for full in kept:
            facts.append(~referred | full)
    for q in range(procs):
        facts.append(~dut.pop[q] | dut.queue[q][0].valid)
        facts.append(~dut.queue[q][1].valid | dut.queue[q][0].valid)
        facts.append(~dut.rx_valid[q][1] | dut.rx_valid[q][0])
    for i in range(dim):
        facts.append(_count([w[i] for w in dut.wire_sel], range(3)) <= 1)
    for s in range(nbuf):
        facts.append(_count([b[s] for b in dut.slot_sel], range(3)) <= 1)
        filled = Cat(b[s] for b in dut.slot_sel).any()
        facts.append(~filled | ~dut.buf[s].valid | dut.leave[s])
    for q in range(procs):
        written = Cat(r[q] for r in dut.rx_sel)
        facts.append(_count(list(written), range(3)) <= 1)
        facts.append(~written.any() | ~dut.rx_valid[q][1])
    return facts


class NodeProperties(Harness):
    def __init__(self, dim, procs, buffers, data_bits, *, broken=False):
        super().__init__()
        from ..hdl.hypercube import HypercubeNode

        self.dut = HypercubeNode(dim, procs, buffers, data_bits)
        self.broken = broken
        d = self.dut
        self.ports = [d.link_in[i].as_value() for i in range(dim)]
        for q in range(procs):
            self.ports += [d.tx[q].valid, d.tx[q].payload.as_value(), d.rx[q].ready]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        dim, procs = dut.dim, dut.procs
        pbits = proc_bits(procs)
        first = self.first_cycle(m)
        tag = Signal(dut.data_bits)
        m.d.comb += tag.eq(AnyConst(dut.data_bits))
        # The node's own number: any, held for the whole run (a network drives a constant).
        m.d.comb += dut.addr.eq(AnyConst(dim))

        def proc_of(msg):
            return msg.proc if pbits else Const(0, 1)

        # Entries: from processor q's stream (taken), or over wire i.
        entries = []  # (enters, rel, proc)
        for q in range(procs):
            tx = dut.tx[q]
            dest = tx.payload.dest
            node = dest[pbits:]
            entries.append(
                (
                    tx.valid & tx.ready & (tx.payload.data == tag),
                    node ^ dut.addr,
                    dest[:pbits] if pbits else Const(0, 1),
                )
            )
        for i in range(dim):
            msg = dut.link_in[i]
            entries.append((msg.valid & (msg.data == tag), msg.rel, proc_of(msg)))
        inside = Signal()
        rel = Signal(dim)
        proc = Signal(max(pbits, 1))
        entering = _count([e for e, _, _ in entries], range(len(entries) + 1))
        m.d.comb += Assume(entering <= (~inside).as_unsigned())
        for enters, r, p in entries:
            with m.If(enters):
                m.d.sync += [rel.eq(r), proc.eq(p)]

        # Exits: over wire i, or taken from processor q's receive register.
        wire_exit = [dut.link_out[i].valid & (dut.link_out[i].data == tag) for i in range(dim)]
        rx_exit = [
            dut.rx[q].valid & dut.rx[q].ready & (dut.rx[q].payload.data == tag)
            for q in range(procs)
        ]
        exits = _count(wire_exit + rx_exit, range(dim + procs + 1))
        m.d.sync += inside.eq((inside & (exits == 0)) | (entering != 0))

        holders, same_address = _tag_places(dut, tag, rel, proc, proc_of)

        conserved = [
            holders == inside,
            same_address,
            exits <= inside.as_unsigned(),
            *_pipeline_consistent(dut),
            # Nothing leaves in the first cycle: the send stage starts empty.
            *(~first | ~dut.link_out[i].valid for i in range(dim)),
        ]

        intact = []
        for i in range(dim):
            out = dut.link_out[i]
            intact.append(~wire_exit[i] | ((out.rel == (rel ^ (1 << i))) & (proc_of(out) == proc)))
        for q in range(procs):
            wrong = (rel != 0) | (proc != q)
            if self.broken:  # a wrong contract: the tagged message is never delivered
                wrong = Const(1)
            intact.append(~rx_exit[q] | ~wrong)

        # A referral: out over wire i with bit i of the address 0.
        referral = Const(0)
        for i in range(dim):
            referral = referral | (wire_exit[i] & ~rel[i])
        all_wires_busy = Const(1)
        for i in range(dim):
            all_wires_busy = all_wires_busy & (~rel[i] | dut.link_out[i].valid)
        was_referral = Signal()
        m.d.sync += was_referral.eq(referral)
        buffers_full = Const(1)
        for slot in dut.buf:
            buffers_full = buffers_full & slot.valid
        referrals = [~referral | all_wires_busy, first | ~was_referral | buffers_full]

        self.emit(
            m,
            {
                "conserved": conserved,
                "exits_intact": intact,
                "referral_only_when_needed": referrals,
            },
        )
        return m


def _tag_places(dut, tag, rel, proc, proc_of):
    """How many of the node's places hold the tagged message, and whether each that does
    holds it with the recorded address (every register a message can sit in: arrivals, the
    send stage's holds, buffer slots, injection and receive queues)."""
    places = []  # (holds the tag, its address matches the record)
    for msg in dut.arrive + dut.hold + dut.buf + [e for q in dut.queue for e in q]:
        places.append((msg.valid & (msg.data == tag), (msg.rel == rel) & (proc_of(msg) == proc)))
    for q in range(dut.procs):
        for valid, data in zip(dut.rx_valid[q], dut.rx_data[q], strict=True):
            places.append((valid & (data == tag), (rel == 0) & (proc == q)))
    holders = _count([h for h, _ in places], range(len(places) + 1))
    same_address = Const(1)
    for holds, matches in places:
        same_address = same_address & (~holds | matches)
    return holders, same_address
