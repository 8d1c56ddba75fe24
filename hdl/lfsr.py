"""The seedable LFSR as hardware; its mathematics (taps, step, seeds) is
:mod:`fattree.spec.lfsr`, and :class:`~fattree.spec.lfsr.LFSRModel` is its Python twin.

See :mod:`fattree.spec.lfsr` for the Fibonacci and Galois forms and the taps.
"""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..spec.lfsr import check_lfsr_parameters
from ._validation import validates_parameters

__all__ = ["LFSR"]


class LFSR(wiring.Component):
    """A seedable LFSR that advances ``steps`` single steps per enabled clock.

    Parameters
    ----------
    width : int
        Register bits, at least 2.
    taps : sequence of int, optional
        Feedback polynomial exponents, including ``width``; default :data:`MAXIMAL_TAPS`.
    seed : int
        Reset value, ``1 .. 2**width - 1`` (zero would lock the register up).
    kind : str
        ``"fibonacci"`` (default) or ``"galois"``.
    steps : int
        Single steps per clock, ``1 .. width``; for ``"fibonacci"``, ``value[:steps]`` is a
        fresh word every clock.

    Attributes
    ----------
    en : In(1)
        Advance this clock; 1 if left unconnected.
    value : Out(width)
        The register (resets to ``seed``).
    """

    @validates_parameters
    def __init__(self, width, *, taps=None, seed=1, kind="fibonacci", steps=1):
        self.width, self.taps, self.seed = check_lfsr_parameters(width, taps, seed, kind, steps)
        self.kind = kind
        self.steps = steps
        super().__init__({"en": In(1, init=1), "value": Out(self.width, init=self.seed)})

    def elaborate(self, platform):
        m = Module()
        # Unroll the single steps into one combinational next-state function.
        bits = [self.value[n] for n in range(self.width)]
        for _ in range(self.steps):
            if self.kind == "fibonacci":
                feedback = bits[self.taps[0] - 1]
                for t in self.taps[1:]:
                    feedback = feedback ^ bits[t - 1]
                bits = [feedback] + bits[:-1]
            else:
                # Bit 0 leaves; the top bit takes it (the width is always a tap) and the
                # other tapped bits are toggled by it.
                out = bits[0]
                toggled = {t - 1 for t in self.taps[1:]}
                bits = [b ^ out if n in toggled else b for n, b in enumerate(bits[1:])] + [out]
        nxt = Signal(self.width)
        for n, b in enumerate(bits):
            m.d.comb += nxt[n].eq(b)
        with m.If(self.en):
            m.d.sync += self.value.eq(nxt)
        return m
