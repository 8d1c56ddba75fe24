"""Properties of the whole fast circuit tree
(:class:`fattree.hdl.circuit_fast.tree.CircuitFastTree`) for a small tree, from its ports only.

Free inputs: every node's transmit stream (any destination, itself too, any time, ``valid``
kept until taken) and every receive stream's ``ready`` (any stall pattern). Each message
carries a tag in the low bits of its data (assumed): its source (``lg n`` bits), then a one-bit
sequence number; the other data bits are free.

One message is followed: the next one taken with a tag chosen freely once (``AnyConst``), which
its source does not offer again while that one is undelivered (its other messages carry the
other sequence number). The harness records its destination and data when it is taken; every
delivery of that tag must be it. The tag is any tag, and the hardware never reads the data (it
only carries it), so this covers every message. Counts per source (taken, delivered, ``tx_done``
pulses) check the acknowledgements and the window.
"""

from __future__ import annotations

from amaranth import Const, Module, Signal
from amaranth.asserts import AnyConst  # not exported by amaranth.hdl in 0.5
from amaranth.hdl import Assume

from ..spec.circuit_fast import fate_delay
from .harness import Harness, at_most_one, elaborated

__all__ = ["harness", "FastTreeProperties"]

COUNT_BITS = 4  # per-source counts of messages taken, delivered and acknowledged, modulo 16


def harness(params: dict, broken: bool) -> FastTreeProperties:
    return FastTreeProperties(
        params.get("leaves", 4),
        params.get("width", 2),
        params.get("length", 2),
        params.get("window", 1),
        drain=params.get("drain", 80),
        respond=params.get("respond"),
        broken=broken,
    )


