"""Reference model of Leiserson's selector (see :mod:`fattree.hdl.selector` for the timing).

Two views of the same behaviour, tested against each other:

* :func:`select_message` is the paper's rule on one wire's message: the branch M bits are
  M AND a0 and M AND NOT a0, the used address bit is stripped, a branch without the message
  carries zeros.
* :class:`SelectorModel` is cycle-exact: it steps the same registers as the RTL and is the
  scoreboard of the amaranth.sim tests and the cocotb bench.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...spec.leiserson_frames import SELECTOR

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

    def step(self, start: int, i: int) -> SelectorOutputs:
        current = self.out
        i &= self.mask
        start_o = int(self.address_cycle and not start)
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
        self.out = SelectorOutputs(start_o, one, zero)
        return current
