"""The level-wise scheduler's interface as data: command codes and the fields of a request
and a result (Ding et al. 2006; the hardware is :mod:`fattree.hdl.scheduler`).

Fields are ``(name, bits)`` or ``(name, (bits, count))`` for an array, low bits first: the
hardware builds its ``amaranth.lib.data`` layouts from these lists, and a bench that packs
words by hand reads the same offsets.
"""

from __future__ import annotations

import enum

__all__ = ["Op", "OP_BITS", "port_bits", "request_fields", "result_fields", "field_offsets"]


class Op(enum.IntEnum):
    """What a command asks of the scheduler (see :mod:`fattree.hdl.scheduler`)."""

    SCHEDULE = 0
    RELEASE = 1
    CLEAR = 2


OP_BITS = 2


def port_bits(w: int) -> int:
    """Bits of one port number ``0 .. w-1`` (``w`` a power of two)."""
    return max(0, (w - 1).bit_length())


def request_fields(levels: int, w: int) -> list[tuple[str, int | tuple[int, int]]]:
    """``op``, ``src``, ``dst`` and ``ports`` (``P_0 .. P_{l-2}``, read by ``RELEASE`` only)."""
    b = port_bits(w)
    return [("op", OP_BITS), ("src", levels * b), ("dst", levels * b), ("ports", (b, levels - 1))]


def result_fields(levels: int, w: int) -> list[tuple[str, int | tuple[int, int]]]:
    """``op``, ``src``, ``dst``, ``granted`` and ``ports`` (``P_0 .. P_{l-2}``)."""
    b = port_bits(w)
    return [
        ("op", OP_BITS),
        ("src", levels * b),
        ("dst", levels * b),
        ("granted", 1),
        ("ports", (b, levels - 1)),
    ]


def field_offsets(fields) -> dict[str, int]:
    """Bit offset of every field of a ``request_fields``/``result_fields`` list."""
    offsets, at = {}, 0
    for name, size in fields:
        offsets[name] = at
        at += size[0] * size[1] if isinstance(size, tuple) else size
    return offsets
