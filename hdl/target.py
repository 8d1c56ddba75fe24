"""What a component may know about the FPGA it is built for.

Components are generic Amaranth by default. A few have a faster form that instantiates a
vendor primitive (the scheduler's link memories as ECP5 ``DP16KD`` block RAMs with their
output register). They choose it in ``elaborate(platform)`` from the platform's ``family``:
an amaranth-boards platform has one (``"ecp5"``, ``"ice40"``, ...); ``fattree synth`` and
``fattree verilog --family`` pass a :class:`SynthesisTarget`; simulation passes nothing and
gets the generic form.
"""

from __future__ import annotations

__all__ = ["SynthesisTarget", "family_of"]


class SynthesisTarget:
    """A stand-in for a platform that carries only the FPGA family (no pins, no clocks)."""

    def __init__(self, family: str):
        self.family = family

    def __repr__(self) -> str:
        return f"SynthesisTarget({self.family!r})"


def family_of(platform) -> str | None:
    """The FPGA family ``elaborate`` is building for, or None (simulation, generic Verilog)."""
    return getattr(platform, "family", None)
