"""On-chip self-test of Leiserson's selector: LFSR traffic in, branch outputs checked on chip.

The top drives a :class:`fattree.hdl.Selector` with pseudo-random frames and checks every
output bit it produces in every cycle, without a host. Its three status outputs go to LEDs
on a board (:mod:`fattree.boards.platforms`): ``heartbeat`` blinks while the clock runs,
``ok`` lights once frames have been checked and none failed, ``error`` is sticky and lights
on the first mismatch.

Generator. A new frame starts as soon as the last one ends. Its length ``L`` is drawn
uniformly from 2..9 cycles (M bit, address bit, 0..7 data bits), and every wire's M bit,
address bit and data bits are pseudo-random fair coin flips, fresh every cycle, from a bank of
31-bit Fibonacci LFSRs (:class:`fattree.hdl.lfsr.LFSR`, 28 fresh bits per clock each).

Checker. It does not look at how the selector works, only at the paper's rule applied to
the frame the generator is sending. The generator knows each frame's M word before it drives
it and draws the address word in the cycle it drives it, so along with every input word it
registers what the selector must put out for it one cycle later:

* for the M-bit cycle: zeros (this is the idle pad that closes the previous frame's branch
  messages, in the slot of the stripped address bit), and ``start_o = 0``;
* for the address cycle: the branch M bits ``M AND a0`` (``one``) and ``M AND NOT a0``
  (``zero``), and ``start_o = 1``;
* for each later cycle: the data word ANDed with that frame's branch M bits.

One more register delays these expectations to the cycle the selector's registered outputs
appear; any difference in ``start_o``, ``one`` or ``zero`` sets the sticky error flag (two
cycles later: the compare is registered). A frame counts as checked when its pad cycle has
been compared.

With ``fault_log2`` set, bit 0 of ``one`` is inverted on its way to the checker for one
cycle every ``2**fault_log2`` cycles: the error LED must then light, which shows the checker
really compares.
"""

from __future__ import annotations

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from ..hdl import Selector
from ..hdl._validation import validates_parameters
from ..hdl.lfsr import LFSR
from ..params import check_int_range, check_positive_int
from ..spec.lfsr import LFSRModel, derive_seed

__all__ = ["SelectorSelfTest", "selftest", "traffic", "LENGTH_BITS", "MIN_LENGTH"]

#: Frame lengths are ``MIN_LENGTH + r`` with ``r`` a ``LENGTH_BITS``-bit random number.
MIN_LENGTH = 2
LENGTH_BITS = 3

# Random bits come from 31-bit LFSRs with the trinomial x^31 + x^28 + 1: up to 28 steps per
# clock, each new bit is the XOR of two register bits (no XOR chains, one LUT per bit).
_LFSR_WIDTH = 31
_LFSR_TAPS = (31, 28)
_LFSR_STEPS = 28


def _lfsr_seed(seed: int, index: int) -> int:
    """A distinct non-zero 31-bit seed per LFSR of the bank."""
    return derive_seed(_LFSR_WIDTH, seed, index + 1)


def _bank(width: int) -> list[int]:
    """Bits drawn from each LFSR of the bank per clock."""
    need = width + LENGTH_BITS
    return [min(_LFSR_STEPS, need - k) for k in range(0, need, _LFSR_STEPS)]


def traffic(width: int, seed: int = 1):
    """Python twin of the generator: yields ``(start, i)``, what the selector sees in each
    cycle from reset on, computed with :class:`~fattree.spec.lfsr.LFSRModel`.

    A host can replay exactly what a board checked, e.g. to feed the reference model.
    """
    check_positive_int("width", width)
    check_int_range("seed", seed, 0, (1 << 32) - 1)
    lfsrs = [
        LFSRModel(_LFSR_WIDTH, taps=_LFSR_TAPS, seed=_lfsr_seed(seed, k), steps=steps)
        for k, steps in enumerate(_bank(width))
    ]
    # Only what the selector sees: the expectations need no twin, the reference model is one.
    start = i = left = 0
    while True:
        yield start, i
        rand, shift = 0, 0
        for lfsr in lfsrs:
            rand |= lfsr.word() << shift
            shift += lfsr.steps
        word, extra_cycles = rand & ((1 << width) - 1), rand >> width
        if left == 0:
            start, i, left = 1, word, MIN_LENGTH - 1 + extra_cycles
        else:
            start, i, left = 0, word, left - 1
        for lfsr in lfsrs:
            lfsr.clock()


