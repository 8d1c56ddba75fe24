"""The level-wise scheduler's definitions (Ding et al. 2006; the hardware is
:mod:`fattree.hdl.scheduler`): the general fat-tree FT(l, m, w), command codes, the fields of a
request and a result, and the pipeline's latency.

Fields are ``(name, bits)`` or ``(name, (bits, count))`` for an array, low bits first: the
hardware builds its ``amaranth.lib.data`` layouts from these lists, and a bench that packs
words by hand reads the same offsets.

FT(l, m, w) (section 2: ``m`` children and ``w`` parents per switch) is
:class:`~fattree.spec.topology.GeneralizedFatTree`, defined with FT(l, w) (its ``m == w``
case) in :mod:`fattree.spec.topology` and importable from here.
"""

from __future__ import annotations

import enum
from dataclasses import replace

from ..params import Contract, Param, check_int_range
from .topology import FatTree, GeneralizedFatTree

__all__ = [
    "SCHEDULER",
    "check_m",
    "Op",
    "OP_BITS",
    "port_bits",
    "node_bits",
    "request_fields",
    "result_fields",
    "field_offsets",
    "GeneralizedFatTree",
    "general_tree",
    "STAGES_PER_LEVEL",
    "pipeline_latency",
    "parse_m",
]


class Op(enum.IntEnum):
    """What a command asks of the scheduler (see :mod:`fattree.hdl.scheduler`)."""

    SCHEDULE = 0
    RELEASE = 1
    CLEAR = 2


OP_BITS = 2


def port_bits(w: int) -> int:
    """Bits of one port number ``0 .. w-1`` (``w`` a power of two)."""
    return max(0, (w - 1).bit_length())


def node_bits(levels: int, m: int) -> int:
    """Bits of a node number ``0 .. m**levels - 1`` (``m`` a power of two)."""
    return levels * port_bits(m)


def request_fields(levels: int, w: int, m: int | None = None) -> list:
    """``op``, ``src``, ``dst`` (nodes of FT(levels, m, w); ``m`` defaults to ``w``) and
    ``ports`` (``P_0 .. P_{l-2}``, read by ``RELEASE`` only)."""
    b, n = port_bits(w), node_bits(levels, w if m is None else m)
    return [("op", OP_BITS), ("src", n), ("dst", n), ("ports", (b, levels - 1))]


def result_fields(levels: int, w: int, m: int | None = None) -> list:
    """``op``, ``src``, ``dst``, ``granted`` and ``ports`` (``P_0 .. P_{l-2}``)."""
    b, n = port_bits(w), node_bits(levels, w if m is None else m)
    return [("op", OP_BITS), ("src", n), ("dst", n), ("granted", 1), ("ports", (b, levels - 1))]


def field_offsets(fields) -> dict[str, int]:
    """Bit offset of every field of a ``request_fields``/``result_fields`` list."""
    offsets, at = {}, 0
    for name, size in fields:
        offsets[name] = at
        at += size[0] * size[1] if isinstance(size, tuple) else size
    return offsets


def parse_m(text: str) -> int | str:
    """The design table's ``m`` from its text: ``""`` (m = w, FT(l, w)) or a power of two
    2..64 (``ValueError`` otherwise, in one line)."""
    if text == "":
        return ""
    try:
        value = int(text, 0)
    except ValueError:
        raise ValueError(f"m must be empty (m = w) or a power of two 2..64, not {text!r}") from None
    if not 2 <= value <= 64 or value & (value - 1):
        raise ValueError(f"m must be empty (m = w) or a power of two 2..64, not {text!r}")
    return value


#: Pipeline stages of one P_h block (M: read in flight, R: read registered, C: compute, U:
#: update; :mod:`fattree.hdl.scheduler`).
STAGES_PER_LEVEL = 4


def pipeline_latency(levels: int) -> int:
    """Cycles from a command's handshake to its result, without back-pressure: the input
    register, ``STAGES_PER_LEVEL`` per link level, two through the output FIFO. One command is
    taken per clock (initiation interval 1), so ``R`` commands take ``R - 1 + latency``."""
    levels = check_int_range("levels", levels, 2)
    return STAGES_PER_LEVEL * (levels - 1) + 3


def general_tree(tree) -> GeneralizedFatTree:
    """``tree`` as a :class:`GeneralizedFatTree`: a :class:`FatTree` FT(l, w) becomes
    FT(l, w, w) (the same numbers, and :meth:`~GeneralizedFatTree.digits` by level); a
    ``GeneralizedFatTree`` is returned as it is."""
    if isinstance(tree, FatTree):
        return GeneralizedFatTree(tree.levels, tree.w, tree.w)
    if isinstance(tree, GeneralizedFatTree):
        return tree
    raise TypeError(f"tree must be a FatTree or a GeneralizedFatTree, not {tree!r}")


#: Ports per switch side of the scheduler's trees (``w``, and ``m`` of FT(l, m, w)).
_PORTS = Param("w", 4, "ports per switch side (a power of two)", lo=2, hi=64, power_of_two=True)


def check_m(m) -> int | None:
    """The scheduler's ``m`` as a component takes it: None or ``""`` (m = w, FT(l, w)), or a
    power of two 2..64."""
    if m is None or (isinstance(m, str) and m == ""):
        return None
    return replace(_PORTS, name="m").check(m)


#: Ding's scheduler's parameters: the design table's, and what ``LevelWiseScheduler``
#: checks (its model takes the tree itself).
SCHEDULER = Contract(
    "scheduler",
    (
        Param("levels", 3, "levels l of the fat-tree FT(l, w)", lo=2, hi=6),
        _PORTS,
        # Empty by default, so FT(l, w)'s build folders and outputs stay as they were.
        Param(
            "m",
            "",
            "children per switch for FT(l, m, w) with w parents (a power of two "
            "2..64); empty: m = w",
            text=parse_m,
            value=check_m,
        ),
        Param(
            "memory",
            "auto",
            "link memories: auto (ECP5 DP16KD where they fit), portable or dp16kd",
            choices=("auto", "portable", "dp16kd"),
        ),
    ),
)
