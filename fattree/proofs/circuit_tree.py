"""Properties of the whole circuit tree (:class:`fattree.hdl.circuit_tree.CircuitFatTree`) with
receive backpressure, for a small tree, from its ports only.

Free inputs: every node's transmit stream (any destination but itself, at any time, ``valid``
kept until taken) and every receive stream's ``ready`` (any stall pattern). Every message
carries its source and destination in its data (assumed: ``data = dest << lg n | src``), so
the receiver can tell where a message came from and where it was meant to go.
"""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.asserts import AnyConst  # not exported by amaranth.hdl in 0.5
from amaranth.hdl import Assume

from .harness import Harness

__all__ = ["harness", "TreeProperties"]

COUNT_BITS = 3  # per-source message counters; compared modulo 2^3


def harness(params: dict, broken: bool) -> TreeProperties:
    return TreeProperties(
        params.get("leaves", 4),
        params.get("retry", "immediate"),
        drain=params.get("drain", 30),
        respond=params.get("respond", response_bound(params.get("leaves", 4))),
        broken=broken,
    )


def response_bound(leaves: int) -> int:
    """Cycles from a message taken (or its last reject) to its sender's ``tx_done`` or
    ``tx_reject``, at most, with every receiver ready: one cycle to PEND, one to the first
    route word on the inject link, the route's round trip to the turn at the top level ``L =
    lg n - 1`` and back (``6L + P + 4`` cycles from the first route word to ``ack``, ``P`` = 1
    word here: docs/circuit_tree.md), and the interface's registered ``tx_done``. With
    immediate retry: the other strategies wait in PEND (for ``go``, or a back-off) first."""
    top = leaves.bit_length() - 2
    return 2 + 6 * top + 1 + 4 + 1


