"""Small integer helpers every layer uses: ``lg``, the common level of two addresses, and the
payload fields of a stream beat packed into one word."""

from __future__ import annotations

from ..params import check_power_of_two

__all__ = ["lg", "common_level", "pack_fields", "unpack_fields"]


def lg(n: int) -> int:
    """``lg n`` of a power of two ``n >= 2`` (the papers' lg: the number of address bits)."""
    check_power_of_two("n", n, 2)
    return n.bit_length() - 1


def common_level(src, dst):
    """The highest bit in which ``src`` and ``dst`` differ (-1 where they are equal).

    That is the level of the lowest common ancestor of two leaves of a binary tree, where a
    message turns. Works on ints and element-wise on integer numpy arrays (without importing
    numpy: the array case only uses its operators).
    """
    x = src ^ dst
    if getattr(x, "ndim", 0) == 0:  # an int or a numpy scalar
        return int(x).bit_length() - 1
    level = x * 0 - 1
    while (x > 0).any():
        level[x > 0] += 1
        x = x >> 1
    return level


def pack_fields(fields: dict[str, int], **values: int) -> int:
    """The payload bits of one beat: each field's value at its offset (fields low bits first,
    as an ``amaranth.lib.data.StructLayout`` of the same fields lays them out)."""
    word, offset = 0, 0
    for name, bits in fields.items():
        word |= (values[name] & ((1 << bits) - 1)) << offset
        offset += bits
    return word


def unpack_fields(fields: dict[str, int], word: int) -> dict[str, int]:
    """Inverse of :func:`pack_fields`."""
    values, offset = {}, 0
    for name, bits in fields.items():
        values[name] = (word >> offset) & ((1 << bits) - 1)
        offset += bits
    return values
