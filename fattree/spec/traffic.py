"""The papers' traffic patterns, one definition each: who node ``p`` of ``n = 2^h`` sends to.

Strumpen and Krishnamurthy (section 7, Figs. 6-7) use transpose, bit reversal and cyclic
shift; the benches add a hot spot. Each function works on one int or element-wise on an
integer numpy array of node numbers (only operators are used, so no numpy import here).
A node mapped to itself sends nothing: callers drop those pairs.

Transpose for odd ``h`` (the paper only uses even ``h``): the address is rotated by
``h // 2`` bits, i.e. its low ``h // 2`` bits move to the top. For even ``h`` that is the
swap of the two halves.
"""

from __future__ import annotations

__all__ = [
    "PATTERNS",
    "FIXED_PATTERNS",
    "HOT_SPOT",
    "transpose",
    "bit_reversal",
    "cyclic_shift",
    "hot_spot",
    "destination",
]

#: The pattern names the benches and the command line accept.
PATTERNS = ("random", "transpose", "bit-reversal", "shift", "hotspot")

#: The patterns in which every node has one fixed destination (all but ``random``).
FIXED_PATTERNS = ("transpose", "bit-reversal", "shift", "hotspot")

#: The node every other node sends to in the hot-spot pattern.
HOT_SPOT = 0


def transpose(p, h: int):
    """Swap the high and low halves of the ``h``-bit address (rotate by ``h // 2`` bits)."""
    half = h // 2
    return ((p & ((1 << half) - 1)) << (h - half)) | (p >> half)


def bit_reversal(p, h: int):
    """Node ``p_1 .. p_h`` sends to ``p_h .. p_1``."""
    q = p * 0
    for b in range(h):
        q = q | (((p >> b) & 1) << (h - 1 - b))
    return q


def cyclic_shift(p, n: int, k: int):
    """Node ``p`` sends to ``(p + k) mod n``."""
    return (p + k) % n


def hot_spot(p):
    """Every node sends to :data:`HOT_SPOT`."""
    return p * 0 + HOT_SPOT


def destination(pattern: str, p, h: int, *, shift: int = 1):
    """Where node ``p`` of ``2^h`` sends under one of :data:`FIXED_PATTERNS` (``shift``: the
    cyclic shift's distance)."""
    if pattern == "transpose":
        return transpose(p, h)
    if pattern == "bit-reversal":
        return bit_reversal(p, h)
    if pattern == "shift":
        return cyclic_shift(p, 1 << h, shift)
    if pattern == "hotspot":
        return hot_spot(p)
    raise ValueError(f"pattern must be one of {', '.join(FIXED_PATTERNS)}, not {pattern!r}")
