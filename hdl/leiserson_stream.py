"""A Leiserson fat-tree with stream ports: messages in, delivery cycles, messages out.

:class:`LeisersonFatTree` is bit-serial and lockstep: a tree-wide ``start``, one frame per wire
(M bit, header, data), no flow control. This wrapper gives it the stream ports of the rest of
the project (``amaranth.lib.stream``, one beat per whole message):

* ``tx[i]``: the messages leaf i sends in the next delivery cycle, each with the header the
  off-line schedule gave it (:func:`fattree.sim.models.leiserson_schedule.plan_cycle`). The
  k-th message a leaf takes goes out on its wire k. Ready while the leaf has a free wire and no
  delivery cycle is running.
* ``cycle_valid``/``cycle_ready``: a handshake in cycle t starts a delivery cycle in cycle
  t + 1 (the tree's ``start``); every message taken since the last one, up to and including
  cycle t, goes out then. The
  delivery cycle lasts :func:`fattree.spec.leiserson_frames.cycle_length` cycles (every frame
  of any schedule arrives whole within it). No output depends on an input in the same cycle.
* ``rx[i]``: the messages leaf i received, one beat each (data, and the wire it came on),
  lowest wire first; each is held until ``ready``.

Nothing is lost to a slow receiver: ``cycle_ready`` is low while any message of the last
delivery cycle still waits in ``rx``. A wire receives at most one message per delivery cycle,
so one holding register per leaf wire is enough. Timing (docs/leiserson.md, "Stream ports")::

    cycle    t-1    t      t+1    t+2 ..     t+1+lat .. t+1+lat+D   t+2+lat+D ..  t+1+L
    cycle_   ready  valid  -      -          -                       -             ready*
    start                  1
    send[i]                M      h1 h2 ..   .. data ..
    recv[j]                                  M  d(D-1) .. d0
    rx[j]                                                            valid until ready
    (* once no rx holds a message; L = cycle_length, lat = the path's latency)
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..spec.leiserson_frames import (
    LEISERSON_STREAM,
    cycle_length,
    header_bits_bound,
    rx_fields,
    tx_fields,
)
from ._validation import validates_parameters
from .leiserson_tree import LeisersonFatTree

__all__ = ["LeisersonStreamTree", "leiserson_stream_tree", "tx_layout", "rx_layout"]


def tx_layout(header_bits: int, data_bits: int) -> data.StructLayout:
    """A message to send (:func:`fattree.spec.leiserson_frames.tx_fields`): ``header`` holds
    ``header_len`` bits, the first to go out in bit ``header_len - 1``; then ``data``."""
    return data.StructLayout(tx_fields(header_bits, data_bits))


def rx_layout(wires: int, data_bits: int) -> data.StructLayout:
    """A message received: its ``data`` and the leaf ``wire`` it arrived on."""
    return data.StructLayout(rx_fields(wires, data_bits))


class LeisersonStreamTree(wiring.Component):
    """:class:`LeisersonFatTree` of ``leaves`` processors behind stream ports.

    Parameters
    ----------
    leaves, capacities, w, seed
        As :class:`LeisersonFatTree`.
    data_bits : int
        Data bits per message, ``1 .. 64``.

    Attributes
    ----------
    tx : In(stream.Signature(tx_layout(H, D))).array(leaves)
        Per leaf, messages for the next delivery cycle (``H`` = :attr:`header_bits`).
    cycle_valid, cycle_ready : In(1), Out(1)
        A handshake (a stream without payload; plain signals, so the Verilog has no
        zero-width port): each transfer is one delivery cycle.
    rx : Out(stream.Signature(rx_layout(wires, D))).array(leaves)
        Per leaf, messages received.
    tree : LeisersonFatTree
        The network inside (its ``layout`` is the switch plan the scheduler needs).
    header_bits, cycle_length : int
        Longest header of any path; cycles per delivery cycle.
    """

    @validates_parameters
    def __init__(self, leaves: int, capacities=None, *, w=None, seed: int = 0, data_bits=8):
        self.data_bits = LEISERSON_STREAM.check("data_bits", data_bits)
        self.tree = LeisersonFatTree(leaves, capacities, w=w, seed=seed)
        layout = self.layout = self.tree.layout
        self.leaves = leaves
        self.wires = layout.cap(layout.levels)
        self.header_bits = header_bits_bound(layout)
        self.cycle_length = cycle_length(layout, data_bits)
        super().__init__(
            {
                "tx": In(stream.Signature(tx_layout(self.header_bits, data_bits))).array(leaves),
                "cycle_valid": In(1),
                "cycle_ready": Out(1),
                "rx": Out(stream.Signature(rx_layout(self.wires, data_bits))).array(leaves),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.tree = tree = self.tree
        m.d.comb += tree.root_i.eq(0)
        wires, dbits, hbits = self.wires, self.data_bits, self.header_bits

        # Delivery-cycle control: a cycle handshake at t starts the tree's delivery cycle at t + 1
        # (no path from an input to an output); `left` counts the cycles still to run and
        # `running` is a register of its own (it fans out to every sender and receiver).
        left = Signal(range(self.cycle_length + 1))
        running = Signal()
        waiting = Signal()  # a received message not yet taken by its rx stream
        start = Signal()
        handshake = self.cycle_valid & self.cycle_ready
        m.d.comb += self.cycle_ready.eq(~running & ~waiting)
        m.d.sync += start.eq(handshake)
        m.d.comb += tree.start.eq(start)
        with m.If(handshake):
            m.d.sync += [left.eq(self.cycle_length), running.eq(1)]
        with m.Elif(running):
            m.d.sync += left.eq(left - 1)
            with m.If(left == 1):
                m.d.sync += running.eq(0)

        full_bits = []
        for leaf in range(self.leaves):
            self._sender(m, leaf, wires, hbits, dbits, running)
            full_bits += self._receiver(m, leaf, wires, dbits, start)
        m.d.comb += waiting.eq(Cat(full_bits).any())
        return m

    def _sender(self, m, leaf, wires, hbits, dbits, running):
        """Per wire one message, sent bit by bit from the tree's ``start`` on: the M bit, the
        header's ``header_len`` bits picked by a down-counter (no shifter to align a header of
        any length), then the data from a shift register. Every message taken goes to the
        next free wire."""
        tx = self.tx[leaf]
        loaded = Signal(range(wires + 1), name=f"loaded{leaf}")
        m.d.comb += tx.ready.eq(~running & (loaded < wires))
        take = tx.valid & tx.ready
        with m.If(take):
            m.d.sync += loaded.eq(loaded + 1)
        with m.If(running):
            m.d.sync += loaded.eq(0)
        bits = []
        for k in range(wires):
            mark = Signal(name=f"mark{leaf}_{k}")  # the M bit is still to go
            header = Signal(hbits, name=f"header{leaf}_{k}")
            hleft = Signal(range(hbits + 1), name=f"hleft{leaf}_{k}")
            data = Signal(dbits, name=f"data{leaf}_{k}")
            dleft = Signal(range(dbits + 1), name=f"dleft{leaf}_{k}")
            bit = Signal(name=f"bit{leaf}_{k}")
            with m.If(take & (loaded == k)):
                m.d.sync += [
                    mark.eq(1),
                    header.eq(tx.payload.header),
                    hleft.eq(tx.payload.header_len),
                    data.eq(tx.payload.data),
                    dleft.eq(dbits),
                ]
            with m.If(running):
                with m.If(mark):
                    m.d.comb += bit.eq(1)
                    m.d.sync += mark.eq(0)
                with m.Elif(hleft != 0):
                    m.d.comb += bit.eq(header.bit_select((hleft - 1).as_unsigned(), 1))
                    m.d.sync += hleft.eq(hleft - 1)
                with m.Elif(dleft != 0):
                    m.d.comb += bit.eq(data[-1])
                    m.d.sync += [data.eq(data << 1), dleft.eq(dleft - 1)]
            bits.append(bit)
        m.d.comb += self.tree.send[leaf].eq(Cat(bits))

    def _receiver(self, m, leaf, wires, dbits, start):
        """Per wire: wait for the M bit (armed by ``start``), shift in the data bits, hold them
        until the rx stream takes them (no cycle starts before). Returns the full flags."""
        rx = self.rx[leaf]
        recv = self.tree.recv[leaf]
        fulls, held = [], []
        for k in range(wires):
            armed = Signal(name=f"armed{leaf}_{k}")
            count = Signal(range(dbits + 1), name=f"count{leaf}_{k}")  # data bits still due
            shift = Signal(dbits, name=f"shift{leaf}_{k}")
            full = Signal(name=f"full{leaf}_{k}")
            bit = recv[k]
            with m.If(start):
                m.d.sync += [armed.eq(1), count.eq(0)]
            with m.Elif(armed & bit):
                m.d.sync += [armed.eq(0), count.eq(dbits)]
            with m.Elif(count != 0):
                m.d.sync += [shift.eq(Cat(bit, shift[:-1])), count.eq(count - 1)]
                with m.If(count == 1):
                    m.d.sync += full.eq(1)
            fulls.append(full)
            held.append(shift)
        # Lowest full wire first; a beat taken frees its register.
        with m.If(rx.valid & rx.ready):
            for k in range(wires):
                with m.If(rx.payload.wire == k):
                    m.d.sync += fulls[k].eq(0)
        m.d.comb += rx.valid.eq(Cat(fulls).any())
        for k in reversed(range(wires)):
            with m.If(fulls[k]):
                m.d.comb += [rx.payload.data.eq(held[k]), rx.payload.wire.eq(k)]
        return fulls


def leiserson_stream_tree(leaves: int, w: int = 0, seed: int = 0, data_bits: int = 8):
    """The command line's ``leiserson-stream`` design: universal capacities, ``w = 0`` means n."""
    return LeisersonStreamTree(leaves, w=w or None, seed=seed, data_bits=data_bits)
