"""Channel capacities of Leiserson fat-trees and the plan of every node's switches (no Amaranth).

Leiserson (Fat-Trees, 1985, section IV) numbers channels by the level of the node beneath
them: the root's channel to the external interface is at level 0, the channels of the n
processors at level ``lg n``. A *universal* fat-tree with root capacity w,
``n^(2/3) <= w <= n``, has at level k::

    cap(k) = min(ceil(n / 2^k), ceil(w / 2^(2k/3)))

computed here in exact integers: ``ceil(w / 2^(2k/3))`` is the least c with
``c^3 * 4^k >= w^3``, so no floating-point power is ever taken.

:class:`TreeLayout` is the structure the RTL and the scheduler share: the capacity of every
level, and for each node level the concentrator cascade in front of each output port with
the order of its input groups (Fig. 3: each output port is fed by the selectors of the two
other input ports)::

    U_o <- [L_i up branch (cap k+1), R_i up branch (cap k+1)]    -> cap k
    L_o <- [U_i zero branch (cap k),  R_i cross branch (cap k+1)] -> cap k+1
    R_o <- [U_i one branch (cap k),   L_i cross branch (cap k+1)] -> cap k+1

for a node at level k. Address bits: on L_i and R_i, 1 sends the message up and 0 across to
the other child; on U_i, 1 sends it to the right child (R_o) and 0 to the left (L_o).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..params import UNBOUNDED, Contract, Param, check_int_range, check_power_of_two
from .concentrator_graph import Cascade, build_cascade

__all__ = [
    "ceil_cbrt",
    "universal_capacity",
    "universal_capacities",
    "check_root_capacity",
    "check_capacity_profile",
    "PORT_GROUPS",
    "TreeLayout",
    "stage_crosspoints",
    "node_components",
    "LEISERSON_TREE",
]


def ceil_cbrt(x: int) -> int:
    """The least integer c >= 0 with c^3 >= x (exact, for any int x >= 0)."""
    if x < 0:
        raise ValueError(f"x must be non-negative, not {x}")
    c = 1 << -(-x.bit_length() // 3)  # c^3 >= 2^bit_length > x
    lo, hi = 0, c
    while lo < hi:
        mid = (lo + hi) // 2
        if mid**3 >= x:
            hi = mid
        else:
            lo = mid + 1
    return lo


def check_root_capacity(leaves: int, w) -> int:
    """``w`` must be an integer with ``n^(2/3) <= w <= n`` (checked as n^2 <= w^3)."""
    check_int_range("w", w, 1)
    if w > leaves or w**3 < leaves**2:
        lo = ceil_cbrt(leaves**2)
        raise ValueError(
            f"root capacity w must satisfy n^(2/3) <= w <= n, i.e. {lo} <= w <= {leaves} "
            f"for n = {leaves} leaves, not {w}"
        )
    return w


def universal_capacity(leaves: int, w: int, k: int) -> int:
    """cap(k) = min(ceil(n/2^k), ceil(w/2^(2k/3))), exactly."""
    by_leaves = -(-leaves // (1 << k))
    # ceil(w / 2^(2k/3)) = least c with c^3 >= w^3 / 4^k, i.e. c^3 >= ceil(w^3 / 4^k).
    by_root = ceil_cbrt(-(-(w**3) // (1 << (2 * k))))
    return min(by_leaves, by_root)


def universal_capacities(leaves: int, w: int | None = None) -> tuple[int, ...]:
    """``(cap(0), ..., cap(lg n))`` of the universal fat-tree; ``w`` defaults to ``n``."""
    check_power_of_two("leaves", leaves, 2)
    w = leaves if w is None else check_root_capacity(leaves, w)
    levels = leaves.bit_length() - 1
    return tuple(universal_capacity(leaves, w, k) for k in range(levels + 1))


def check_capacity_profile(leaves: int, capacities) -> tuple[int, ...]:
    """A user profile: ``lg n + 1`` positive integers, level 0 (root) first."""
    check_power_of_two("leaves", leaves, 2)
    levels = leaves.bit_length() - 1
    if isinstance(capacities, (str, bytes)) or not hasattr(capacities, "__iter__"):
        raise TypeError(
            f"capacities must be a list of {levels + 1} positive integers, not {capacities!r}"
        )
    caps = tuple(capacities)
    if len(caps) != levels + 1 or any(
        not isinstance(c, int) or isinstance(c, bool) or c < 1 for c in caps
    ):
        raise ValueError(
            f"capacities must be a list of {levels + 1} positive integers (levels 0..{levels}, "
            f"root first) for {leaves} leaves, not {list(caps)!r}"
        )
    return caps


#: For each output port: the (input port, selector branch) groups feeding its cascade, in the
#: order of the cascade's inputs. Branch 1 is the selector's ``one`` output.
PORT_GROUPS = {
    "U": (("L", 1), ("R", 1)),
    "L": (("U", 0), ("R", 0)),
    "R": (("U", 1), ("L", 0)),
}


@dataclass(frozen=True)
class TreeLayout:
    """Leaves, capacities and the switch plan of a Leiserson fat-tree.

    Nodes use heap numbering: the root is 1, node v has children 2v and 2v+1, leaf i is
    ``leaves + i``; node v is at level ``v.bit_length() - 1``. Every node at one level has the
    same cascades (same graphs, same seed).
    """

    leaves: int
    capacities: tuple[int, ...]
    seed: int = 0

    @classmethod
    def universal(cls, leaves: int, w: int | None = None, seed: int = 0) -> TreeLayout:
        return cls(leaves, universal_capacities(leaves, w), seed)

    def __post_init__(self):
        object.__setattr__(self, "capacities", check_capacity_profile(self.leaves, self.capacities))

    @property
    def levels(self) -> int:
        """Height of the tree: leaves are at level ``levels`` (= log2 n)."""
        return self.leaves.bit_length() - 1

    def cap(self, level: int) -> int:
        return self.capacities[level]

    def group_widths(self, level: int, port: str) -> tuple[int, ...]:
        """Widths of the input groups of a node's ``port`` cascade, at node ``level``."""
        width = {"U": self.cap(level), "L": self.cap(level + 1), "R": self.cap(level + 1)}
        return tuple(width[p] for p, _ in PORT_GROUPS[port])

    def group_offset(self, level: int, port: str, in_port: str) -> int:
        """Index of the first cascade input fed by ``in_port`` at ``port``'s cascade."""
        offset = 0
        for (p, _), width in zip(PORT_GROUPS[port], self.group_widths(level, port), strict=True):
            if p == in_port:
                return offset
            offset += width
        raise ValueError(f"input port {in_port} does not feed output port {port}")

    def out_width(self, level: int, port: str) -> int:
        return self.cap(level) if port == "U" else self.cap(level + 1)

    def cascade(self, level: int, port: str) -> Cascade:
        """The concentrator switch in front of output ``port`` of every node at ``level``."""
        return _cascade(sum(self.group_widths(level, port)), self.out_width(level, port), self.seed)

    def up_capacity(self, level: int) -> int:
        """Messages the up channel at ``level`` (1..levels) carries for sure in one cycle.

        Leaves choose their own wires; above, the node's U cascade guarantees only its
        verified ``k`` (the alpha-derated capacity of section IV).
        """
        if level == self.levels:
            return self.cap(level)
        return min(self.cap(level), self.cascade(level, "U").guaranteed)

    def down_capacity(self, level: int) -> int:
        """Same for the down channel at ``level``, fed by the L/R cascade of its parent."""
        return min(self.cap(level), self.cascade(level - 1, "L").guaranteed)


