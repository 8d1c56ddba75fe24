"""Clocking a self-test from the board's PLL, to run it at speed.

:func:`pll_plan` picks the PLL dividers for a family that give the highest frequency not above
a target (pure Python, so the command line knows the real clock before it builds the core);
:func:`pll_domain` instantiates that PLL in a module and makes the ``sync`` domain of it,
held in reset until the PLL locks.

* iCE40 (``SB_PLL40_PAD`` on the oscillator's pin, simple feedback, as ``icepll`` computes it):
  ``f_out = f_in * (DIVF + 1) / ((DIVR + 1) * 2^DIVQ)``, phase detector 10..133 MHz, VCO
  533..1066 MHz, output 16..275 MHz.
* ECP5 (``EHXPLLL``, feedback from CLKOP, as ``ecppll`` computes it):
  ``f_out = f_in * CLKFB_DIV / CLKI_DIV``, VCO ``f_out * CLKOP_DIV`` 400..800 MHz, phase
  detector at least 3.125 MHz, output 3.125..400 MHz.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PLLPlan", "pll_plan", "pll_domain"]


@dataclass(frozen=True)
class PLLPlan:
    family: str
    f_in: float
    f_out: float
    params: dict[str, int]


def pll_plan(family: str, f_in: float, target: float) -> PLLPlan:
    """The dividers giving the highest output frequency ``<= target`` (Hz) (at most the PLL's
    maximum); ``ValueError`` naming the range if the target is below the PLL's minimum."""
    best = None
    lowest = float("inf")  # the lowest output the dividers reach from this f_in
    if family == "ice40":
        lo, hi = 16e6, 275e6
        for divr in range(16):
            pfd = f_in / (divr + 1)
            if not 10e6 <= pfd <= 133e6:
                continue
            for divf in range(128):
                vco = pfd * (divf + 1)
                if not 533e6 <= vco <= 1066e6:
                    continue
                for divq in range(1, 7):
                    f_out = vco / (1 << divq)
                    if lo <= f_out <= hi:
                        lowest = min(lowest, f_out)
                    if lo <= f_out <= min(target, hi) and (best is None or f_out > best[0]):
                        best = (f_out, {"DIVR": divr, "DIVF": divf, "DIVQ": divq})
        if best is not None:
            pfd = f_in / (best[1]["DIVR"] + 1)
            bounds = (17e6, 26e6, 44e6, 66e6, 101e6)
            best[1]["FILTER_RANGE"] = 1 + sum(pfd >= b for b in bounds)
    elif family == "ecp5":
        lo, hi = 3.125e6, 400e6
        for clki in range(1, 129):
            pfd = f_in / clki
            if pfd < 3.125e6:
                break
            for clkfb in range(1, 81):
                f_out = pfd * clkfb
                if lo <= f_out <= hi:
                    lowest = min(lowest, f_out)
                if not lo <= f_out <= min(target, hi):
                    continue
                for clkop in range(1, 129):
                    if 400e6 <= f_out * clkop <= 800e6:
                        if best is None or f_out > best[0]:
                            best = (
                                f_out,
                                {"CLKI_DIV": clki, "CLKFB_DIV": clkfb, "CLKOP_DIV": clkop},
                            )
                        break
    else:
        raise ValueError(f"no PLL for family {family!r}")
    if best is None:
        # The nominal range alone misleads: from a 12 MHz oscillator the iCE40 PLL's lowest
        # clock is 16.125 MHz, so 16 MHz, inside 16..275, has no setting.
        reach = ""
        if target >= lo and lowest < hi:
            reach = f": from a {f_in / 1e6:g} MHz oscillator its lowest is {lowest / 1e6:g} MHz"
        raise ValueError(
            f"clock must be {lo / 1e6:g}..{hi / 1e6:g} MHz for the {family} PLL, "
            f"not {target / 1e6:g} MHz{reach}"
        )
    return PLLPlan(family, f_in, best[0], best[1])


def pll_domain(m, platform, plan: PLLPlan) -> None:
    """Add ``plan``'s PLL to ``m``, fed by the board's oscillator, and a ``sync`` domain on its
    output, reset until the PLL locks."""
    from amaranth import ClockDomain, Instance, Signal
    from amaranth.lib import io
    from amaranth.lib.cdc import ResetSynchronizer

    m.domains.sync = sync = ClockDomain("sync")
    locked = Signal()
    pll_clk = Signal(name="pll_clk")
    m.d.comb += sync.clk.eq(pll_clk)
    p = plan.params
    port = platform.request(platform.default_clk, dir="-")
    if plan.family == "ice40":
        # The UP5K's PLL shares its site with the oscillator's pin (35 on the iCEBreaker): the
        # pad form takes the pin itself, with no input buffer in between.
        m.submodules.pll = Instance(
            "SB_PLL40_PAD",
            p_FEEDBACK_PATH="SIMPLE",
            p_PLLOUT_SELECT="GENCLK",
            p_DIVR=p["DIVR"],
            p_DIVF=p["DIVF"],
            p_DIVQ=p["DIVQ"],
            p_FILTER_RANGE=p["FILTER_RANGE"],
            i_PACKAGEPIN=port.io,
            i_RESETB=1,
            i_BYPASS=0,
            o_PLLOUTGLOBAL=pll_clk,
            o_LOCK=locked,
        )
    else:
        m.submodules.clk_in = clk_in = io.Buffer("i", port)
        m.submodules.pll = Instance(
            "EHXPLLL",
            p_PLLRST_ENA="DISABLED",
            p_INTFB_WAKE="DISABLED",
            p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED",
            p_OUTDIVIDER_MUXA="DIVA",
            p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC",
            p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=p["CLKI_DIV"],
            p_CLKOP_ENABLE="ENABLED",
            p_CLKOP_DIV=p["CLKOP_DIV"],
            p_CLKOP_CPHASE=p["CLKOP_DIV"] - 1,
            p_CLKOP_FPHASE=0,
            p_FEEDBK_PATH="CLKOP",
            p_CLKFB_DIV=p["CLKFB_DIV"],
            i_CLKI=clk_in.i,
            i_CLKFB=pll_clk,
            i_RST=0,
            i_STDBY=0,
            i_PHASESEL0=0,
            i_PHASESEL1=0,
            i_PHASEDIR=1,
            i_PHASESTEP=1,
            i_PHASELOADREG=1,
            i_PLLWAKESYNC=0,
            i_ENCLKOP=0,
            o_CLKOP=pll_clk,
            o_LOCK=locked,
            a_FREQUENCY_PIN_CLKI=f"{plan.f_in / 1e6:g}",
            a_FREQUENCY_PIN_CLKOP=f"{plan.f_out / 1e6:g}",
            a_ICP_CURRENT="12",
            a_LPF_RESISTOR="8",
            a_MFG_ENABLE_FILTEROPAMP="1",
            a_MFG_GMCREF_SEL="2",
        )
    m.submodules.pll_reset = ResetSynchronizer(~locked, domain="sync")
    # No clock constraint here: nextpnr derives the output's from the oscillator's and the
    # PLL's dividers ("Derived frequency constraint of 30.0 MHz for net clk").
