"""Formal (sby, bounded model check) safety properties of the selector, for every input."""

import pytest
from amaranth import Elaboratable, Module, Signal
from amaranth.hdl import Assert

from fattree.formal import run_sby
from fattree.hdl import Selector

pytestmark = pytest.mark.formal


class SelectorProperties(Elaboratable):
    """The selector's contract, written independently of its implementation.

    * No wire ever carries a message on both branches (``one & zero == 0``).
    * ``start_o`` rises exactly two cycles after ``start`` (unless a new ``start`` cut the
      frame short), and then each branch's M bit is M AND a0 (resp. M AND NOT a0).
    * Between ``start_o`` pulses a branch passes the wire's bits only if it took the wire,
      and the cycle after ``start`` is quiet on both branches.

    ``swap`` states the contract with the branches swapped: the check must then fail.
    """

    def __init__(self, width, *, swap=False):
        self.dut = Selector(width)
        self.width = width
        self.swap = swap

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        w = self.width
        m_bits, address_cycle, frame_open = Signal(w), Signal(), Signal()
        expect_start_o, took_one, took_zero, previous_i = Signal(), Signal(w), Signal(w), Signal(w)

        m.d.sync += [address_cycle.eq(dut.start), previous_i.eq(dut.i)]
        m.d.sync += expect_start_o.eq(address_cycle & ~dut.start)
        with m.If(dut.start):
            m.d.sync += [m_bits.eq(dut.i), frame_open.eq(0), took_one.eq(0), took_zero.eq(0)]
        with m.Elif(address_cycle):
            one, zero = m_bits & dut.i, m_bits & ~dut.i
            if self.swap:
                one, zero = zero, one
            m.d.sync += [took_one.eq(one), took_zero.eq(zero), frame_open.eq(1)]

        m.d.comb += Assert((dut.one & dut.zero) == 0)
        m.d.comb += Assert(dut.start_o == expect_start_o)
        with m.If(expect_start_o):
            m.d.comb += Assert((dut.one == took_one) & (dut.zero == took_zero))
        with m.Elif(address_cycle):
            # The cycle after `start` carries nothing: the new frame's M bits are not out yet.
            m.d.comb += Assert((dut.one == 0) & (dut.zero == 0))
        with m.Elif(frame_open):
            m.d.comb += Assert(dut.one == (previous_i & took_one))
            m.d.comb += Assert(dut.zero == (previous_i & took_zero))
        return m


def ports(check):
    return [check.dut.start, check.dut.i]


@pytest.mark.parametrize("width", [pytest.param(1, marks=pytest.mark.slow), 4])
def test_selector_contract_holds(width, tmp_path):
    check = SelectorProperties(width)
    result = run_sby("selector", check, ports(check), tmp_path, mode="bmc", depth=24)
    assert result.passed, result.log[-3000:]


def test_wrong_contract_fails(tmp_path):
    # The properties are not vacuous: with the branches swapped, sby finds a counterexample.
    check = SelectorProperties(2, swap=True)
    result = run_sby("selector_swapped", check, ports(check), tmp_path, mode="bmc", depth=8)
    assert result.status == "FAIL", result.log[-3000:]
