"""The thin board wrapper: a self-test core's status outputs to the board's LEDs, and its
counters to a status line on the board's UART."""

from __future__ import annotations

import math

from amaranth import Elaboratable, Module
from amaranth.lib import io

from .platforms import UART_BAUD, Board
from .selftest import status_signals
from .uart import StatusReporter

__all__ = ["BoardTop"]


class BoardTop(Elaboratable):
    """Put a self-test core on a board: its ``heartbeat``, ``ok`` and ``error`` outputs drive
    the LEDs the board entry names; with ``uart`` (default), if the core counts ``frames`` and
    the board has a UART, a :class:`~fattree.boards.uart.StatusReporter` sends the core's
    status fields (:func:`~fattree.boards.selftest.status_signals`: the selector's frame
    count and error flag, a network self-test's counters) about once a second. The core
    runs on the platform's default clock and reset."""

    def __init__(self, core, board: Board, *, uart: bool = True, pll=None):
        self.core = core
        self.board = board
        self.uart = uart and board.uart is not None and hasattr(core, "frames")
        #: A :class:`~fattree.boards.clocks.PLLPlan`: clock the design from the PLL.
        self.pll = pll

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = self.core
        clock_hz = platform.default_clk_frequency
        if self.pll is not None:
            from .clocks import pll_domain

            pll_domain(m, platform, self.pll)
            clock_hz = self.pll.f_out
        for role, (resource, number) in self.board.leds.items():
            port = platform.request(resource, number, dir="-")
            m.submodules[f"led_{role}"] = led = io.Buffer("o", port)
            m.d.comb += led.o.eq(getattr(self.core, role))
        if self.uart:
            fields = status_signals(self.core)
            m.submodules.status = status = StatusReporter(
                divisor=round(clock_hz / UART_BAUD),
                period_log2=round(math.log2(clock_hz)),
                fields=[(name, bits) for name, bits, _ in fields],
            )
            port = platform.request(*self.board.uart, dir="-")
            m.submodules.uart_tx = tx = io.Buffer("o", port.tx)
            for name, _, signal in fields:
                m.d.comb += getattr(status, name).eq(signal)
            m.d.comb += tx.o.eq(status.tx)
        return m
