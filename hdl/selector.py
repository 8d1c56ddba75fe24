"""Leiserson's selector (Fat-Trees, 1985, section II and Fig. 3).

A fat-tree node fans every input wire out towards the two opposite output ports. On each
branch the selector decides whether the wire carries a message for that port: the branch's
new M bit is the wire's M bit ANDed with the first address bit (for the ``one`` branch) or
with its complement (for the ``zero`` branch). The address bit the node used is stripped:
the branch's message starts with its new M bit, followed by the remaining address bits and
the data.

Timing (one bundle of ``width`` wires; ``start`` marks the M-bit cycle of every wire, since
delivery cycles are synchronous)::

    cycle        t        t+1       t+2        t+3        t+4   ...
    start        1        0         0          0          0
    i[w]         M        a0        a1         a2/d0      ...
    start_o      0        0         1          0          0
    one[w]       -        -         M&a0       a1&M1      a2&M1 ...
    zero[w]      -        -         M&~a0      a1&M0      a2&M0 ...

where ``M1 = M & a0`` and ``M0 = M & ~a0`` are held until the next ``start``. Frames keep
their period: a frame of L input cycles leaves as L output cycles, the branch message (L - 1
bits) followed by one idle 0 in the slot of the stripped address bit. Every output
is registered, so the selector is one pipeline stage: an input bit at cycle ``t+k`` (k >= 2)
leaves at ``t+k+1``, and the branch's new M bit leaves one cycle after the address bit that
decided it. A branch whose M bit is 0 carries zeros for the rest of the message, so an idle
wire is quiet rather than carrying another port's data.

Protocol rules the paper leaves open, and what this block does:

* Messages are at least two bits long (M and one address bit). A ``start`` in the cycle
  right after another ``start`` begins a new message; the first is dropped (both branches
  see M = 0 for it).
* Before the first ``start`` after reset both branches are idle (all zeros).
"""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..spec.leiserson_frames import SELECTOR
from ._validation import validates_parameters

__all__ = ["Selector"]


class Selector(wiring.Component):
    """Per-wire M-bit selection for the two branches of a fat-tree node input port.

    Parameters
    ----------
    width : int
        Number of bit-serial wires in the input bundle (the channel capacity), at least 1.

    Attributes
    ----------
    start : In(1)
        High in the cycle the M bits are on ``i``.
    i : In(width)
        The input wires, one bit per wire per cycle.
    start_o : Out(1)
        High in the cycle the branch M bits are on ``one`` and ``zero``.
    one : Out(width)
        Branch taken by messages whose address bit is 1.
    zero : Out(width)
        Branch taken by messages whose address bit is 0.
    """

    @validates_parameters
    def __init__(self, width: int):
        self.width = SELECTOR.check("width", width)
        super().__init__(
            {
                "start": In(1),
                "i": In(width),
                "start_o": Out(1),
                "one": Out(width),
                "zero": Out(width),
            }
        )

    def elaborate(self, platform):
        m = Module()

        m_bits = Signal(self.width)  # the M bits, held for the address cycle
        address_cycle = Signal()  # the cycle after `start`: `i` carries the address bit
        live_one = Signal(self.width)  # branch M bits, held until the next `start`
        live_zero = Signal(self.width)

        m.d.sync += address_cycle.eq(self.start)
        m.d.sync += self.start_o.eq(address_cycle & ~self.start)

        with m.If(self.start):
            m.d.sync += [
                m_bits.eq(self.i),
                live_one.eq(0),
                live_zero.eq(0),
                self.one.eq(0),
                self.zero.eq(0),
            ]
        with m.Elif(address_cycle):
            new_one = m_bits & self.i
            new_zero = m_bits & ~self.i
            m.d.sync += [
                live_one.eq(new_one),
                live_zero.eq(new_zero),
                self.one.eq(new_one),
                self.zero.eq(new_zero),
            ]
        with m.Else():
            m.d.sync += [
                self.one.eq(self.i & live_one),
                self.zero.eq(self.i & live_zero),
            ]

        return m