@functools.lru_cache(maxsize=256)
def _cascade(r: int, s: int, seed: int) -> Cascade:
    return build_cascade(r, s, seed=seed)


def stage_crosspoints(r: int, s: int) -> int:
    """Edges (switch positions) of the stage :func:`build_partial_concentrator` makes for
    ``r -> s``, without building it: r for the identity, r*s when complete, else 6r."""
    if s >= r:
        return r
    if r <= 9 and s <= 6:
        return r * s
    return min(6, s) * r


def node_components(capacities, level: int) -> dict[str, int]:
    """Hardware of one node at ``level``: selectors (one per input wire), stage inputs (one
    switch controller each) and crosspoints (graph edges) of its three cascades. Counted
    from the capacities alone, so it scales to any n."""
    from .concentrator_graph import cascade_sizes

    up, down = capacities[level], capacities[level + 1]
    groups = {"U": (2 * down, up), "L": (up + down, down), "R": (up + down, down)}
    stage_inputs = crosspoints = 0
    for r, s in groups.values():
        sizes = cascade_sizes(r, s)
        for a, b in zip(sizes, sizes[1:], strict=False):
            stage_inputs += a
            crosspoints += stage_crosspoints(a, b)
    return {
        "selectors": up + 2 * down,
        "stage_inputs": stage_inputs,
        "crosspoints": crosspoints,
    }


#: The Leiserson fat-tree's parameters: the design table's, and what ``LeisersonFatTree``
#: checks (its capacities are the universal ones of ``leaves`` and ``w``).
LEISERSON_TREE = Contract(
    "leiserson-tree",
    (
        # 256 keeps the command line's builds to minutes; the tree takes any power of two.
        Param(
            "leaves",
            16,
            "processors (a power of two)",
            lo=2,
            hi=256,
            power_of_two=True,
            limit=UNBOUNDED,
        ),
        # Checked against leaves (check_root_capacity).
        Param("w", 0, "root capacity, n^(2/3) <= w <= n; 0 means w = n", lo=0),
        Param("seed", 0, "seed of the concentrator graphs", lo=0),
        # 2: +6 % iCE40, +9 % ECP5 Fmax (docs/leiserson.md); users raise start early.
        Param(
            "start_lead",
            2,
            "cycles start is raised before its delivery cycle (register tree)",
            lo=0,
            hi=4,
        ),
    ),
)
