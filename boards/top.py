"""The thin board wrapper: a self-test core's status outputs to the board's LEDs."""

from __future__ import annotations

from amaranth import Elaboratable, Module
from amaranth.lib import io

from .platforms import Board

__all__ = ["BoardTop"]


class BoardTop(Elaboratable):
    """Put a self-test core on a board: its ``heartbeat``, ``ok`` and ``error`` outputs drive
    the LEDs the board entry names. Nothing else; the core runs on the platform's default
    clock and reset."""

    def __init__(self, core, board: Board):
        self.core = core
        self.board = board

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = self.core
        for role, (resource, number) in self.board.leds.items():
            port = platform.request(resource, number, dir="-")
            m.submodules[f"led_{role}"] = led = io.Buffer("o", port)
            m.d.comb += led.o.eq(getattr(self.core, role))
        return m
