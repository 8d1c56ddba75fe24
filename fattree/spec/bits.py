"""Small integer helpers every layer uses: ``lg`` and the common level of two addresses."""

from __future__ import annotations

from ..params import check_power_of_two

__all__ = ["lg", "common_level"]


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
