"""A status line on the board's UART: ``frames 0001a2b3 error 0`` about once a second.

The LEDs say whether a self-test passes; the UART says how much it has checked. Both boards
have a USB serial bridge on their programming port (iCEBreaker: the FTDI's second channel;
ULX3S: the FTDI), so ``picocom -b 115200 /dev/ttyUSB1`` (or whichever port) shows the count
growing. Transmit only, 8 data bits, no parity, one stop bit.
"""

from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..hdl._validation import validates_parameters
from ..params import check_int_range

__all__ = ["UARTTx", "StatusReporter", "status_line"]


class UARTTx(wiring.Component):
    """8N1 transmitter.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit (``round(clock_hz / baud)``), at least 2.

    Attributes
    ----------
    data : In(8)
        Byte to send, taken when ``valid`` and ``ready`` are both high.
    valid : In(1)
    ready : Out(1)
        High while idle and in the last cycle of a stop bit.
    tx : Out(1)
        The serial line (idles high).
    """

    @validates_parameters
    def __init__(self, divisor: int):
        self.divisor = check_int_range("divisor", divisor, 2)
        super().__init__({"data": In(8), "valid": In(1), "ready": Out(1), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        shift = Signal(10, init=0x3FF)  # stop bit, 8 data bits LSB first, start bit
        bits_left = Signal(range(11))
        timer = Signal(range(self.divisor))
        bit_done = timer == 0
        # Ready already in the last cycle of the stop bit, so bytes can follow back to back
        # with no idle cycle between them.
        m.d.comb += [
            self.ready.eq((bits_left == 0) | ((bits_left == 1) & bit_done)),
            self.tx.eq(shift[0]),
        ]
        with m.If(self.valid & self.ready):
            m.d.sync += [
                shift.eq(Cat(Const(0, 1), self.data, Const(1, 1))),
                bits_left.eq(10),
                timer.eq(self.divisor - 1),
            ]
        with m.Elif(bits_left != 0):
            with m.If(bit_done):
                m.d.sync += [
                    shift.eq(Cat(shift[1:], Const(1, 1))),
                    bits_left.eq(bits_left - 1),
                    timer.eq(self.divisor - 1),
                ]
            with m.Else():
                m.d.sync += timer.eq(timer - 1)
        return m


def status_line(frames: int, error: int) -> str:
    """The line :class:`StatusReporter` sends, in Python (for tests and host tools)."""
    return f"frames {frames & 0xFFFFFFFF:08x} error {error & 1}\r\n"


_TEMPLATE = status_line(0, 0)
# Positions of the hex digits of `frames` (most significant first) and of the error digit.
_FRAME_DIGITS = range(len("frames "), len("frames ") + 8)
_ERROR_DIGIT = len("frames 00000000 error ")


class StatusReporter(wiring.Component):
    """Sends :func:`status_line` of ``frames`` and ``error`` every ``2**period_log2`` cycles.

    The values are latched when a line starts, so a line never mixes two counts.

    Parameters
    ----------
    divisor : int
        Clock cycles per UART bit.
    period_log2 : int
        A line starts every ``2**period_log2`` cycles; it must leave time to send the
        line (``25 * 10 * divisor`` cycles), or lines follow each other back to back.

    Attributes
    ----------
    frames : In(32)
    error : In(1)
    tx : Out(1)
    """

    @validates_parameters
    def __init__(self, divisor: int, period_log2: int):
        self.divisor = check_int_range("divisor", divisor, 2)
        self.period_log2 = check_int_range("period_log2", period_log2, 1, 40)
        super().__init__({"frames": In(32), "error": In(1), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.uart = uart = UARTTx(self.divisor)
        m.d.comb += self.tx.eq(uart.tx)

        timer = Signal(self.period_log2)
        due = Signal()  # a line is due; cleared when it starts
        m.d.sync += timer.eq(timer + 1)
        with m.If(timer == (1 << self.period_log2) - 1):
            m.d.sync += due.eq(1)

        digits = Signal(32)  # `frames`, latched; shifts up one hex digit per digit sent
        error = Signal()
        index = Signal(range(len(_TEMPLATE) + 1), init=len(_TEMPLATE))  # == len: idle
        char = Signal(8)

        # The fixed text as a small ROM; one hex converter reads the top digit.
        template = Array(Const(ord(c), 8) for c in _TEMPLATE)
        nibble = digits[28:]
        is_digit = (index >= _FRAME_DIGITS.start) & (index < _FRAME_DIGITS.stop)
        with m.If(is_digit):
            m.d.comb += char.eq(Mux(nibble < 10, ord("0") + nibble, ord("a") - 10 + nibble))
        with m.Elif(index == _ERROR_DIGIT):
            m.d.comb += char.eq(ord("0") + error)
        with m.Else():
            m.d.comb += char.eq(template[index])

        with m.If((index == len(_TEMPLATE)) & due):
            m.d.sync += [digits.eq(self.frames), error.eq(self.error), index.eq(0), due.eq(0)]
        with m.Elif((index < len(_TEMPLATE)) & uart.ready):
            m.d.comb += [uart.valid.eq(1), uart.data.eq(char)]
            m.d.sync += index.eq(index + 1)
            with m.If(is_digit):
                m.d.sync += digits.eq(digits << 4)
        return m
