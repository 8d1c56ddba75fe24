"""A whole Leiserson fat-tree (Fat-Trees, 1985, sections II and IV) from :class:`FatTreeNode`.

Processors sit at the ``leaves``; node v (heap numbering, root 1) at level k has channels of
``capacities[k]`` wires to its parent and ``capacities[k + 1]`` to each child. Leaf i sends
on ``send[i]`` and receives on ``recv[i]`` (``capacities[-1]`` wires each); the root's
channel is the external interface (``root_i``, ``root_o``).

Messages are bit-serial, one per wire: M bit, header (address and concentrator decision
bits, :mod:`fattree.sim.models.leiserson_schedule`), data. ``start`` begins a delivery cycle;
a message may start on its wire in the ``start`` cycle or later. The switch settings are
off-line: they travel in the headers, computed by the scheduler for each delivery cycle.

``start`` reaches every flip-flop of the tree; at the fabric's clock one register cannot
drive them all. With ``start_lead = d`` (1..4) the user asserts ``start`` d cycles before
the delivery cycle and the tree spreads it through d levels of registered copies (per tree
level, per node, per port inside a node, twice; :func:`~fattree.hdl.fat_tree_node.start_copy`), so
that every copy reaches its consumers in the delivery cycle itself: the tree behaves cycle
for cycle as with ``start_lead = 0`` and ``start`` d cycles later (the reference model's
timing, unchanged). On the command line it is the design parameter ``start_lead``
(``fattree sim/synth/build leiserson-tree -p start_lead=2``): the check, the soak and the board
self-test then raise ``start`` d cycles early themselves.
"""

from __future__ import annotations

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..spec.capacities import (
    LEISERSON_TREE,
    TreeLayout,
    check_capacity_profile,
    check_root_capacity,
)
from ._validation import validates_parameters
from .fat_tree_node import FatTreeNode, start_copy

__all__ = ["LeisersonFatTree", "leiserson_tree"]


class LeisersonFatTree(wiring.Component):
    """A fat-tree of ``leaves`` processors with the given capacities.

    Parameters
    ----------
    leaves : int
        Number of processors, a power of two, at least 2.
    capacities : list of int, optional
        Wires per channel at levels 0 (root) .. lg n (leaves); ``lg n + 1`` positive integers.
    w : int, optional
        Root capacity of a universal fat-tree, ``n^(2/3) <= w <= n`` (default ``n``). Give
        ``capacities`` or ``w``, not both.
    seed : int
        Seed of the concentrator graphs (each verified to alpha >= 3/4), at least 0.
    start_lead : int
        Cycles ``start`` comes before the delivery cycle it begins, 0..4 (default 0): the
        depth of the register tree that spreads it (inside the nodes for 1 and 2, then per
        node, then per tree level).

    Attributes
    ----------
    start : In(1)
        Begins a delivery cycle (``start_lead`` cycles later).
    send, recv : In(cap(lg n)).array(leaves), Out(cap(lg n)).array(leaves)
        The leaves' channels.
    root_i, root_o : In(cap(0)), Out(cap(0))
        The external interface at the root.
    layout : TreeLayout
        Capacities and graphs, shared with the scheduler and the reference model.
    """

    @validates_parameters
    def __init__(
        self,
        leaves: int,
        capacities=None,
        *,
        w: int | None = None,
        seed: int = 0,
        start_lead: int = 0,
    ):
        LEISERSON_TREE.check("leaves", leaves)
        LEISERSON_TREE.check("seed", seed)
        self.start_lead = LEISERSON_TREE.check("start_lead", start_lead)
        if capacities is not None and w is not None:
            raise ValueError("give either capacities or w, not both")
        if capacities is None:
            w = check_root_capacity(leaves, w) if w else leaves  # None or 0: w = n
            self.layout = TreeLayout.universal(leaves, w, seed)
        else:
            self.layout = TreeLayout(leaves, check_capacity_profile(leaves, capacities), seed)
        layout = self.layout
        self.leaves = leaves
        self.nodes = {
            v: FatTreeNode(layout, v.bit_length() - 1, start_lead=min(start_lead, 2))
            for v in range(1, leaves)
        }
        leaf_width, root_width = layout.cap(layout.levels), layout.cap(0)
        super().__init__(
            {
                "start": In(1),
                "send": In(leaf_width).array(leaves),
                "recv": Out(leaf_width).array(leaves),
                "root_i": In(root_width),
                "root_o": Out(root_width),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n, lead = self.leaves, self.start_lead
        # The register tree for `start` above the nodes (the nodes hold the last level).
        per_level = {
            k: start_copy(m, self.start, f"start_level{k}") if lead >= 4 else self.start
            for k in range(self.layout.levels)
        }
        for v, node in self.nodes.items():
            m.submodules[f"node{v}"] = node
            level_start = per_level[v.bit_length() - 1]
            node_start = start_copy(m, level_start, f"start_node{v}") if lead >= 3 else level_start
            m.d.comb += node.start.eq(node_start)
            for child, (i, o) in zip(
                (2 * v, 2 * v + 1), ((node.l_i, node.l_o), (node.r_i, node.r_o)), strict=True
            ):
                if child >= n:
                    m.d.comb += [i.eq(self.send[child - n]), self.recv[child - n].eq(o)]
                else:
                    below = self.nodes[child]
                    m.d.comb += [i.eq(below.u_o), below.u_i.eq(o)]
        root = self.nodes[1]
        m.d.comb += [root.u_i.eq(self.root_i), self.root_o.eq(root.u_o)]
        return m


def leiserson_tree(leaves: int, w: int = 0, seed: int = 0, start_lead: int = 0) -> LeisersonFatTree:
    """The command line's ``leiserson-tree`` design: universal capacities, ``w = 0`` means n,
    ``start`` ``start_lead`` cycles before its delivery cycle."""
    return LeisersonFatTree(leaves, w=w or None, seed=seed, start_lead=start_lead)
