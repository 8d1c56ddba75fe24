"""DeHon's unit trees and fat-trees of unit-tree stages, as data (DeHon 1993, "Unit trees"
and "Fat-tree composition"; the paper's tables of components and capacities are lost in its
text and are derived here from its construction rules: docs/dehon.md shows the derivation).

A **unit tree** joins 64 subtrees to one parent. It has four layers of RN1 routers: three
*down* layers (a quaternary tree: the top layer serves the level-3 node, the whole unit
tree; the middle layer the four level-2 nodes of 16 subtrees; the bottom layer the sixteen
level-1 nodes of four subtrees) and one *up* layer. An up router takes subtree up links and
sends direction 0, 1, 2 into the down routers of the level-1, level-2, level-3 node holding
its subtrees (the *lateral crossovers*) and direction 3 out of the top. Every subtree has
``width`` physical links each way: 2 (the unit tree that connects to processing nodes, which
have two network inputs and two outputs) or 8.

Counting links fixes everything (``w`` = width):

* up routers: ``64 w / 8 = 8 w`` (eight inputs each); each sends 2 links in each direction,
  so ``16 w`` links leave the top and ``16 w`` cross over at each level;
* down: the bottom layer has ``64 w`` outputs; its inputs are the middle layer's outputs
  plus ``16 w`` level-1 crossovers, so the middle layer has ``48 w`` outputs; likewise the
  top layer ``32 w``, whose inputs are the ``16 w`` links entering from the parent and the
  ``16 w`` level-3 crossovers, which closes the count;
* routers per layer ``4 w, 6 w, 8 w`` down and ``8 w`` up: ``26 w`` in all, 52 for the
  2-wide unit tree and 208 for the 8-wide (a quarter: the paper's one-foot and two-foot
  squares);
* capacity of a logical channel ``w, 3 w, 8 w, 16 w`` from a subtree up to the top: a factor
  16 over the unit tree's three levels, ``16^(1/3) = 4^(2/3)`` per level on average, as the
  paper says. Up and down capacities agree at every level.

The last down layer of the 2-wide unit tree is in the alternate (dual crossbar) mode, one
crossbar of each of two chips per level-1 node, so each processing node's two down links
come from different chips; so is its up layer, mirrored (chip ``2m + k`` takes link ``k`` of
the subtrees of level-1 nodes ``2m`` and ``2m + 1``, one crossbar each), so its two links up
enter different chips. The 8-wide unit tree's up routers take links ``i`` and ``i + 4`` of
the four subtrees of one level-1 node (a subtree's 8 links on four routers). Either way one
dead up router cuts no subtree off. Every other router is in the primary mode.

Links into a layer's routers are *dealt out* over the routers of the node so that the links
of one group (a router's two outputs of a direction; a level-1 node's two crossbars of the
2-wide up layer) land on different routers (:func:`fattree.spec.rn1_bidelta.deal_apart`):
one dead router or link never takes both ways of anything, and every pair of subtrees stays
connected under any one fault (the paper's "dispersed as widely as possible"). Regular: in
order, round-robin; with a ``seed`` a uniformly random such dealing (Leighton's random
wiring, DeHon-Knight-Minsky 1990).

:func:`fat_tree` composes unit trees into a fat-tree of ``stages`` unit-tree stages (2-wide
at the leaves, 8-wide above): each stage multiplies the processing nodes by 64.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from ..params import Contract, Param, check_int_range
from .rn1 import CHANNELS, DIRECTIONS, head_for, router_seed
from .rn1_bidelta import deal_apart

__all__ = [
    "RN1_UNIT_TREE",
    "RN1_FAT_TREE_NETWORK",
    "UNIT_WIDTHS",
    "SUBTREES",
    "LEVELS",
    "UP",
    "Router",
    "UnitTree",
    "unit_tree",
    "Stage",
    "FatTreeCounts",
    "fat_tree",
    "disperse",
    "place_stage_links",
    "WIRED_STAGES",
    "FatTreeNetwork",
    "fat_tree_network",
]

#: Physical links per subtree and direction of the two unit trees.
UNIT_WIDTHS = (2, 8)
#: Subtrees under one unit tree, and the tree levels it spans (64 = 4^3).
SUBTREES = 64
LEVELS = 3
#: The up routers' direction that leaves the unit tree (0, 1, 2: crossovers at level 1, 2, 3).
UP = 3


@dataclass(frozen=True)
class Router:
    """One RN1 of a unit tree: ``layer`` is ``"up"`` or ``"down1"``/``"down2"``/``"down3"``
    (the down layer serving level-1, -2, -3 nodes), ``node`` the index of the node it serves
    at that level (for a dual-crossbar chip: the first of the two level-1 nodes, crossbar
    ``c`` serving node ``node + c``; for up routers: the first subtree of the level-1 node it
    takes links from, a dual-crossbar up chip's crossbar ``c`` the subtrees ``node + 4 c``
    ..), ``mode`` the RN1 mode."""

    name: str
    layer: str
    node: int
    mode: str


def _check_width(width) -> int:
    if isinstance(width, bool) or not isinstance(width, int):  # 2.0 == 2, but range(2.0) fails
        raise TypeError(f"width must be 2 or 8, not {width!r}")
    if width not in UNIT_WIDTHS:
        raise ValueError(f"width must be 2 or 8, not {width!r}")
    return width


@dataclass
class UnitTree:
    """A unit tree's routers and links.

    Link ends are tuples: ``("in", router, port)``, ``("out", router, port)``,
    ``("sub_up", subtree, k)`` (link ``k`` from a subtree), ``("sub_down", subtree, k)``,
    ``("top_up", k)`` and ``("top_down", k)``. :attr:`links` holds ``(source, sink)`` pairs.
    """

    width: int
    seed: int | None = None
    routers: dict[str, Router] = field(default_factory=dict)
    links: list[tuple[tuple, tuple]] = field(default_factory=list)

    def inputs(self) -> list[tuple]:
        """The unit tree's input channels, in order: each subtree's ``width`` up links,
        then the ``16 width`` links entering the top."""
        return [("sub_up", t, k) for t in range(SUBTREES) for k in range(self.width)] + [
            ("top_down", k) for k in range(16 * self.width)
        ]

    def outputs(self) -> list[tuple]:
        """Its output channels: each subtree's down links, then the links leaving the top."""
        return [("sub_down", t, k) for t in range(SUBTREES) for k in range(self.width)] + [
            ("top_up", k) for k in range(16 * self.width)
        ]

    def router_modes(self, seed: int) -> dict[tuple, tuple[str, int]]:
        """``(name,) -> (mode, LFSR seed)`` of every router (the keys of the link ends)."""
        return {
            (name,): (r.mode, router_seed(seed, 0, k))
            for k, (name, r) in enumerate(sorted(self.routers.items()))
        }

    @staticmethod
    def route(src: int | None, dest: int | None) -> list[int]:
        """Directions, router by router, from subtree ``src`` (None: from the top) to
        subtree ``dest`` (None: out of the top): up to the lowest common node at level
        ``L`` (the up router's crossover ``L - 1``), then the destination's base-4 digits
        ``L - 1 .. 0``."""
        if src is None:
            return [(dest >> 2 * k) & 3 for k in reversed(range(LEVELS))]
        if dest is None:
            return [UP]
        if src == dest:
            raise ValueError(f"a subtree cannot route to itself ({src})")
        level = ((src ^ dest).bit_length() + 1) // 2
        return [level - 1] + [(dest >> 2 * k) & 3 for k in reversed(range(level))]

    @staticmethod
    def destination(src: int | None, head: int) -> int | None:
        """Inverse of :meth:`route`: where a head byte sent from ``src`` goes."""
        digits = [(head >> 2 * k) & 3 for k in range(4)]
        if src is None:
            level, digits = LEVELS, digits
        elif digits[0] == UP:
            return None
        else:
            level, digits = digits[0] + 1, digits[1:]
        dest = (src or 0) >> 2 * level << 2 * level
        for m in range(level):
            dest |= digits[m] << 2 * (level - 1 - m)
        return dest

    def layer_counts(self) -> dict[str, int]:
        """Routers per layer, top layer first, then the up layer."""
        counts = Counter(r.layer for r in self.routers.values())
        return {layer: counts[layer] for layer in ("down3", "down2", "down1", "up")}

    def subtrees_of(self, level: int, node: int) -> range:
        size = DIRECTIONS**level
        return range(node * size, (node + 1) * size)

    def capacity(self, level: int, node: int) -> tuple[int, int]:
        """``(up, down)`` physical links of the channel between the level-``level`` node
        ``node`` (level 0: a subtree, 3: the whole unit tree) and its parent, counted from
        :attr:`links`: links leaving the node's part of the unit tree, and entering it."""
        subtrees = set(self.subtrees_of(level, node))

        def inside(end) -> bool:
            kind = end[0]
            if kind in ("sub_up", "sub_down"):
                return end[1] in subtrees
            if kind in ("top_up", "top_down"):
                return False
            r = self.routers[end[1]]
            if r.layer == "up":  # serves a level-1 node (a dual-crossbar chip: one each)
                node1 = r.node // DIRECTIONS + (
                    end[2] // DIRECTIONS if r.mode == "alternate" else 0
                )
                return level >= 1 and set(self.subtrees_of(1, node1)) <= subtrees
            served = int(r.layer[-1])  # the level of the node the router serves
            # A dual-crossbar chip serves nodes r.node and r.node + 1, one per crossbar.
            node_ = r.node + end[2] // DIRECTIONS if r.mode == "alternate" else r.node
            return served <= level and set(self.subtrees_of(served, node_)) <= subtrees

        up = sum(1 for src, dst in self.links if inside(src) and not inside(dst))
        down = sum(1 for src, dst in self.links if inside(dst) and not inside(src))
        return up, down

    def channels(self) -> list[dict]:
        """Per level 0..3: logical channels, their capacity (every node's, checked equal),
        and the growth factor from the level below."""
        rows = []
        for level in range(LEVELS + 1):
            nodes = SUBTREES // DIRECTIONS**level
            caps = {self.capacity(level, n) for n in range(nodes)}
            if len(caps) != 1:
                raise AssertionError(f"level {level} nodes differ in capacity: {sorted(caps)}")
            ((up, down),) = caps
            rows.append({"level": level, "channels": nodes, "up": up, "down": down})
        for below, row in zip(rows, rows[1:], strict=False):
            row["growth"] = row["up"] / below["up"]
        return rows