class SelectorSelfTest(wiring.Component):
    """Random-traffic generator, :class:`~fattree.hdl.Selector` and checker, with status
    outputs for LEDs.

    Parameters
    ----------
    width : int
        Wires of the selector under test, at least 1.
    seed : int
        Seed of the traffic (each LFSR of the bank gets a distinct seed derived from it).
    blink_log2 : int
        The heartbeat toggles every ``2**blink_log2`` cycles (1..40).
    fault_log2 : int or None
        If set, invert bit 0 of ``one`` on its way to the checker for one cycle every
        ``2**fault_log2`` cycles (1..40). ``None`` (default): no fault.
    selector : callable, optional
        ``selector(width)`` returns the component under test; default
        :class:`~fattree.hdl.Selector`. Tests pass broken variants to show the checker
        catches them.

    Attributes
    ----------
    heartbeat : Out(1)
        Blinks while the clock runs.
    ok : Out(1)
        At least one frame checked and no mismatch so far.
    error : Out(1)
        Sticky: some output bit differed from the expectation.
    frames : Out(32)
        Frames checked so far (wraps around).
    """

    @validates_parameters
    def __init__(self, width, *, seed=1, blink_log2=22, fault_log2=None, selector=None):
        self.width = check_positive_int("width", width)
        self.seed = check_int_range("seed", seed, 0, (1 << 32) - 1)
        self.blink_log2 = check_int_range("blink_log2", blink_log2, 1, 40)
        self.fault_log2 = (
            None if fault_log2 is None else check_int_range("fault_log2", fault_log2, 1, 40)
        )
        super().__init__(
            {
                "heartbeat": Out(1),
                "ok": Out(1),
                "error": Out(1),
                "frames": Out(32),
            }
        )
        self.selector = (selector or Selector)(width)

    def elaborate(self, platform):
        m = Module()
        width = self.width
        m.submodules.selector = sel = self.selector

        word, extra_cycles = self._random_bits(m)

        # --- generator: drives the selector and registers what it must answer --------------
        left = Signal(LENGTH_BITS + 1)  # cycles of the current frame still to drive
        address_next = Signal()  # the next cycle is the frame's address cycle
        started = Signal()  # a frame has begun (so an M-bit cycle closes a frame)
        frame_m = Signal(width)  # the frame's M word
        m_one = Signal(width)  # the frame's branch M bits, M & a0 and M & ~a0
        m_zero = Signal(width)
        want_start_o = Signal()  # what the selector must show one cycle after these inputs
        want_one = Signal(width)
        want_zero = Signal(width)
        want_frame_end = Signal()

        m.d.sync += sel.i.eq(word)
        with m.If(left == 0):
            # M-bit cycle of a new frame; its output slot is the last frame's idle pad.
            m.d.sync += [
                sel.start.eq(1),
                frame_m.eq(word),
                left.eq(MIN_LENGTH - 1 + extra_cycles),
                address_next.eq(1),
                started.eq(1),
                want_start_o.eq(0),
                want_one.eq(0),
                want_zero.eq(0),
                want_frame_end.eq(started),
            ]
        with m.Elif(address_next):
            # Address cycle: the paper's rule decides both branch M bits.
            m.d.sync += [
                sel.start.eq(0),
                m_one.eq(frame_m & word),
                m_zero.eq(frame_m & ~word),
                left.eq(left - 1),
                address_next.eq(0),
                want_start_o.eq(1),
                want_one.eq(frame_m & word),
                want_zero.eq(frame_m & ~word),
                want_frame_end.eq(0),
            ]
        with m.Else():
            # Data cycle: a branch carries the bit only if the message took that branch.
            m.d.sync += [
                sel.start.eq(0),
                left.eq(left - 1),
                want_start_o.eq(0),
                want_one.eq(word & m_one),
                want_zero.eq(word & m_zero),
                want_frame_end.eq(0),
            ]

        # --- optional fault on the way to the checker ---------------------------------------
        seen_one = Signal(width)
        if self.fault_log2 is None:
            m.d.comb += seen_one.eq(sel.one)
        else:
            fault_count = Signal(self.fault_log2)
            m.d.sync += fault_count.eq(fault_count + 1)
            flip = fault_count == (1 << self.fault_log2) - 1
            m.d.comb += seen_one.eq(sel.one ^ Cat(flip, Const(0, width - 1)))

        # --- checker: expectations delayed to the selector's registered outputs -------------
        check_start_o = Signal()
        check_one = Signal(width)
        check_zero = Signal(width)
        check_frame_end = Signal()
        m.d.sync += [
            check_start_o.eq(want_start_o),
            check_one.eq(want_one),
            check_zero.eq(want_zero),
            check_frame_end.eq(want_frame_end),
        ]
        # The compare is registered before it sets the flag: a wide OR of XORs feeding a
        # flip-flop enable was the critical path of the whole top.
        mismatch = Signal()
        m.d.sync += mismatch.eq(
            (sel.start_o != check_start_o) | (seen_one != check_one) | (sel.zero != check_zero)
        )
        with m.If(mismatch):
            m.d.sync += self.error.eq(1)
        checked_any = Signal()
        with m.If(check_frame_end):
            m.d.sync += [self.frames.eq(self.frames + 1), checked_any.eq(1)]

        self._leds(m, checked_any)
        return m

    def _random_bits(self, m):
        """A data word and a frame length every cycle, from the LFSR bank."""
        width = self.width
        chunks = []
        for k, steps in enumerate(_bank(width)):
            lfsr = LFSR(_LFSR_WIDTH, taps=_LFSR_TAPS, seed=_lfsr_seed(self.seed, k), steps=steps)
            m.submodules[f"lfsr{k}"] = lfsr
            chunks.append(lfsr.value[:steps])
        rand = Signal(width + LENGTH_BITS)
        m.d.comb += rand.eq(Cat(*chunks))
        return rand[:width], rand[width:]  # frame length is MIN_LENGTH + the second

    def _leds(self, m, checked_any):
        blink = Signal(self.blink_log2 + 1)
        m.d.sync += blink.eq(blink + 1)
        m.d.comb += [
            self.heartbeat.eq(blink[-1]),
            self.ok.eq(checked_any & ~self.error),
        ]


def selftest(params: dict, *, seed=1, blink_log2=22, fault_log2=None) -> SelectorSelfTest:
    """The board self-test core for the design parameters ``params`` (``width``)."""
    return SelectorSelfTest(**params, seed=seed, blink_log2=blink_log2, fault_log2=fault_log2)
