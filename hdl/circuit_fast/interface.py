"""The network interface of one node of the fast circuit tree (:mod:`fattree.spec.circuit_fast`,
"Interface": slots, send, fate, receive).

Sending: ``window`` slots hold the messages taken from ``tx`` with two state bits, *used* (not
FREE) and *ready* (READY; used and not ready is SENT). The messages are memories read at once
(distributed RAM on an FPGA, not flip-flops and multiplexers), one per word, ``dest`` beside
word 0, written when taken: word 0 is read at the slot about to be picked, the later words at
the last slot picked, and ``dest`` stays on the link while its message passes. When the inject
link is idle the next READY slot after the last one picked goes out, or, with none READY, the
message being taken (from the ``tx`` payload itself, as its slot is written at the same
edge). A slot is read only after it took a message, so the memories need no reset. The slot
of every attempt travels down a shift register of ``F`` stages beside the inject link, and
meets the link's ``ack`` at ``t0 + F``: its fate.

Receiving: the message register is both the store and the collection buffer (a message is
collected only while nothing is stored), so the cut-through payload is that register with its
last word straight from the eject link.
"""

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...spec.circuit_fast import CIRCUIT_TREE_FAST, fate_delay
from .._validation import validates_parameters
from ..network_interface import rx_signature, tx_signature
from .router import link_signature

__all__ = ["CircuitFastInterface"]


