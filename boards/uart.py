"""A status line on the board's UART, e.g. ``frames 0001a2b3 error 0``, about once a second.

The LEDs say whether a self-test passes; the UART says how much it has checked. Both boards
have a USB serial bridge on their programming port (iCEBreaker: the FTDI's second channel;
ULX3S: the FTDI), so ``picocom -b 115200 /dev/ttyUSB1`` (or whichever port) shows the count
growing. Transmit only, 8 data bits, no parity, one stop bit.
"""

from __future__ import annotations

import re

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..hdl._validation import validates_parameters
from ..params import check_int_range

__all__ = ["UARTTx", "StatusReporter", "status_line", "parse_status_line", "SELECTOR_FIELDS"]


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


def status_line(frames: int | None = None, error: int | None = None, *, fields=None) -> str:
    """The line :class:`StatusReporter` sends, in Python (for tests and host tools).

    ``status_line(frames, error)`` is the selector's line; ``fields`` is a sequence of
    ``(name, bits, value)``: each field is printed as its name, a space and ``ceil(bits / 4)``
    lower-case hex digits, fields separated by one space, the line ended by CR LF.
    """
    if fields is None:
        fields = (("frames", 32, frames or 0), ("error", 1, error or 0))
    parts = []
    for name, bits, value in fields:
        digits = -(-bits // 4)
        parts.append(f"{name} {value & ((1 << bits) - 1):0{digits}x}")
    return " ".join(parts) + "\r\n"


def parse_status_line(line: str) -> dict[str, int]:
    """``{name: value}`` of a status line (:func:`status_line`); ``ValueError`` if it is not one."""
    words = line.strip().split(" ")
    if len(words) < 2 or len(words) % 2:
        raise ValueError(f"not a status line: {line!r}")
    values = {}
    for name, digits in zip(words[::2], words[1::2], strict=True):
        if not name.isidentifier() or not re.fullmatch("[0-9a-f]+", digits):
            raise ValueError(f"not a status line: {line!r}")
        values[name] = int(digits, 16)
    return values


#: Fields of the selector's line: ``frames`` (32 bits) and ``error`` (1 bit).
SELECTOR_FIELDS = (("frames", 32), ("error", 1))


class StatusReporter(wiring.Component):
    """Sends :func:`status_line` of its inputs every ``2**period_log2`` cycles.

    The values are latched when a line starts, so a line never mixes two counts.

    Parameters
    ----------
    divisor : int
        Clock cycles per UART bit.
    period_log2 : int
        A line starts every ``2**period_log2`` cycles; it must leave time to send the
        line (``len(line) * 10 * divisor`` cycles), or lines follow each other back to back.
    fields : sequence of (str, int)
        Name and width in bits of each value on the line, in order; one input port per
        field, named after it. Default: the selector's ``frames`` (32) and ``error`` (1).

    Attributes
    ----------
    <name> : In(bits)
        One per field.
    tx : Out(1)
    """

    @validates_parameters
    def __init__(self, divisor: int, period_log2: int, fields=SELECTOR_FIELDS):
        self.divisor = check_int_range("divisor", divisor, 2)
        self.period_log2 = check_int_range("period_log2", period_log2, 1, 40)
        self.fields = tuple(
            (str(name), check_int_range("bits", bits, 1, 64)) for name, bits in fields
        )
        names = [name for name, _ in self.fields]
        if not names or len(set(names)) != len(names) or "tx" in names:
            raise ValueError(f"fields must have distinct names other than 'tx', not {names!r}")
        super().__init__({name: In(bits) for name, bits in self.fields} | {"tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.uart = uart = UARTTx(self.divisor)
        m.d.comb += self.tx.eq(uart.tx)

        # The fixed text as a small ROM, and which of its characters are hex digits.
        template = status_line(fields=[(name, bits, 0) for name, bits in self.fields])
        digit_at = []
        pos = 0
        for name, bits in self.fields:
            pos += len(name) + 1
            digits = -(-bits // 4)
            digit_at.extend(range(pos, pos + digits))
            pos += digits + 1
        n_digits = len(digit_at)

        timer = Signal(self.period_log2)
        due = Signal()  # a line is due; cleared when it starts
        m.d.sync += timer.eq(timer + 1)
        with m.If(timer == (1 << self.period_log2) - 1):
            m.d.sync += due.eq(1)

        # All fields, latched, each padded to whole hex digits, first field on top; shifts up
        # one hex digit per digit sent.
        snapshot = Cat(
            *(
                Cat(getattr(self, name), Const(0, 4 * -(-bits // 4) - bits))
                for name, bits in reversed(self.fields)
            )
        )
        digits = Signal(4 * n_digits)
        index = Signal(range(len(template) + 1), init=len(template))  # == len: idle
        char = Signal(8)

        rom = Array(Const(ord(c), 8) for c in template)
        is_digit_rom = Array(Const(int(k in digit_at), 1) for k in range(len(template) + 1))
        nibble = digits[-4:]
        is_digit = Signal()
        m.d.comb += is_digit.eq(is_digit_rom[index])
        with m.If(is_digit):
            m.d.comb += char.eq(Mux(nibble < 10, ord("0") + nibble, ord("a") - 10 + nibble))
        with m.Else():
            m.d.comb += char.eq(rom[index])

        with m.If((index == len(template)) & due):
            m.d.sync += [digits.eq(snapshot), index.eq(0), due.eq(0)]
        with m.Elif((index < len(template)) & uart.ready):
            m.d.comb += [uart.valid.eq(1), uart.data.eq(char)]
            m.d.sync += index.eq(index + 1)
            with m.If(is_digit):
                m.d.sync += digits.eq(digits << 4)
        return m
