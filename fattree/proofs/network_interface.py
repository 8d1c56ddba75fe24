"""Properties of :class:`fattree.hdl.network_interface.NetworkInterface`, from its ports only
(docs/circuit_tree.md, "Network interface").

Free inputs: the transmit stream (any message, any time, valid kept until taken, as the
stream rules ask), the receive stream's ``ready``, the eject link (any ``valid`` and data: any
burst a router could send), ``go``. The inject link's ``reject`` and ``ack`` are assumed to
come only while the interface has a transmission in flight (``busy``) and never both at once:
the network answers a circuit attempt, and nothing else.

Read from inside: the receiving side's two flags, ``was_valid`` (the eject link's ``valid`` a
cycle before: a burst is under way) and ``dead`` (the burst was rejected and is ignored), the
state the receive properties speak of (``receive_state``). The interface keeps them to
itself; the harness finds them by name in the elaborated design (:func:`.harness.elaborated`).
"""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.hdl import Assume

from .harness import Harness, elaborated

__all__ = ["harness", "InterfaceProperties"]


def harness(params: dict, broken: bool) -> InterfaceProperties:
    return InterfaceProperties(
        params.get("leaves", 4),
        params.get("width", 1),
        params.get("length", 2),
        params.get("retry", "immediate"),
        broken=broken,
    )


class InterfaceProperties(Harness):
    def __init__(self, leaves, width, length, retry, *, broken=False):
        super().__init__()
        from ..hdl.network_interface import NetworkInterface

        self.dut = NetworkInterface(0, leaves, width, length, retry, seed=1)
        self.broken = broken
        d = self.dut
        self.ports = [
            d.tx.valid,
            d.tx.payload.as_value(),
            d.rx.ready,
            d.down.valid,
            d.down.data,
            d.up.reject,
            d.up.ack,
            d.go,
        ]

    def elaborate(self, platform):
        m = Module()
        dut = self.dut
        m.submodules.dut, inside = elaborated(dut, platform)
        collecting, dead = inside["was_valid"], inside["dead"]
        tx, rx = dut.tx, dut.rx
        first = self.first_cycle(m)
        # The environment: the stream rule for tx, and a network that answers only a
        # transmission in flight.
        self.keeps_offer(m, tx, first)
        m.d.comb += [
            Assume(~(dut.up.ack & dut.up.reject)),
            Assume(~(dut.up.ack | dut.up.reject) | dut.busy),
        ]

        was_busy, was_taken = Signal(), Signal()
        m.d.sync += [was_busy.eq(dut.busy), was_taken.eq(tx.valid & tx.ready)]

        was_rx_valid, was_rx_ready = Signal(), Signal()
        was_rx_data = Signal.like(rx.payload.as_value())
        m.d.sync += [
            was_rx_valid.eq(rx.valid),
            was_rx_ready.eq(rx.ready),
            was_rx_data.eq(rx.payload.as_value()),
        ]
        new_rx = rx.valid & (first | ~was_rx_valid | was_rx_ready)
        was_full = Signal()  # rx held a message not taken in the previous cycle
        m.d.comb += was_full.eq(~first & was_rx_valid & ~was_rx_ready)

        props = {
            # The receiving side's state: a burst is collected (not rejected) only while rx
            # is empty, so its message never lands on one not taken; a rejected burst is
            # ignored until valid falls. Inductive; the receive properties rest on it.
            "receive_state": [
                ~dead | collecting,
                ~(collecting & ~dead) | ~rx.valid,
            ],
            "one_transmission": [
                # A message taken closes the transmit stream until it is acknowledged:
                # tx_done and tx_reject answer a transmission in flight, never both.
                first | ~was_taken | ~tx.ready,
                first | ~dut.tx_done | was_busy,
                first | ~dut.tx_reject | was_busy,
                ~(dut.tx_done & dut.tx_reject),
                ~dut.busy | ~tx.ready,
            ],
            "rx_holds_until_taken": [
                ~was_full | (rx.valid & (rx.payload.as_value() == was_rx_data)),
            ],
            "every_reception_acked_once": [
                # A new message in rx exactly when the ack goes back on the eject link.
                first | (new_rx == dut.down.ack),
                ~(dut.down.ack & dut.down.reject),
            ],
            "reject_only_when_full": [first | ~dut.down.reject | was_full],
        }
        if self.broken:
            # A wrong contract: claims that the interface never rejects. It does (rx full),
            # so the proof must find the counterexample.
            props["reject_only_when_full"] = [~dut.down.reject]
        self.emit(m, props)
        return m