class CircuitFastInterface(wiring.Component):
    """Send and receive for one node of a fast circuit tree of ``leaves`` nodes.

    Parameters
    ----------
    leaves, width, length, window : int
        As :data:`~fattree.spec.circuit_fast.CIRCUIT_TREE_FAST` says.

    Attributes
    ----------
    up : Out(link_signature(leaves, width))
        The inject link, to the leaf router.
    down : In(link_signature(leaves, width))
        The eject link, from the leaf router.
    tx : In(tx_signature(leaves, width, length))
        Messages to send (``payload.dest``, ``payload.data``).
    rx : Out(rx_signature(width, length))
        Messages received (``payload.data``), each presented until taken.
    tx_done, tx_reject : Out(1)
        One-cycle pulses: an attempt's fate was 1 (delivered), or 0 (it will be sent again).
    """

    @validates_parameters
    def __init__(self, leaves=4, width=8, length=2, window=8):
        self.leaves = CIRCUIT_TREE_FAST.check("leaves", leaves)
        self.width = CIRCUIT_TREE_FAST.check("width", width)
        self.length = CIRCUIT_TREE_FAST.check("length", length)
        self.window = CIRCUIT_TREE_FAST.check("window", window)
        self.h = leaves.bit_length() - 1
        link = link_signature(leaves, width)
        super().__init__(
            {
                "up": Out(link),
                "down": In(link),
                "tx": In(tx_signature(leaves, width, length)),
                "rx": Out(rx_signature(width, length)),
                "tx_done": Out(1),
                "tx_reject": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        W = self.window
        used = Signal(W)  # the slot is READY or SENT
        ready = Signal(W)  # the slot is READY
        m.d.comb += self.tx.ready.eq(~used.all())
        taken = Signal()
        m.d.comb += taken.eq(self.tx.valid & self.tx.ready)
        # The FREE slot of lowest index takes the offered message.
        free = _first(~used)
        take = Signal(W)
        m.d.comb += take.eq(free & taken.replicate(W))
        bypass, pick, last = self._send(m, ready, free, taken)
        fate_ready, fate_free = self._fate(m, last)
        # State bits as gates: the three events of a cycle touch three different slots.
        m.d.sync += [
            used.eq((used & ~fate_free) | take),
            ready.eq((ready & ~pick) | (take & ~bypass.replicate(W)) | fate_ready),
        ]
        self._receive(m)
        return m

    def _slots(self, m, free, taken):
        """The slots' messages as memories, one per word (``dest`` beside word 0), written at
        the FREE slot of lowest index when a message is taken; returns their read ports
        (read at once: a word is read only from a slot that took its message)."""
        P, width, W = self.length, self.width, self.window
        # A signal, not an expression: Amaranth would copy an expression into every reader
        # (each word's memory), and the Verilog of long messages grows by tens of megabytes.
        index = Signal(range(W))
        m.d.comb += index.eq(_index(free))
        ports = []
        for k in range(P):
            size = width + (self.h if k == 0 else 0)
            mem = Memory(shape=size, depth=W, init=[])
            m.submodules[f"word{k}"] = mem
            write = mem.write_port()
            value = self.tx.payload.data[k * width : (k + 1) * width]
            if k == 0:
                value = Cat(value, self.tx.payload.dest)
            m.d.comb += [write.addr.eq(index), write.data.eq(value), write.en.eq(taken)]
            ports.append(mem.read_port(domain="comb"))
        return ports

    def _send(self, m, ready, free, taken):
        """The inject link's registers and the slot it sends from; returns ``bypass`` (the
        message taken now goes out at once), ``pick`` (the READY slot that goes out) and
        ``last`` (the last slot picked, one-hot)."""
        W, P, width, up = self.window, self.length, self.width, self.up
        ports = self._slots(m, free, taken)
        # Which word is on the link: on[k] for word k (on[0] is the head).
        on = [up.head] + [Signal(name=f"word{k}") for k in range(1, P)]
        for k in range(1, P):
            m.d.sync += on[k].eq(on[k - 1])
        idle = Signal()  # no word, or the last one, on the link
        m.d.comb += idle.eq(~_any(on[: P - 1]))
        # The last slot picked, one-hot; all zeros after reset, so that slot 0 comes first.
        last = Signal(W)
        after = Signal(W)  # the slots after the last one picked, in index order
        m.d.comb += after.eq(Cat(_any(last[:s]) for s in range(W)))
        rotated = Signal(W)  # READY slots after the last one picked
        m.d.comb += rotated.eq(ready & after)
        wrap = ~rotated.any()  # none: the first READY slot from slot 0
        first = Signal(W)  # the READY slot to go out if the link is idle
        m.d.comb += first.eq(_first(rotated) | (_first(ready) & wrap.replicate(W)))
        pick = Signal(W)
        m.d.comb += pick.eq(first & idle.replicate(W))
        any_ready = ready.any()
        bypass = Signal()
        m.d.comb += bypass.eq(idle & ~any_ready & taken)
        go = Signal()
        chosen = Signal(W)  # the slot that goes out now
        m.d.comb += [
            go.eq(idle & (any_ready | taken)),
            chosen.eq(pick | (free & bypass.replicate(W))),
        ]
        m.d.sync += last.eq((chosen & go.replicate(W)) | (last & ~go.replicate(W)))
        # Word 0 and dest of the picked slot, or of the offered message; word k + 1 of the
        # last slot picked while word k is on the link (dest stays while the message passes).
        m.d.comb += ports[0].addr.eq(_index(first))
        head_word = ports[0].data[:width]
        head_dest = ports[0].data[width:]
        sent = idle & any_ready
        data = (self.tx.payload.data[:width] & bypass.replicate(width)) | (
            head_word & sent.replicate(width)
        )
        dest = (self.tx.payload.dest & bypass.replicate(self.h)) | (
            head_dest & sent.replicate(self.h)
        )
        last_index = Signal(range(W))  # a signal for the same reason as the write index
        m.d.comb += last_index.eq(_index(last))
        for k in range(P - 1):
            m.d.comb += ports[k + 1].addr.eq(last_index)
            data = data | (ports[k + 1].data & on[k].replicate(width))
        m.d.sync += [
            up.valid.eq(go | ~idle),
            up.head.eq(go),
            up.dest.eq(Mux(idle, dest, up.dest)),
            up.data.eq(data),
        ]
        return bypass, pick, last

    def _fate(self, m, last):
        """The slot of each attempt, ``F`` cycles behind its head, against the inject link's
        ``ack``; returns the slots that become READY (``ack`` 0) and FREE (``ack`` 1) at
        this edge, and drives the ``tx_reject`` and ``tx_done`` pulses."""
        W, F = self.window, fate_delay(self.h)
        bits = (W - 1).bit_length()
        # At t0 the last slot picked is the slot of the head on the link.
        slot = _index(last)
        line = [Signal(1 + bits, name=f"fate{k}") for k in range(1, F + 1)]
        m.d.sync += line[0].eq(Cat(self.up.head, slot))
        for k in range(1, F):
            m.d.sync += line[k].eq(line[k - 1])
        attempt, which = line[-1][0], line[-1][1:]
        ack = self.up.ack
        hit = Signal(W)
        m.d.comb += hit.eq(Cat(attempt & (which == s) for s in range(W)))
        m.d.sync += [self.tx_reject.eq(attempt & ~ack), self.tx_done.eq(attempt & ack)]
        return hit & ~ack.replicate(W), hit & ack.replicate(W)

    def _receive(self, m):
        """Accept (acknowledge) or drop each head on the eject link, collect the accepted
        words, present the message (cut-through at its last word) and store it until taken."""
        P, width, down, rx = self.length, self.width, self.down, self.rx
        stored = Signal()
        message = Signal(width * P)
        full = Signal()  # a stored message is there and not taken in this cycle
        m.d.comb += full.eq(stored & ~rx.ready)
        head = down.head  # the router sends head only with valid
        m.d.sync += down.ack.eq(head & ~full)
        # accepted[k]: word k of an accepted message is on the link.
        accepted = [Signal(name="accepted0")] + [Signal(name=f"accepted{k}") for k in range(1, P)]
        m.d.comb += accepted[0].eq(head & ~full)
        for k in range(1, P):
            m.d.sync += accepted[k].eq(accepted[k - 1])
        for k in range(P):
            with m.If(accepted[k]):
                m.d.sync += message.word_select(k, width).eq(down.data)
        # The last word arrives (accepted, or a head while a stored message waits: P = 1).
        arrives = head if P == 1 else accepted[P - 1]
        m.d.comb += rx.valid.eq(stored | arrives)
        keep = stored.replicate(width)
        last = (message[(P - 1) * width :] & keep) | (down.data & ~keep)
        m.d.comb += rx.payload.data.eq(Cat(message[: (P - 1) * width], last))
        # P = 1: a head accepted while the stored message is taken is stored at the edge.
        refill = head & stored if P == 1 else 0
        m.d.sync += stored.eq((rx.valid & ~rx.ready) | refill)


def _first(v):
    """The lowest set bit of ``v``, one-hot."""
    return Cat(v[s] & ~_any(v[k] for k in range(s)) for s in range(len(v)))


def _index(onehot):
    """The index of the set bit of a one-hot (or all-zero: 0) ``onehot``."""
    bits = (len(onehot) - 1).bit_length()
    return Cat(_any(onehot[s] for s in range(len(onehot)) if s >> b & 1) for b in range(bits))


def _any(values):
    """The OR of ``values``; a 1-bit 0 for none (so that ``~`` of it is a 1-bit 1)."""
    result = C(0, 1)
    for v in values:
        result = result | v
    return result