def unit_tree(width: int, seed: int | None = None) -> UnitTree:
    """The unit tree whose subtrees have ``width`` (2 or 8) links each way; ``seed``
    shuffles the dealing of links into each node's routers (None: regular)."""
    w = _check_width(width)
    builder = _UnitTreeBuilder(UnitTree(w, seed), random.Random(seed) if seed is not None else None)
    builder.add_up_routers()
    builder.add_down_routers()
    for level in (3, 2, 1):
        for node in range(SUBTREES // DIRECTIONS**level):
            builder.wire_down_node(level, node)
    builder.wire_exits()
    return builder.tree


class _UnitTreeBuilder:
    """:func:`unit_tree`'s routers and links, added layer by layer to :attr:`tree`."""

    def __init__(self, tree: UnitTree, rng: random.Random | None):
        self.tree, self.rng = tree, rng
        self.w = tree.width
        #: The up routers' names, in order.
        self.ups: list[str] = []
        #: (level, node) -> the down routers' names.
        self.down: dict[tuple[int, int], list[str]] = {}
        #: Links each way of a node of each level: cap_0 .. cap_3.
        self.caps = {0: self.w, 1: 3 * self.w, 2: 8 * self.w, 3: 16 * self.w}

    def add(self, name, layer, node, mode="primary") -> str:
        self.tree.routers[name] = Router(name, layer, node, mode)
        return name

    def add_up_routers(self) -> None:
        """Up routers: a level-1 node's 4 w links, each subtree's links on different
        routers, so one dead up router cuts no subtree off (the widest dispersal the
        crossovers allow: an up router's inputs must lie in one level-1 node, whose node its
        direction 0 enters)."""
        w, links = self.w, self.tree.links
        level1 = SUBTREES // DIRECTIONS
        if w == 2:
            # A level-1 node's 8 links are one router's worth: dual-crossbar chips, shared by
            # node pairs, chip 2m + k taking link k of nodes 2m (crossbar 0) and 2m + 1
            # (crossbar 1), as the 2-wide unit tree's last down layer is built.
            for m in range(level1 // 2):
                for k in range(w):
                    name = self.add(f"up{2 * m + k}", "up", 2 * m * DIRECTIONS, "alternate")
                    self.ups.append(name)
                    for x in range(2):
                        for i in range(DIRECTIONS):
                            sub = (2 * m + x) * DIRECTIONS + i
                            links.append((("sub_up", sub, k), ("in", name, DIRECTIONS * x + i)))
            return
        # Four routers per level-1 node, router i taking links i and i + 4 of its subtrees.
        for n in range(level1):
            for i in range(DIRECTIONS):
                name = self.add(f"up{DIRECTIONS * n + i}", "up", DIRECTIONS * n)
                self.ups.append(name)
                for j in range(DIRECTIONS):
                    for h in range(2):
                        sub = DIRECTIONS * n + j
                        links.append((("sub_up", sub, i + 4 * h), ("in", name, 2 * j + h)))

    def add_down_routers(self) -> None:
        """Down routers per node, level 1 (bottom) to 3 (top): cap_{k-1} / 2 each."""
        for level in (1, 2, 3):
            for node in range(SUBTREES // DIRECTIONS**level):
                count = self.caps[level - 1] // 2
                if self.w == 2 and level == 1:
                    # Dual-crossbar chips, shared by node pairs: node 2j uses crossbar 0 of
                    # chips 2j and 2j + 1, node 2j + 1 crossbar 1 of the same chips.
                    pair = node - node % 2
                    names = [f"down1_{pair + c}" for c in range(2)]
                    for name in names:
                        if name not in self.tree.routers:
                            self.add(name, "down1", pair, "alternate")
                    self.down[level, node] = names
                else:
                    self.down[level, node] = [
                        self.add(f"down{level}_{node * count + k}", f"down{level}", node)
                        for k in range(count)
                    ]

    def outputs(self, name, d, node=None) -> list[int]:
        """Router ``name``'s output ports for direction ``d`` (for a dual-crossbar chip: of
        the crossbar serving ``node``, a level-1 node)."""
        if self.tree.routers[name].mode == "alternate":
            return [DIRECTIONS * (node % 2) + d]
        return [2 * d, 2 * d + 1]

    def inputs(self, name, node) -> list[int]:
        """Router ``name``'s input ports that serve ``node`` (a dual-crossbar chip: one
        crossbar's)."""
        if self.tree.routers[name].mode == "alternate":
            base = DIRECTIONS * (node % 2)
            return list(range(base, base + DIRECTIONS))
        return list(range(CHANNELS))

    def wire_down_node(self, level: int, node: int) -> None:
        """The inputs of a node's down routers: the links from above (the top, or the
        parent's down routers) and the crossovers of the up routers under the node, level-1
        node by level-1 node (2-wide: the node's two crossbars, its subtrees' two ways, as
        one group), dealt so that the links of a group (a router's two outputs of a
        direction, a subtree's two ways across) land on different routers
        (:func:`deal_apart`)."""
        tree, outputs = self.tree, self.outputs
        if level == 3:
            from_above = [[("top_down", k)] for k in range(self.caps[3])]
        else:
            parent = node // DIRECTIONS
            from_above = [
                [("out", name, p) for p in outputs(name, node % DIRECTIONS, parent)]
                for name in self.down[level + 1, parent]
            ]
        crossing = []
        for n1 in tree.subtrees_of(level - 1, node):
            if self.w == 2:
                chips = [u for u in self.ups if tree.routers[u].node // DIRECTIONS == n1 - n1 % 2]
                crossing.append([("out", u, p) for u in chips for p in outputs(u, level - 1, n1)])
            else:
                crossing += [
                    [("out", u, p) for p in outputs(u, level - 1)]
                    for u in self.ups
                    if tree.routers[u].node // DIRECTIONS == n1
                ]
        names = self.down[level, node]
        slots = [[("in", name, p) for p in self.inputs(name, node)] for name in names]
        tree.links.extend(deal_apart(from_above + crossing, slots, self.rng))

    def wire_exits(self) -> None:
        """The bottom layer's outputs to the subtrees; the up routers' direction UP out of
        the top (link k from up router k // 2)."""
        tree = self.tree
        for node in range(SUBTREES // DIRECTIONS):
            names = self.down[1, node]
            for d in range(DIRECTIONS):
                ends = [("out", name, p) for name in names for p in self.outputs(name, d, node)]
                sub = node * DIRECTIONS + d
                tree.links.extend((e, ("sub_down", sub, k)) for k, e in enumerate(ends))
        top = [
            ("out", u, p)
            for u in self.ups
            for p in (
                (UP, DIRECTIONS + UP)
                if tree.routers[u].mode == "alternate"
                else (2 * UP, 2 * UP + 1)
            )
        ]
        tree.links.extend((e, ("top_up", k)) for k, e in enumerate(top))


@dataclass(frozen=True)
class Stage:
    """One unit-tree stage of a fat-tree: ``nodes`` logical nodes of ``trees_per_node``
    unit trees of ``width``; ``top`` physical links each way out of one node."""

    stage: int
    width: int
    nodes: int
    trees_per_node: int
    routers: int
    top: int

    @property
    def trees(self) -> int:
        return self.nodes * self.trees_per_node


@dataclass(frozen=True)
class FatTreeCounts:
    stages: tuple[Stage, ...]
    processors: int

    @property
    def routers(self) -> int:
        return sum(s.routers for s in self.stages)


def fat_tree(stages: int, leaf_width: int = 2) -> FatTreeCounts:
    """Counts of a fat-tree of ``stages`` unit-tree stages: ``leaf_width``-wide unit trees at
    the processing nodes, 8-wide above. A parent node takes 64 child nodes whose top channels
    are ``c`` links each, so it is ``c / 8`` 8-wide unit trees, and its own top channel is
    16 times wider."""
    check_int_range("stages", stages, 1, 6)
    leaf = unit_tree(_check_width(leaf_width))
    per_tree = {w: sum(unit_tree(w).layer_counts().values()) for w in UNIT_WIDTHS}
    top_per_tree = {w: 16 * w for w in UNIT_WIDTHS}
    result = []
    child_top = None
    for s in range(1, stages + 1):
        nodes = SUBTREES ** (stages - s)
        if s == 1:
            width, per_node = leaf.width, 1
        else:
            width = 8
            per_node = child_top // width
        top = per_node * top_per_tree[width]
        result.append(Stage(s, width, nodes, per_node, nodes * per_node * per_tree[width], top))
        child_top = top
    return FatTreeCounts(tuple(result), SUBTREES**stages)


def disperse(
    child_trees: int, child_top: int, parent_trees: int, rng: random.Random | None = None
) -> list[tuple[int, int, int]]:
    """Wiring of one child node's top links into its parent node: ``(child tree, link,
    parent tree)`` for every top link, each child tree's links spread round-robin over the
    parent's unit trees (the paper's dispersion), every parent tree getting ``8`` links (one
    8-wide subtree port) from the child node.

    A unit tree's top links come in pairs from one up router (link ``k`` from up router
    ``k // 2``), so round-robin also sends an up router's two links to two parent trees: one
    parent tree removed never cuts an up router (and the nodes behind it) off. With ``rng``
    each round of ``parent_trees`` consecutive links goes to the parent trees in a random
    order (random wiring that keeps the dispersion)."""
    total = child_trees * child_top
    if total != parent_trees * CHANNELS:
        raise ValueError(
            f"{child_trees} child trees x {child_top} links do not fill {parent_trees} "
            f"parent trees' ports of {CHANNELS}"
        )
    order = list(range(parent_trees))
    wiring = []
    for t in range(child_trees):
        for k in range(child_top):
            n = t * child_top + k
            if rng is not None and n % parent_trees == 0:
                rng.shuffle(order)
            wiring.append((t, k, order[n % parent_trees]))
    return wiring


#: Fat-trees of unit-tree stages built as wiring (3 stages and more: counts only).
WIRED_STAGES = (1, 2)


def _sub(node: int, stage: int) -> int:
    """The subtree (0..63) under which processing node ``node`` lies in its stage-``stage``
    unit trees (stage 1: the node itself among its leaf unit tree's 64)."""
    return node // SUBTREES ** (stage - 1) % SUBTREES


@dataclass
class FatTreeNetwork:
    """A fat-tree of unit-tree stages as wiring, in the form :func:`fattree.hdl.rn1.network.
    wire_network` and :class:`fattree.sim.models.rn1.RN1NetworkModel` read.

    Unit tree ``(s, t)`` is tree ``t`` of stage ``s`` (1: the leaves, 2-wide; above, 8-wide);
    node ``x`` of stage ``s`` is trees ``x * per .. x * per + per - 1`` (``per`` unit trees
    per node, :func:`fat_tree`). Router keys are ``(s, t, name)`` (``name`` as in
    :class:`UnitTree`); link ends ``("in"|"out", s, t, name, port)``. A link that enters a
    unit tree from another passes a **swallow** element (one head byte per unit tree
    crossed: the swallow drops the byte the tree below or above has used up); its key is
    ``("sw", s, t, "sub", c, k)`` in front of subtree port ``c``'s link ``k`` of tree
    ``(s, t)``, or ``("sw", s, t, "top", k)`` in front of its top link ``k``; its ends
    ``("in"|"out", *key, 0)``.

    Edge channels: ``("ep_out", e, k)`` / ``("ep_in", e, k)`` (processing node ``e``'s link
    ``k`` into / out of the network), then the root unit trees' top links ``("top_down", t,
    k)`` / ``("top_up", t, k)`` (left open at the root, as channels of their own).
    """

    stages: int
    seed: int | None
    dispersed: bool
    trees: dict[tuple[int, int], UnitTree] = field(default_factory=dict)
    routers: dict[tuple, tuple[str, int]] = field(default_factory=dict)
    swallows: list[tuple] = field(default_factory=list)
    links: list[tuple[tuple, tuple]] = field(default_factory=list)
    inputs: list[tuple] = field(default_factory=list)
    outputs: list[tuple] = field(default_factory=list)
    #: Links between stages: child tree top link ``(s, t, k)`` -> ``(s + 1, parent tree,
    #: subtree port, link)``; the same pairs carry the links back down.
    joins: dict[tuple, tuple] = field(default_factory=dict)

    @property
    def nodes(self) -> int:
        """Processing nodes."""
        return SUBTREES**self.stages

    def stage_trees(self, stage: int) -> list[int]:
        return sorted(t for s, t in self.trees if s == stage)

    def route(self, src: int | None, dest: int | None) -> list[list[int]]:
        """Directions, one list per head byte (one byte per unit tree crossed), from node
        ``src`` to node ``dest`` (None: the root's top): up through stages ``1 .. c - 1``
        (direction :data:`UP`, one up router each), across the stage-``c`` unit tree whose
        subtrees hold both (:meth:`UnitTree.route`), then down the stages below from their
        top. ``c`` is the lowest stage whose node holds both: ``ceil(L / 3) + L`` routers for
        nodes whose lowest common tree node is at level ``L``, and ``2 (c - 1)`` swallows."""
        n = self.stages
        for x in (src, dest):
            if x is not None:
                check_int_range("node", x, 0, self.nodes - 1)
        if src is None:
            return [UnitTree.route(None, _sub(dest, s)) for s in range(n, 0, -1)]
        if dest is None:
            return [[UP]] * n
        if src == dest:
            raise ValueError(f"a node cannot route to itself ({src})")
        c = next(s for s in range(1, n + 1) if src // SUBTREES**s == dest // SUBTREES**s)
        return (
            [[UP]] * (c - 1)
            + [UnitTree.route(_sub(src, c), _sub(dest, c))]
            + [UnitTree.route(None, _sub(dest, s)) for s in range(c - 1, 0, -1)]
        )

    def heads(self, src: int | None, dest: int | None, fill: int = 0) -> list[int]:
        """The head bytes, first sent first, of :meth:`route` (other bits from ``fill``)."""
        return [head_for(d, fill) for d in self.route(src, dest)]

    def counts(self) -> list[dict]:
        """Per stage, counted from the wiring: unit trees, RN1 routers, and the links that
        leave one node's top upward (to the swallows of the parent, or the root's edge)."""
        rows = []
        for s in range(1, self.stages + 1):
            trees = self.stage_trees(s)
            per = len(trees) // SUBTREES ** (self.stages - s)
            node0 = set(trees[:per])
            top = sum(
                1
                for src, dst in self.links
                if src[0] == "out"
                and src[1:3] in {(s, t) for t in node0}
                and (dst[0] == "top_up" or (dst[0] == "in" and dst[1] == "sw" and dst[2] > s))
            )
            routers = sum(1 for key in self.routers if key[0] == s)
            rows.append({"stage": s, "trees": len(trees), "routers": routers, "top": top})
        return rows

    # -- faults: which processing nodes still reach which --------------------------------

    def owner(self, item: tuple) -> tuple[int, int]:
        """The unit tree ``(stage, tree)`` a router key, swallow key or link (named by its
        source end) belongs to: a swallow and the link out of it to the unit tree it enters,
        a processing node's link to its leaf unit tree, the root's top links to their tree."""
        if item[0] in ("in", "out"):
            item = item[1:-1]
        if item[0] == "sw":
            return item[1], item[2]
        if item[0] == "ep_out":
            return 1, item[1] // SUBTREES
        if item[0] == "top_down":
            return self.stages, item[1]
        return item[0], item[1]

    def _compiled(self, s: int, t: int) -> tuple:
        """Unit tree ``(s, t)`` as integers for :meth:`_walker`: its routers (sorted by
        name), which are in the alternate mode, and per router output the next router input
        (``8 * router + port``) or the end outside the tree it leads to."""
        graphs = self.__dict__.setdefault("_graphs", {})
        if (s, t) not in graphs:
            sink_of = self.__dict__.setdefault("_sink", dict(self.links))
            tree = self.trees[s, t]
            names = sorted(tree.routers)
            index = {name: r for r, name in enumerate(names)}

            def code(sink):
                if sink is not None and sink[0] == "in" and sink[1] != "sw":
                    return CHANNELS * index[sink[3]] + sink[4]
                return sink

            succ = [
                [code(sink_of.get(("out", s, t, name, o))) for o in range(CHANNELS)]
                for name in names
            ]
            alt = [tree.routers[name].mode == "alternate" for name in names]
            graphs[s, t] = (names, index, alt, succ, code)
        return graphs[s, t]

    def _walker(self, s: int, t: int, faults: frozenset, direction, terminal):
        """``reach(source end)``: OR of ``terminal(sink)`` over every sink outside unit tree
        ``(s, t)`` (or a swallow) a head reaches from that link source, each router taking
        either output of ``direction(router)``; ``faults`` are the tree's own (see
        :meth:`connected`)."""
        if ("stack",) in faults:
            return lambda end: 0
        names, index, alt, succ, code = self._compiled(s, t)
        tree, sink_of = self.trees[s, t], self._sink
        dead = set()  # router numbers
        cut = set()  # (router, output) of dead links
        for fault in faults:
            if fault[0] == "elem" and fault[1][0] != "sw":
                dead.add(index[fault[1][2]])
            elif fault[0] == "link" and fault[1][0] == "out" and fault[1][1] != "sw":
                cut.add((index[fault[1][3]], fault[1][4]))
        # Per router, the direction of each crossbar (a dual-crossbar up chip's two serve
        # different level-1 nodes, whose crossover levels toward a subtree may differ).
        dirs = [
            (direction(tree.routers[name], 0), direction(tree.routers[name], 1)) for name in names
        ]
        memo: dict[int, int] = {}

        def node(i: int) -> int:
            if i in memo:
                return memo[i]
            r, port = divmod(i, CHANNELS)
            res = 0
            if r not in dead:
                if alt[r]:
                    x = port // DIRECTIONS
                    outs = (DIRECTIONS * x + dirs[r][x],)
                else:
                    d = dirs[r][0]
                    outs = (2 * d, 2 * d + 1)
                for o in outs:
                    if (r, o) not in cut:
                        nxt = succ[r][o]
                        res |= node(nxt) if type(nxt) is int else terminal(nxt)
            memo[i] = res
            return res

        def reach(end) -> int:
            if ("link", end) in faults or end not in sink_of:
                return 0
            nxt = code(sink_of[end])
            return node(nxt) if type(nxt) is int else terminal(nxt)

        return reach

    @staticmethod
    def _toward(dest: int, up: bool = False):
        """A unit tree's routing to subtree ``dest`` (``up``: out of the top): an up router
        crosses over at the level of the lowest node holding its subtrees and ``dest``, a
        down router of layer ``downL`` takes digit ``L - 1`` of ``dest``."""

        def direction(r: Router, crossbar: int = 0) -> int:
            if r.layer == "up":
                first = r.node + DIRECTIONS * crossbar * (r.mode == "alternate")
                return UP if up else max(1, ((first ^ dest).bit_length() + 1) // 2) - 1
            return (dest >> 2 * (int(r.layer[-1]) - 1)) & 3

        return direction

    def _piece(self, what: str, s: int, t: int, faults: frozenset):
        """One unit tree's share of :meth:`connected`, cached by its own faults:

        * ``"leaf"`` (leaf tree): ``(inside, up, down)``: ``inside[a][b]``, node ``a`` reaches
          node ``b`` of the tree; ``up[a]``, bit mask of the tree's top links whose swallow a
          head from node ``a`` going up reaches; ``down[b]``, bit mask of the top links from
          whose swallow node ``b`` is reached;
        * ``"across"`` (parent tree): ``[c][d][j]`` bit mask of child ``d``'s top links
          (their swallows) reached from the swallow of child ``c``'s port link ``j``.
        """
        cache = self.__dict__.setdefault("_pieces", {})
        if (what, s, t, faults) in cache:
            return cache[what, s, t, faults]
        tree = self.trees[s, t]
        base = t * SUBTREES
        if what == "leaf":
            inside, down = [], []
            for b in range(SUBTREES):
                goal = {("ep_in", base + b, k) for k in range(tree.width)}
                reach = self._walker(s, t, faults, self._toward(b), lambda e, g=goal: int(e in g))
                inside.append(
                    [
                        a != b and any(reach(("ep_out", base + a, k)) for k in range(tree.width))
                        for a in range(SUBTREES)
                    ]
                )
                mask = 0
                for k in range(16 * tree.width):
                    sw = ("sw", s, t, "top", k)
                    if ("elem", sw) not in faults and reach(("out", *sw, 0)):
                        mask |= 1 << k
                down.append(mask)
            ups = self._up_channels(s, t)
            reach = self._walker(s, t, faults, self._toward(0, up=True), lambda e: ups.get(e, 0))
            up = [
                reach(("ep_out", base + a, 0)) | reach(("ep_out", base + a, 1))
                for a in range(SUBTREES)
            ]
            inside = [list(col) for col in zip(*inside, strict=True)]  # [a][b]
            result = (inside, up, down)
        else:  # across
            downs = self._down_channels(s, t)
            result = [[None] * SUBTREES for _ in range(SUBTREES)]
            for d in range(SUBTREES):
                # One walk per destination child serves every source child: an up router
                # takes links of one level-1 node's children, so its crossover level is
                # known from d alone (c == d, the one exception, is not asked).
                reach = self._walker(s, t, faults, self._toward(d), lambda e: downs.get(e, 0))
                for c in range(SUBTREES):
                    result[c][d] = [
                        0
                        if c == d or ("elem", ("sw", s, t, "sub", c, j)) in faults
                        else reach(("out", "sw", s, t, "sub", c, j, 0))
                        for j in range(tree.width)
                    ]
        cache[what, s, t, faults] = result
        return result

    def _up_channels(self, s: int, t: int) -> dict[tuple, int]:
        """Swallow input ends above tree ``(s, t)`` -> bit of the tree's top link."""
        return {
            ("in", "sw", ps, pt, "sub", c, j, 0): 1 << k
            for (cs, ct, k), (ps, pt, c, j) in self.joins.items()
            if (cs, ct) == (s, t)
        }

    def _down_channels(self, s: int, t: int) -> dict[tuple, int]:
        """Swallow input ends below parent tree ``(s, t)`` -> bit of the child tree's top
        link (which child: the ``across`` piece's ``d``)."""
        return {
            ("in", "sw", cs, ct, "top", k, 0): 1 << k
            for (cs, ct, k), (ps, pt, _, _) in self.joins.items()
            if (ps, pt) == (s, t)
        }

    def connected(self, dead=(), links=(), stacks=()):
        """``[src][dst]`` (a numpy bool array over processing nodes): some path from node
        ``src`` (either of its links) to ``dst`` avoids the faults, each router taking either
        output of the direction the route asks (as :meth:`Bidelta.connected`); the diagonal
        is False. ``dead``: router and swallow keys; ``links``: links named by their source
        end (the link into a swallow and the one out of it are one channel each way);
        ``stacks``: unit trees ``(stage, tree)`` removed whole (their routers and the
        swallows in front of them)."""
        import numpy as np

        faults: dict[tuple, set] = {}

        def add(item, fault):
            s, t = self.owner(item)
            faults.setdefault((s, t), set()).add(fault)

        for key in dead:
            add(key, ("elem", tuple(key)))
        for end in links:
            add(end, ("link", tuple(end)))
        for s, t in stacks:
            faults.setdefault((s, t), set()).add(("stack",))

        def own(s, t):
            return frozenset(faults.get((s, t), ()))

        n, leaves = self.nodes, self.stage_trees(1)
        result = np.zeros((n, n), dtype=bool)
        pieces = [self._piece("leaf", 1, x, own(1, x)) for x in leaves]
        for a_tree in leaves:
            block = slice(a_tree * SUBTREES, (a_tree + 1) * SUBTREES)
            result[block, block] = np.array(pieces[a_tree][0])
        if self.stages == 1:
            return result
        # Two stages: up the leaf tree, across one parent tree, down the other leaf tree.
        top = 16 * UNIT_WIDTHS[0]
        bits = np.arange(top)
        up = np.array([p[1] for p in pieces])  # [A][a] masks
        down = np.array([p[2] for p in pieces])
        u = ((up[:, :, None] >> bits) & 1).astype(np.float32)  # [A][a][k]
        dn = ((down[:, :, None] >> bits) & 1).astype(np.float32)  # [B][b][k']
        across = {p: self._piece("across", 2, p, own(2, p)) for p in self.stage_trees(2)}
        m = np.zeros((len(leaves), len(leaves), top, top), dtype=np.float32)  # [A][B][k][k']
        for (cs, ct, k), (_, pt, c, j) in self.joins.items():
            if cs != 1:
                continue
            masks = across[pt][c]
            m[ct, :, k, :] = (np.array([row[j] for row in masks])[:, None] >> bits) & 1
        for a_tree in leaves:
            paths = np.matmul(np.matmul(u[a_tree][None], m[a_tree]), dn.transpose(0, 2, 1))
            row = slice(a_tree * SUBTREES, (a_tree + 1) * SUBTREES)
            cross = (paths > 0).transpose(1, 0, 2).reshape(SUBTREES, n)  # [a][B * 64 + b]
            cross[:, row] = False
            result[row] |= cross
        return result


def fat_tree_network(
    stages: int, seed: int | None = None, lfsr_seed: int = 1, dispersed: bool = True
) -> FatTreeNetwork:
    """The fat-tree of ``stages`` (1 or 2) unit-tree stages as wiring: 2-wide unit trees at
    the processing nodes, 8-wide above (the counts of :func:`fat_tree`; 2 stages: 64 leaf
    and 4 parent unit trees, 4160 RN1, 4096 processing nodes).

    ``seed``: None wires every unit tree regularly and disperses each child node's links
    over the parent's unit trees in order (:func:`disperse`); a seed shuffles each unit
    tree's wiring and the dispersion's order (random wiring). ``dispersed=False`` wires a
    child's top links to the parent trees in blocks instead (links ``0 .. 7`` to the first
    parent tree, ...: the same parts, not dispersed), for the fault experiments. Router
    ``k`` (by name) of tree ``t`` of stage ``s`` gets LFSR seed ``router_seed(lfsr_seed,
    s - 1, t * routers_per_tree + k)``: one stage is the unit tree of :func:`unit_tree`
    with :meth:`UnitTree.router_modes` ``(lfsr_seed)``."""
    RN1_FAT_TREE_NETWORK.check("stages", stages)
    if seed is not None:
        RN1_FAT_TREE_NETWORK.check("seed", seed)
    check_int_range("lfsr_seed", lfsr_seed, 0)
    counts = fat_tree(stages)
    rng = random.Random(seed) if seed is not None else None
    net = FatTreeNetwork(stages, seed, dispersed)
    for st in counts.stages:
        for t in range(st.trees):
            tree_seed = rng.getrandbits(32) if rng is not None else None
            tree = net.trees[st.stage, t] = unit_tree(st.width, tree_seed)
            for k, name in enumerate(sorted(tree.routers)):
                net.routers[st.stage, t, name] = (
                    tree.routers[name].mode,
                    router_seed(lfsr_seed, st.stage - 1, t * len(tree.routers) + k),
                )
    # Stage joins: child tree top link -> (parent tree, subtree port, link) and back.
    up_of: dict[tuple, tuple] = {}
    for below, above in zip(counts.stages, counts.stages[1:], strict=False):
        child_top = 16 * below.width
        for node in range(below.nodes):
            if dispersed:
                wiring = disperse(below.trees_per_node, child_top, above.trees_per_node, rng)
            else:
                wiring = [
                    (t, k, (t * child_top + k) // CHANNELS)
                    for t in range(below.trees_per_node)
                    for k in range(child_top)
                ]
            slots = Counter()
            parent0 = node // SUBTREES * above.trees_per_node
            for t, k, p in wiring:
                child = (below.stage, node * below.trees_per_node + t)
                parent = (above.stage, parent0 + p)
                up_of[(*child, k)] = (*parent, node % SUBTREES, slots[p])
                slots[p] += 1
    top = 16 * counts.stages[-1].width
    place_stage_links(net, stages, up_of, leaf_nodes=SUBTREES, node_links=UNIT_WIDTHS[0], top=top)
    return net


def place_stage_links(
    net: FatTreeNetwork, stages: int, up_of: dict, *, leaf_nodes: int, node_links: int, top: int
) -> None:
    """Fill ``net``'s links, swallows and edge channels from its trees and the stage joins
    ``up_of`` (child tree top link ``(stage, tree, k)`` -> parent ``(stage, tree, subtree
    port, link)``): every tree's own links with their ends named in the network, a swallow in
    front of every link that enters a tree from another, the processing nodes' channels
    (``leaf_nodes`` per leaf tree, ``node_links`` each) and the top trees' ``top`` links each
    way. Shared by :func:`fat_tree_network` and :func:`fattree.spec.rn1_hybrid.hybrid_network`,
    whose leaves are unit trees or bidelta clusters."""
    down_of = {v: k for k, v in up_of.items()}
    net.joins = up_of

    def place(s, t, end):
        kind = end[0]
        if kind in ("in", "out"):
            return (kind, s, t, *end[1:])
        if s == 1 and kind in ("sub_up", "sub_down"):
            e = t * leaf_nodes + end[1]
            return ("ep_out" if kind == "sub_up" else "ep_in", e, end[2])
        if kind == "sub_up":  # from the child, through the swallow in front of the port
            return ("out", "sw", s, t, "sub", end[1], end[2], 0)
        if kind == "top_down" and s == stages:
            return ("top_down", t, end[1])
        if kind == "top_down":
            return ("out", "sw", s, t, "top", end[1], 0)
        if kind == "top_up" and s == stages:
            return ("top_up", t, end[1])
        if kind == "top_up":
            ps, pt, c, j = up_of[s, t, end[1]]
            return ("in", "sw", ps, pt, "sub", c, j, 0)
        # sub_down of a parent: to the swallow in front of the child's top link.
        cs, ct, k = down_of[s, t, end[1], end[2]]
        return ("in", "sw", cs, ct, "top", k, 0)

    for (s, t), tree in net.trees.items():
        net.links += [(place(s, t, src), place(s, t, dst)) for src, dst in tree.links]
    for (cs, ct, k), (ps, pt, c, j) in up_of.items():
        net.swallows += [("sw", ps, pt, "sub", c, j), ("sw", cs, ct, "top", k)]
    net.inputs = [("ep_out", e, k) for e in range(net.nodes) for k in range(node_links)]
    net.outputs = [("ep_in", e, k) for e in range(net.nodes) for k in range(node_links)]
    for t in net.stage_trees(stages):
        net.inputs += [("top_down", t, k) for k in range(top)]
        net.outputs += [("top_up", t, k) for k in range(top)]


#: The routers' seed of a network of RN1 (every router's LFSR seed is derived from it).
_ROUTER_SEED = Param("seed", 1, "seed of the routers' LFSRs", lo=0)

#: A unit tree alone: ``RN1UnitTree``, ``RN1UnitTreeModel``.
RN1_UNIT_TREE = Contract(
    "rn1-unit-tree",
    (
        Param(
            "width",
            2,
            "links per subtree and direction: 2 or 8",
            lo=min(UNIT_WIDTHS),
            hi=max(UNIT_WIDTHS),
            value=_check_width,
        ),
        _ROUTER_SEED,
    ),
)

#: DeHon's fat-tree of unit-tree stages without endpoints: ``RN1FatTree``,
#: ``RN1FatTreeModel``.
RN1_FAT_TREE_NETWORK = Contract(
    "rn1-fat-tree-network",
    (
        # 1 by default: fattree sim refuses two stages on both simulators, which ran
        # out of this machine's memory (sim/cocotb_runner.py TOO_BIG).
        Param(
            "stages",
            1,
            "unit-tree stages: 1 (52 RN1) or 2 (4160 RN1)",
            lo=min(WIRED_STAGES),
            hi=max(WIRED_STAGES),
        ),
        _ROUTER_SEED,
    ),
)