class FastTreeProperties(Harness):
    def __init__(self, leaves, width, length, window, *, drain=80, respond=None, broken=False):
        super().__init__()
        from ..hdl.circuit_fast.tree import CircuitFastTree

        self.n, self.h, self.window = leaves, leaves.bit_length() - 1, window
        self.bits = width * length
        if self.bits < self.h + 1:
            raise ValueError(
                f"width * length must hold the tag (source and sequence number: "
                f"{self.h + 1} bits), not {self.bits}"
            )
        #: Cycles after the traffic stops within which every message taken is delivered and
        #: acknowledged: the bound of `drains`.
        self.drain = drain
        #: Cycles from a message taken, or the last answer to its source, within which the
        #: source hears ``tx_done`` or ``tx_reject`` (whatever the receivers do): the bound
        #: of `responds`. By default ``F + 2`` (window 1: a head the cycle after the message is
        #: taken or its slot is READY again, its fate ``F`` cycles later, the pulse one later).
        self.respond = fate_delay(self.h) + 2 if respond is None else respond
        self.dut = CircuitFastTree(leaves, width, length, seed=1, window=window)
        self.broken = broken
        d = self.dut
        self.stop = Signal()  # free: the traffic stops from the first cycle it is high
        self.ports = [self.stop]
        for node in range(leaves):
            self.ports += [d.tx[node].valid, d.tx[node].payload.as_value(), d.rx[node].ready]

    def tag(self, data):
        """A message's tag: its source and sequence number, the low data bits."""
        return data[: self.h + 1]

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        # Elaborated here so that `attempts_in_flight` can read the interfaces' slot and fate
        # registers (the hardware unchanged).
        m.submodules.dut, self.inside = elaborated(dut, platform)
        n = self.n
        first = self.first_cycle(m)
        # The followed message: its tag, and while it is undelivered (taken, not delivered
        # yet) its destination and data as taken.
        followed = Signal(self.h + 1)
        m.d.comb += followed.eq(AnyConst(self.h + 1))
        pending = Signal()
        dest, data = Signal(self.h), Signal(self.bits)
        since = self._traffic(m, first, followed, pending, dest, data)

        deliveries = []  # per node: (new message in rx, its tag)
        right, once = [], []
        for node in range(n):
            rx = dut.rx[node]
            got = rx.payload.data
            was_valid, was_ready = Signal(name=f"was_valid{node}"), Signal(name=f"was_ready{node}")
            was_got = Signal.like(got, name=f"was_got{node}")
            m.d.sync += [was_valid.eq(rx.valid), was_ready.eq(rx.ready), was_got.eq(got)]
            new = rx.valid & (first | ~was_valid | was_ready)
            deliveries.append((new, self.tag(got)))
            it = new & (self.tag(got) == followed)
            right += [
                ~it | ((dest == node) & (data == got)),
                # Presented until taken, unchanged.
                first | ~was_valid | was_ready | (rx.valid & (got == was_got)),
            ]
            once.append(~it | pending)
        # Not presented at two nodes in one cycle either.
        hits = [new & (tag == followed) for new, tag in deliveries]
        once += [~(hits[a] & hits[b]) for a in range(n) for b in range(a + 1, n)]
        delivered_now = hits[0]
        for hit in hits[1:]:
            delivered_now = delivered_now | hit
        with m.If(delivered_now):
            m.d.sync += pending.eq(0)
        if self.broken:
            # A wrong contract: no message is ever in flight (delivered as it is taken).
            m.d.sync += pending.eq(0)

        props = {"right_destination": right, "delivered_once": once}
        # The counts (and the stop, in _traffic) only where a property reads them: the solver
        # is faster without them.
        if self.selected in (None, "acked_iff_delivered", "drains"):
            props["acked_iff_delivered"] = self._acks(m, deliveries)
            props["drains"] = self._drains(since)
        if self.selected in (None, "responds", "attempts_in_flight"):
            props["responds"], props["attempts_in_flight"] = self._responds(m)
        if self.broken:
            # A wrong contract: every message is for node 0.
            props["right_destination"] = [~new for new, _ in deliveries[1:]]
        self.emit(m, props)
        return m

    def _traffic(self, m, first, followed, pending, dest, data):
        """The environment: tagged messages kept until taken; the followed one recorded
        when taken; after the free ``stop`` input is first high, no new offer and every
        receiver ready. Returns the cycles since the traffic stopped (up to ``drain``)."""
        dut = self.dut
        stopped = Signal()
        m.d.sync += stopped.eq(stopped | self.stop)
        stop = stopped | self.stop
        self.taken = []
        for node in range(self.n):
            tx, rx = dut.tx[node], dut.rx[node]
            tag = self.tag(tx.payload.data)
            self.keeps_offer(m, tx, first)
            m.d.comb += Assume(~tx.valid | (tag[: self.h] == node))
            m.d.comb += Assume(~(tx.valid & (tag == followed) & pending))
            if self.selected in (None, "drains"):
                was_offer = Signal(name=f"was_offer{node}")
                m.d.sync += was_offer.eq(tx.valid & ~tx.ready)
                m.d.comb += Assume(~stop | ((~tx.valid | was_offer) & rx.ready))
            taken = tx.valid & tx.ready
            self.taken.append(taken)
            with m.If(taken & (tag == followed)):
                m.d.sync += [pending.eq(1), dest.eq(tx.payload.dest), data.eq(tx.payload.data)]
        since = Signal(range(self.drain + 1))
        with m.If(stop & (since != self.drain)):
            m.d.sync += since.eq(since + 1)
        return since

    def _counters(self, m, deliveries):
        """Per source: messages taken, deliveries and ``tx_done`` pulses before this cycle,
        and deliveries before cycle ``t - F + 1``."""
        taken, delivered, done, old = [], [], [], []
        for s in range(self.n):
            t = Signal(COUNT_BITS, name=f"taken{s}")
            d = Signal(COUNT_BITS, name=f"delivered{s}")
            a = Signal(COUNT_BITS, name=f"acked{s}")
            now = sum((new & (tag[: self.h] == s)) for new, tag in deliveries)
            m.d.sync += [
                t.eq(t + self.taken[s]),
                d.eq(d + now),
                a.eq(a + self.dut.tx_done[s]),
            ]
            line = d
            for k in range(fate_delay(self.h) - 1):
                stage = Signal(COUNT_BITS, name=f"delivered{s}_d{k + 1}")
                m.d.sync += stage.eq(line)
                line = stage
            taken.append(t)
            delivered.append(d)
            done.append(a)
            old.append(line)
        return taken, delivered, done, old

    def _acks(self, m, deliveries):
        """``acked_iff_delivered``: per source, no more deliveries than messages taken,
        ``tx_done`` never ahead of the deliveries and catching up with each within ``F``
        cycles (the longest lag: one word between the two nodes of a level-0 router); a slot
        is free exactly when fewer than ``window`` messages are unacknowledged."""
        self.counts = taken, delivered, done, old = self._counters(m, deliveries)
        checks = []
        for s in range(self.n):
            # tx_done pulses up to this cycle (the slot is FREE in the cycle of the pulse).
            done_now = done[s] + self.dut.tx_done[s]
            caught_up = (done_now - old[s])[:COUNT_BITS]
            if self.broken:
                # A wrong contract: acknowledged in the cycle of the delivery.
                caught_up = (done_now - delivered[s])[:COUNT_BITS]
            in_use = (taken[s] - done_now)[:COUNT_BITS]
            checks += [
                (taken[s] - delivered[s])[:COUNT_BITS] <= self.window,
                (delivered[s] - done[s])[:COUNT_BITS] <= self.window,
                ~caught_up[COUNT_BITS - 1],  # not negative
                self.dut.tx[s].ready == (in_use < self.window),
            ]
        return checks

    def _drains(self, since):
        """``drains``: ``drain`` cycles after the traffic stops, every message taken has been
        delivered and acknowledged, and no offer waits."""
        taken, delivered, done, _ = self.counts
        bound = 1 if self.broken else self.drain  # a wrong contract: drained at once
        return [
            (since != bound)
            | ((taken[s] == delivered[s]) & (delivered[s] == done[s]) & ~self.dut.tx[s].valid)
            for s in range(self.n)
        ]

    def _responds(self, m) -> tuple[list, list]:
        """``responds``: a source with messages taken and not yet acknowledged hears
        ``tx_done`` or ``tx_reject`` within ``respond`` cycles of the message taken or of its
        last answer, whatever the receivers do (a full one drops the head: fate 0).

        ``attempts_in_flight``, the invariant it rests on: the harness's count of unanswered
        messages is the interface's used slots (plus a ``tx_done`` pulse, which frees its slot
        an edge early); with window 1, a SENT slot has exactly one attempt on its way, on the
        inject link or in the fate line, at the stage ``since`` says, and no attempt is on its
        way otherwise."""
        dut, responds, invariant = self.dut, [], []
        F = fate_delay(self.h)
        bound = self.respond - 1 if self.broken else self.respond
        for s in range(self.n):
            tx = dut.tx[s]
            unanswered = Signal(range(self.window + 2), name=f"unanswered{s}")
            since = Signal(range(self.respond + 2), name=f"since{s}")
            taken = tx.valid & tx.ready
            answered = dut.tx_done[s] | dut.tx_reject[s]
            m.d.sync += unanswered.eq(unanswered + taken - dut.tx_done[s])
            with m.If(taken | answered):
                m.d.sync += since.eq(1)
            with m.Elif((unanswered != 0) & (since <= self.respond)):
                m.d.sync += since.eq(since + 1)
            # `since` counts the cycles after the last take or answer; one is due by `bound`.
            responds.append((unanswered == 0) | answered | (since < bound))
            used = self.inside[f"ni{s}.used"]
            ready = self.inside[f"ni{s}.ready"]
            invariant.append(unanswered == sum(used) + dut.tx_done[s])
            if self.window != 1:
                continue
            # The attempt's stages: its head on the inject link (since = 1), then fate line
            # stage k (since = k + 1); its fate meets the ack at stage F.
            stages = [self.inside[f"ni{s}.up__head"]]
            stages += [self.inside[f"ni{s}.fate{k}"][0] for k in range(1, F + 1)]
            flying = Const(0)
            for stage in stages:
                flying = flying | stage
            sent = used[0] & ~ready[0]
            invariant += [
                ~sent | flying,
                at_most_one(stages),
                sent | ~flying,
                ~ready[0] | used[0],
                ~dut.tx_reject[s] | ready[0],
                ~dut.tx_done[s] | ~used[0],
            ]
            # A wrong contract for --broken: each stage one cycle later than it is (only where
            # it is the property asserted: assumed, a false invariant would hide the others').
            late = 1 if self.broken and self.selected == "attempts_in_flight" else 0
            invariant += [~stage | (since == k + 1 + late) for k, stage in enumerate(stages)]
        return responds, invariant