class TreeProperties(Harness):
    def __init__(
        self,
        leaves: int,
        retry: str | int,
        *,
        drain: int = 30,
        respond: int = 14,
        broken: bool = False,
    ):
        super().__init__()
        #: Cycles from a message taken, or its last reject, within which its sender hears
        #: ``tx_done`` or ``tx_reject`` (every receiver ready): the bound of `responds`.
        self.respond = respond
        #: Cycles after the traffic stops (no new offers, every receiver ready) within which
        #: every message taken must be acknowledged: the bound of `drains`.
        self.drain = drain
        #: The cycle the traffic stops: chosen freely, once (``AnyConst``).
        self.stop_at = Signal(6)
        from ..hdl.circuit_tree import CircuitFatTree

        self.leaves = leaves
        self.h = leaves.bit_length() - 1
        # One word per message, wide enough for the source and destination tags.
        self.dut = CircuitFatTree(leaves, 2 * self.h, 1, seed=1, retry=retry)
        self.broken = broken
        d = self.dut
        self.ports = []
        for n in range(leaves):
            self.ports += [d.tx[n].valid, d.tx[n].payload.as_value(), d.rx[n].ready]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        n, h = self.leaves, self.h
        first = self.first_cycle(m)

        # Traffic stops at a free cycle: from then on no new offer (one pending stays until
        # taken, as the stream rules ask) and every receiver is ready (fair receivers).
        # (A cycle counter against a free constant, not a free input: inputs may change
        # between clock edges in sby's multiclock model, a register may not.)
        m.d.comb += self.stop_at.eq(AnyConst(6))
        cycle = Signal(6)
        with m.If(cycle != 63):
            m.d.sync += cycle.eq(cycle + 1)
        stop = Signal()
        m.d.comb += stop.eq(cycle >= self.stop_at)
        stopped_for = Signal(range(self.drain + 1))
        with m.If(stop & (stopped_for != self.drain)):
            m.d.sync += stopped_for.eq(stopped_for + 1)
        taken = [Signal(COUNT_BITS, name=f"taken{s}") for s in range(n)]
        stored = [Signal(COUNT_BITS, name=f"stored{s}") for s in range(n)]
        acked = [Signal(COUNT_BITS, name=f"acked{s}") for s in range(n)]
        misdelivered = []
        for node in range(n):
            tx, rx = dut.tx[node], dut.rx[node]
            dest, data = tx.payload.dest, tx.payload.data
            # The environment: tagged messages, never to oneself, kept until taken.
            self.keeps_offer(m, tx, first)
            m.d.comb += Assume(~tx.valid | ((dest != node) & (data == (dest << h | node))))
            was_offer = Signal(name=f"was_offer{node}")
            m.d.sync += was_offer.eq(tx.valid & ~tx.ready)
            m.d.comb += Assume(~stop | ((~tx.valid | was_offer) & rx.ready))
            with m.If(tx.valid & tx.ready):
                m.d.sync += taken[node].eq(taken[node] + 1)
            with m.If(dut.tx_done[node]):
                m.d.sync += acked[node].eq(acked[node] + 1)
            # A message newly in rx: valid now, and not the one held (and not taken) before.
            was_rx_valid, was_rx_ready = Signal(), Signal()
            m.d.sync += [was_rx_valid.eq(rx.valid), was_rx_ready.eq(rx.ready)]
            new = rx.valid & (first | ~was_rx_valid | was_rx_ready)
            src = rx.payload.data[:h]
            to = rx.payload.data[h : 2 * h]
            misdelivered.append(new & (to != node))
            for s in range(n):
                if s == node:
                    continue
                with m.If(new & (src == s)):
                    m.d.sync += stored[s].eq(stored[s] + 1)
        # Counters can see two deliveries to different nodes from one source in one cycle
        # only if a message were duplicated: the sums above would then count one; the
        # property below (at most one in flight per source) catches it in any case.
        props = {
            "right_destination": [~x for x in misdelivered],
            "exactly_once": [],
            # No deadlock: `drain` cycles after the traffic stops, every message taken has
            # been stored and acknowledged, and no offer is left waiting.
            "drains": [
                (stopped_for != self.drain) | ((taken[s] == acked[s]) & ~dut.tx[s].valid)
                for s in range(n)
            ],
        }
        for s in range(n):
            pending = (taken[s] - stored[s])[:COUNT_BITS]
            unacked = (stored[s] - acked[s])[:COUNT_BITS]
            props["exactly_once"] += [
                # Stored at most once per message taken, and acknowledged only once stored:
                # per source at most one message between taken and stored, or stored and
                # acknowledged, and never more stored than taken.
                (pending == 0) | (pending == 1),
                (unacked == 0) | (unacked == 1),
                ~((pending == 1) & (unacked == 1)),
            ]
        props["responds"] = self._responds(m)
        if self.broken:
            props["right_destination"] = [~x for x in misdelivered] + [
                dut.rx[0].valid == 0  # a wrong contract: nothing is ever delivered to node 0
            ]
        self.emit(m, props)
        return m

    def _responds(self, m) -> list:
        """``responds``: with every receiver ready (assumed while this property is the one
        asserted: receivers that take what they are given), a message taken is answered,
        ``tx_done`` or ``tx_reject``, within ``respond`` cycles, and so is every retry: the
        count restarts at each reject."""
        dut, checks = self.dut, []
        bound = self.respond - 1 if self.broken else self.respond
        for s in range(self.leaves):
            tx = dut.tx[s]
            if self.selected == "responds":
                m.d.comb += Assume(dut.rx[s].ready)
            open_ = Signal(name=f"open{s}")  # taken, not acknowledged yet
            since = Signal(range(self.respond + 2), name=f"since{s}")
            answered = dut.tx_done[s] | dut.tx_reject[s]
            with m.If(tx.valid & tx.ready):
                m.d.sync += [open_.eq(1), since.eq(1)]
            with m.Elif(dut.tx_done[s]):
                m.d.sync += [open_.eq(0), since.eq(0)]
            with m.Elif(dut.tx_reject[s]):
                m.d.sync += since.eq(1)
            with m.Elif(open_ & (since <= self.respond)):
                m.d.sync += since.eq(since + 1)
            # `since` counts the cycles after the message was taken or last rejected; the
            # answer is due by the cycle `respond` after it.
            checks.append(~open_ | answered | (since < bound))
        return checks
