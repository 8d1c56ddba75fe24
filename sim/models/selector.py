"""Reference model of Leiserson's selector (see :mod:`fattree.hdl.selector` for the timing).

Two views of the same behaviour, tested against each other:

* :func:`select_message` is the paper's rule on one wire's message: the branch M bits are
  M AND a0 and M AND NOT a0, the used address bit is stripped, a branch without the message
  carries zeros.
* :class:`SelectorModel` is cycle-exact: it steps the same registers as the RTL and is the
  scoreboard of the amaranth.sim tests and the cocotb bench. It counts the situations of the
  rule it decides (its cover points, docs/selector.md "Coverage") when coverage is started.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ...spec.leiserson_frames import SELECTOR
from ..coverage import Coverage, CoverPoint

__all__ = ["select_message", "SelectorModel", "SelectorOutputs"]


def select_message(bits: list[int]) -> tuple[list[int], list[int]]:
    """Split one wire's message ``[M, a0, rest...]`` into the ``one`` and ``zero`` branches.

    Each branch gets ``[M', rest...]``: one bit shorter, its new M bit first, and zeros after
    it when the message is not for that branch.
    """
    if len(bits) < 2:
        raise ValueError(f"a message needs an M bit and an address bit, not {bits!r}")
    if any(b not in (0, 1) for b in bits):
        raise ValueError(f"message bits must be 0 or 1, not {bits!r}")
    m, a0, rest = bits[0], bits[1], list(bits[2:])
    m_one, m_zero = m & a0, m & (1 - a0)
    return [m_one] + [b & m_one for b in rest], [m_zero] + [b & m_zero for b in rest]


@dataclass(frozen=True)
class SelectorOutputs:
    start_o: int
    one: int
    zero: int


class SelectorModel:
    """Cycle-exact model of :class:`fattree.hdl.Selector`: call :meth:`step` once per clock
    with the inputs of that cycle; it returns the registered outputs visible in that cycle
    (before the clock edge), then advances.
    """

    #: What :meth:`start_coverage` counts into (None: not counted).
    coverage: Coverage | None = None

    def __init__(self, width: int):
        self.width = SELECTOR.check("width", width, model=True)
        self.mask = (1 << width) - 1
        self.reset()

    def reset(self) -> None:
        self.m_bits = 0
        self.address_cycle = 0
        self.live_one = 0
        self.live_zero = 0
        self.out = SelectorOutputs(0, 0, 0)
        #: Cycles of the current frame so far (0: no frame since reset); coverage only.
        self.frame_cycles = 0

    def step(self, start: int, i: int) -> SelectorOutputs:
        current = self.out
        i &= self.mask
        start_o = int(self.address_cycle and not start)
        if self.coverage is not None:
            self._cover(start, i)
        if start:
            self.m_bits, self.live_one, self.live_zero = i, 0, 0
            one = zero = 0
        elif self.address_cycle:
            self.live_one = self.m_bits & i
            self.live_zero = self.m_bits & ~i & self.mask
            one, zero = self.live_one, self.live_zero
        else:
            one, zero = i & self.live_one, i & self.live_zero
        self.address_cycle = int(bool(start))
        self.frame_cycles = 1 if start else self.frame_cycles + (self.frame_cycles > 0)
        self.out = SelectorOutputs(start_o, one, zero)
        return current

    # -- coverage ----------------------------------------------------------------------------

    def cover_points(self) -> list[CoverPoint]:
        """The situations of the paper's rule (section II, Fig. 3) and of the frame protocol
        (docs/selector.md, "Coverage"). A bundle of one wire has no ``some`` load and no frame
        with both branches."""
        w = self.width
        loads = ("0", "some", "all") if w > 1 else ("0", "all")
        wires = tuple(f"W{k}" for k in range(w))
        return [
            CoverPoint(
                "decide",
                ("idle, a0 0", "idle, a0 1", "zero", "one"),
                "a wire's M and address bits: the AND with M keeps an idle wire with address "
                "bit 1 off the one branch; M AND NOT a0 sends a message to zero",
            ),
            CoverPoint("one", wires, "each wire's message taken by the one branch"),
            CoverPoint("zero", wires, "each wire's message taken by the zero branch"),
            CoverPoint(
                "load/one",
                loads,
                "messages the one branch takes in a frame: none, some wires, every wire (the "
                "branch carries the whole bundle)",
            ),
            CoverPoint("load/zero", loads, "the same for the zero branch"),
            CoverPoint(
                "frame",
                ("no message", "one branch") + (("both branches",) if w > 1 else ()),
                "which branches a frame's messages take: both at once is the node's input port "
                "feeding both opposite ports in one delivery cycle",
            ),
            CoverPoint(
                "length",
                ("cut, idle", "cut, messages lost", "2", "3+"),
                "cycles from a start to the next: a start right after a start cuts the frame "
                "(its messages are lost on both branches), 2 is M and address bit only, 3 or "
                "more carry bits behind the branch M bit",
            ),
            CoverPoint(
                "bits",
                ("passed", "gated"),
                "a 1 after the address bit on a wire with a message (passed on its branch) and "
                "on a wire without one (both branches stay 0)",
            ),
        ]

    def start_coverage(self) -> Coverage:
        """Count hits in :meth:`cover_points` from now on; the :class:`Coverage` to read."""
        self.coverage = Coverage(self.cover_points())
        return self.coverage

    def clone(self) -> SelectorModel:
        """An independent copy in the same state (its coverage too), to try frames on."""
        return copy.deepcopy(self)

    def _cover(self, start: int, i: int) -> None:
        """Count the situation this cycle's inputs meet, before the registers change."""
        cover, mask = self.coverage, self.mask
        if start and self.frame_cycles:
            if self.frame_cycles == 1:
                cover.hit("length", "cut, messages lost" if self.m_bits else "cut, idle")
            else:
                cover.hit("length", "2" if self.frame_cycles == 2 else "3+")
        if start:
            return
        if self.address_cycle:
            one, zero = self.m_bits & i, self.m_bits & ~i & mask
            for w in range(self.width):
                m, a0 = (self.m_bits >> w) & 1, (i >> w) & 1
                cover.hit("decide", ("one" if a0 else "zero") if m else f"idle, a0 {a0}")
                if m:
                    cover.hit("one" if a0 else "zero", f"W{w}")
            for name, taken in (("load/one", one), ("load/zero", zero)):
                cover.hit(name, "0" if not taken else "all" if taken == mask else "some")
            used = (one != 0) + (zero != 0)
            cover.hit("frame", ("no message", "one branch", "both branches")[used])
        elif self.frame_cycles:
            live = self.live_one | self.live_zero
            if i & live:
                cover.hit("bits", "passed")
            if i & ~live & mask:
                cover.hit("bits", "gated")
