"""Frames and delivery-cycle timing of a Leiserson fat-tree (docs/leiserson.md, "Timing").

A message is one bit-serial frame on one wire: ``1`` (the M bit), its header (at every node on
its path one address bit, then the decision bits of each concentrator stage in front of the
chosen output), then its data. The node timing the hardware documents and the model follows:
a node's input selector takes :data:`SELECTOR_LATENCY` cycles (M bit in at t, out at t + 2),
a stage with b decision bits takes b + 1.

The bounds here are over every path through a :class:`TreeLayout`, so a delivery cycle of
:func:`cycle_length` cycles lets any frame of any schedule arrive whole before the next one
starts (the stream ports of :mod:`fattree.hdl.leiserson_stream` time their cycles by it).
"""

from __future__ import annotations

from ..params import UNBOUNDED, Contract, Param
from .capacities import LEISERSON_TREE, TreeLayout

__all__ = [
    "SELECTOR",
    "LEISERSON_STREAM",
    "SELECTOR_LATENCY",
    "header_bits_bound",
    "latency_bound",
    "cycle_length",
    "tx_fields",
    "rx_fields",
]

SELECTOR_LATENCY = 2


def _node(layout: TreeLayout, level: int, ports: str) -> tuple[int, int]:
    """(header bits, latency) of the costliest of ``ports`` at a node of ``level``."""
    worst = (0, 0)
    for port in ports:
        bits = layout.cascade(level, port).decision_bits
        worst = max(worst, (1 + sum(bits), SELECTOR_LATENCY + sum(b + 1 for b in bits)))
    return worst


def _path_bound(layout: TreeLayout, which: int) -> int:
    # The longest path turns at the root: up through the U cascades of levels L-1 .. 1, across
    # the root's L/R cascade, down through the L/R cascades of levels 1 .. L-1. Every cost is
    # at least 0, so a turn lower down never costs more.
    total = _node(layout, 0, "LR")[which]
    for level in range(1, layout.levels):
        total += _node(layout, level, "U")[which] + _node(layout, level, "LR")[which]
    return total


def header_bits_bound(layout: TreeLayout) -> int:
    """The most header bits any leaf-to-leaf message needs (M bit and data not counted)."""
    return _path_bound(layout, 0)


def latency_bound(layout: TreeLayout) -> int:
    """The most cycles from a message's M bit leaving its leaf to its arrival at another."""
    return _path_bound(layout, 1)


def cycle_length(layout: TreeLayout, data_bits: int) -> int:
    """Cycles from ``start`` until every wire is quiet again: the longest latency plus the
    longest frame (M bit, header, data)."""
    return latency_bound(layout) + 1 + header_bits_bound(layout) + data_bits


def tx_fields(header_bits: int, data_bits: int) -> dict[str, int]:
    """Fields of a transmit stream beat, low bits first: ``header`` (its first bit to go out
    in bit ``header_len - 1``), ``header_len``, ``data`` (MSB goes out first)."""
    return {"header": header_bits, "header_len": header_bits.bit_length(), "data": data_bits}


def rx_fields(wires: int, data_bits: int) -> dict[str, int]:
    """Fields of a receive stream beat: ``data``, then ``wire`` (the leaf wire it came on)."""
    return {"data": data_bits, "wire": (wires - 1).bit_length()}


#: The selector's parameters: the design table's, and what ``Selector`` and
#: ``SelectorModel`` check.
SELECTOR = Contract(
    "selector",
    # 1024 keeps the command line's builds small; the selector takes any width.
    (Param("width", 8, "wires in the input bundle", lo=1, hi=1024, limit=UNBOUNDED),),
)

#: The Leiserson fat-tree behind stream ports: the tree's parameters but its start lead,
#: and the data bits (``LeisersonStreamTree``, ``LeisersonStreamModel``).
LEISERSON_STREAM = Contract(
    "leiserson-stream",
    (
        *(LEISERSON_TREE[name] for name in ("leaves", "w", "seed")),
        Param("data_bits", 8, "data bits per message", lo=1, hi=64),
    ),
)
