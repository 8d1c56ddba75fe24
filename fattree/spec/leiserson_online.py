"""Frames, latencies and delivery-cycle length of the on-line Leiserson fat-tree (no Amaranth).

Section II of Leiserson (1985) describes the fat-tree as an on-line network: messages are
batched into delivery cycles, messages that meet a congested concentrator are lost,
acknowledgements go back from destination to source, and what was not delivered is sent
again later. The design ``leiserson-online`` builds that (docs/leiserson.md, "On-line
operation"); the hardware and the model agree on these definitions only:

* **Frame** on a leaf's send wire: ``1`` (M bit), the address bits (:func:`address_bits`: at
  most ``2 lg n - 1``, no concentrator decision bits: the switches decide on-line), the
  source leaf (``lg n`` bits, MSB first), the data (MSB first).
* **Latency**: a node's selector takes :data:`SELECTOR_LATENCY` cycles, each concentrator
  stage :data:`STAGE_LATENCY` (its setting is decided in the M bit's cycle); an identity
  cascade and the channels take none. Acknowledgements travel the reverse path, one
  register per stage (:data:`STAGE_LATENCY`), through selectors and identity cascades
  without delay.
* **Delivery cycle** of :func:`cycle_length` cycles: ``start`` at cycle 0, frames leave at 1,
  the destination decides at its last bit, its acknowledgement reaches the sender's flag
  before the last cycle, in which the sender drops what was acknowledged.
"""

from __future__ import annotations

from dataclasses import replace

from ..params import Contract, Param, check_int_range
from .capacities import TreeLayout
from .leiserson_frames import LEISERSON_STREAM

__all__ = [
    "LEISERSON_ONLINE",
    "SELECTOR_LATENCY",
    "STAGE_LATENCY",
    "address_bits",
    "frame_bits",
    "path_ports",
    "path_latency",
    "path_stages",
    "latency_bound",
    "stages_bound",
    "cycle_length",
    "tx_fields",
    "rx_fields",
    "check_online_layout",
]

SELECTOR_LATENCY = 2
STAGE_LATENCY = 1


def check_online_layout(layout: TreeLayout) -> TreeLayout:
    """The on-line tree's network interfaces drive one wire per leaf."""
    if not isinstance(layout, TreeLayout):
        raise TypeError(f"layout must be a TreeLayout, not {layout!r}")
    if layout.cap(layout.levels) != 1:
        raise ValueError(
            f"the on-line tree needs one wire per leaf channel, not {layout.cap(layout.levels)}"
        )
    return layout


def _check_pair(leaves: int, src: int, dst: int) -> tuple[int, int]:
    check_int_range("src", src, 0, leaves - 1)
    check_int_range("dst", dst, 0, leaves - 1)
    if src == dst:
        raise ValueError(f"a message from leaf {src} to itself never enters the network")
    return src, dst


def address_bits(leaves: int, src: int, dst: int) -> list[int]:
    """The address bits of a message, in path order: ``1`` (up) at each node below the
    least common ancestor, ``0`` (across) at it, then at each node on the way down the
    destination's bit for that level (1 = right child). ``2g - 1`` bits for an ancestor at
    height g, so at most ``2 lg n - 1``."""
    src, dst = _check_pair(leaves, src, dst)
    g = (src ^ dst).bit_length()
    return [1] * (g - 1) + [0] + [(dst >> k) & 1 for k in range(g - 2, -1, -1)]


def frame_bits(leaves: int, src: int, dst: int, data: int, data_bits: int) -> list[int]:
    """The whole frame a source puts on its wire, first bit first."""
    h = leaves.bit_length() - 1
    check_int_range("data", data, 0, (1 << data_bits) - 1)
    src_bits = [(src >> k) & 1 for k in range(h - 1, -1, -1)]
    data_field = [(data >> k) & 1 for k in range(data_bits - 1, -1, -1)]
    return [1] + address_bits(leaves, src, dst) + src_bits + data_field


