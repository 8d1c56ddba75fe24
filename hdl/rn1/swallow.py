"""The swallow element of DeHon fat-trees of several unit-tree stages (docs/dehon.md, "Routes
over several head bytes"): one channel in, one out, on every link that enters a unit tree from
another unit tree.

A route carries one head byte per unit tree it crosses. The RN1 routers of a unit tree pass
the head byte on (rotated); the swallow in front of the next unit tree drops it, so the byte
after it becomes the head there. Everything else passes one register each way, as through a
router's held circuit:

* a connection's first byte (``ctrl`` rising on an idle element) is dropped; the next word
  is passed on (the new head). If that word is no byte (the transmission closed: nothing
  left to route) the element answers BLOCKED on its backward link the cycle after, as a
  router answers a discarded transmission;
* then both links pass through one register each (one cycle each way); a close other than
  TURN on either link marks the circuit closing; a BLOCKED on either link, or any status
  once closing, releases it after passing the status on (the router's rules).

So the RN1 router stays as it is (:mod:`fattree.hdl.rn1`). The cycle-exact reference is
:class:`fattree.sim.models.rn1.RN1SwallowModel`.
"""

from amaranth import Const, Module, Signal
from amaranth.hdl import Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...spec.rn1 import BLOCKED, CONNECTED, TURN, WORD_BITS, word
from .router import channel_signature

__all__ = ["RN1Swallow"]


class RN1Swallow(wiring.Component):
    """One swallow element.

    Attributes
    ----------
    i : In(channel_signature())
        The link in (``fwd`` in, ``bk`` out).
    o : Out(channel_signature())
        The link out, into the next unit tree's router.
    """

    i: In(channel_signature())
    o: Out(channel_signature())

    def __init__(self):
        super().__init__()
        # Made here so a test can look at them: the circuit is held; the head byte was
        # dropped last cycle; the circuit is closing; the forward ctrl bit of last cycle.
        self.held = Signal()
        self.dropped = Signal()
        self.closing = Signal()
        self.prev_ctrl = Signal()

    def elaborate(self, platform):
        m = Module()
        f, b = self.i.fwd, self.o.bk
        held, dropped, closing, prev_ctrl = self.held, self.dropped, self.closing, self.prev_ctrl

        def status(w):
            return ~w.ctrl & ((w.data == CONNECTED) | (w.data == BLOCKED))

        def blocked(w):
            return ~w.ctrl & (w.data == BLOCKED)

        def ending(w):
            return ~w.ctrl & (w.data != TURN)

        head = ~held & ~dropped & f.ctrl & ~prev_ctrl
        release = held & (blocked(f) | blocked(b) | (closing & (status(f) | status(b))))
        ends = (ending(f) & prev_ctrl) | (ending(b) & self.i.bk.ctrl)
        empty = dropped & ~f.ctrl  # closed right after the dropped byte
        passing = held | (dropped & f.ctrl)
        m.d.sync += [
            prev_ctrl.eq(f.ctrl),
            dropped.eq(head),
            held.eq((dropped & f.ctrl) | (held & ~release)),
            closing.eq(held & ~release & (closing | ends)),
            Value.cast(self.o.fwd).eq(Value.cast(f) & passing.replicate(WORD_BITS)),
            Value.cast(self.i.bk).eq(
                (Value.cast(b) & held.replicate(WORD_BITS))
                | (Const(word(0, BLOCKED), WORD_BITS) & empty.replicate(WORD_BITS))
            ),
        ]
        return m