def path_ports(leaves: int, src: int, dst: int) -> list[tuple[int, str, str]]:
    """``(node, in_port, out_port)`` of every node on the path, heap numbering."""
    src, dst = _check_pair(leaves, src, dst)
    g = (src ^ dst).bit_length()
    hops = []
    node, came = leaves + src, None
    for _ in range(g):  # up to the least common ancestor
        came, node = "LR"[node & 1], node >> 1
        hops.append([node, came, "U"])
    hops[-1][2] = "R" if came == "L" else "L"
    for k in range(g - 2, -1, -1):  # down along the destination's bits
        node = 2 * node + (hops[-1][2] == "R")
        hops.append([node, "U", "LR"[(dst >> k) & 1]])
    return [tuple(h) for h in hops]


def path_stages(layout: TreeLayout, src: int, dst: int) -> int:
    """Concentrator stages a message passes (each one register on the reverse path)."""
    return sum(
        layout.cascade(node.bit_length() - 1, out).depth
        for node, _in, out in path_ports(layout.leaves, src, dst)
    )


def path_latency(layout: TreeLayout, src: int, dst: int) -> int:
    """Cycles from the M bit on the source's send wire to the M bit on ``dst``'s wire."""
    hops = path_ports(layout.leaves, src, dst)
    return SELECTOR_LATENCY * len(hops) + STAGE_LATENCY * path_stages(layout, src, dst)


def _root_turn(layout: TreeLayout, cost) -> int:
    # The costliest path turns at the root: up the U cascades of levels L-1 .. 1, across the
    # root's L/R cascade, down the L/R cascades of levels 1 .. L-1 (a cost is never negative).
    total = cost(0, "L")
    for level in range(1, layout.levels):
        total += cost(level, "U") + cost(level, "L")
    return total


def latency_bound(layout: TreeLayout) -> int:
    """The longest :func:`path_latency` of any leaf-to-leaf message."""
    return _root_turn(
        layout,
        lambda level, port: SELECTOR_LATENCY + STAGE_LATENCY * layout.cascade(level, port).depth,
    )


def stages_bound(layout: TreeLayout) -> int:
    """The most stages on any path."""
    return _root_turn(layout, lambda level, port: layout.cascade(level, port).depth)


def cycle_length(layout: TreeLayout, data_bits: int) -> int:
    """Cycles of one delivery cycle: ``start`` (0), the M bit leaves at 1, arrives at
    ``1 + lat``, the last bit (source and data) at ``T = 1 + lat + lg n + D``; the
    acknowledgement leaves at ``T + 1``, is on the sender's wire at ``T + 1 + S`` (S stages),
    in its flag at ``T + 2 + S``, which the last cycle (``length - 1``) reads."""
    h = layout.leaves.bit_length() - 1
    return latency_bound(layout) + h + data_bits + stages_bound(layout) + 4


def tx_fields(leaves: int, data_bits: int) -> dict[str, int]:
    """Fields of a transmit stream beat, low bits first: ``dst``, ``data``."""
    return {"dst": max(1, (leaves - 1).bit_length()), "data": data_bits}


def rx_fields(leaves: int, data_bits: int) -> dict[str, int]:
    """Fields of a receive stream beat, low bits first: ``src``, ``data``."""
    return {"src": max(1, (leaves - 1).bit_length()), "data": data_bits}


#: The on-line Leiserson fat-tree's parameters: the stream tree's (at most 256 leaves:
#: ``LeisersonOnline`` is built for that many), and the senders' queues
#: (``LeisersonOnline``, ``LeisersonOnlineModel``).
LEISERSON_ONLINE = Contract(
    "leiserson-online",
    (
        replace(LEISERSON_STREAM["leaves"], limit=None),
        *(LEISERSON_STREAM[name] for name in ("w", "seed", "data_bits")),
        Param(
            "queue",
            4,
            "messages each sender queues (a power of two)",
            lo=2,
            hi=64,
            power_of_two=True,
        ),
    ),
)
