"""DeHon's hybrid fat-trees as data: bidelta leaf clusters under unit-tree stages (DeHon 1993,
"Hybrid fat-trees"; the figure of a leaf cluster and the cluster names are lost in the text,
the construction below is derived from the rules it gives: docs/dehon.md, "Hybrid
fat-trees", shows the derivation).

The rules: a **bidelta leaf cluster** is "constructed in much the same way as a Transit
bidelta stack"; "each stage switches among four logical directions"; the first stage routes
"only three of the four logical directions" to the next stage of the cluster and "the fourth
logical direction ... connects to the fat-tree network"; "one-fourth of the inputs to the
first routing stage come from the fat-tree network rather than from the leaf cluster
processing nodes"; clusters of 12, 48 and 192 nodes; "Hybrid fat-trees are constructed
identically to standard fat-trees. Bidelta leaf clusters appear at the lowest level of the
tree instead of unit trees", (8-wide) unit trees form the inner nodes.

Counting links fixes the cluster (``n`` nodes, each with two links each way, as the
processing nodes of the 2-wide unit tree): the first stage's inputs are ``2n`` node links and
a third as many tree links (a quarter of all), ``8 r = 2n + 2n / 3``, so ``r = n / 3`` routers
(4, 16, 64), and ``2 r = 2n / 3`` links leave them upward in direction 3 (8, 32, 128). Their
directions 0, 1, 2 name a **third** of the cluster (``2 r`` links each); every later stage is
a bidelta stage over ``n / 4`` routers that names a quarter of what is left, down to groups
of four nodes: ``n = 3 * 4^(s - 1)`` for ``s`` stages (12: 2, 48: 3, 192: 4, one head byte
for the whole cluster). Routers: ``n / 3 + (s - 1) n / 4``: 7, 40, 208. The up links fit the
unit trees exactly: 8 is one subtree port of an 8-wide unit tree, 32 the top of a 2-wide one,
128 the top of an 8-wide one; so a parent node over 64 clusters of 12 is one 8-wide unit
tree, over clusters of 48 four (as over 2-wide leaf unit trees), over 192 sixteen.

Wiring choices (each argued in docs/dehon.md): node ``e``'s link 0 enters the first half of
the first stage, link 1 the second half (its two ways in never share a router); the tree's
links are dealt round-robin over the first stage (consecutive links, which come from one
parent router, land on different routers); between stages each router's links of a
direction are spread over the routers of the sub-group (``seed``: shuffled, Leighton's random
wiring, as :func:`fattree.spec.rn1_bidelta.bidelta`, keeping a router's two links on two
routers, so any one fault leaves every pair connected); the last stage is in the dual-crossbar
mode, group ``g`` on crossbar 0 of chip ``g`` and crossbar 1 of chip ``g + 1`` (mod the
chips: a ring, since 3 groups do not pair), so a node's two links in come from two chips;
up link ``k`` leaves first-stage router ``k // 2`` (as a unit tree's top link ``k`` leaves up
router ``k // 2``). Over the parent trees the up links are dispersed by **halves**
(:func:`cluster_disperse`): the first half of the first stage feeds the first half of the
parent trees, the second half the second, each router's two links to two different trees;
since a node's two links enter one router of each half, every node reaches four parent trees
(all of them when there are four), so any three of four parent trees can go.
:func:`fattree.spec.rn1_tree.disperse`'s round-robin would send both of a node's routers to
the same two trees (its routers ``e mod 8`` and ``8 + e mod 8`` have the same parity).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from ..params import Contract, Param, check_int_range
from .rn1 import CHANNELS, DIRECTIONS, head_for, router_seed
from .rn1_bidelta import deal_apart
from .rn1_tree import (
    SUBTREES,
    UP,
    FatTreeCounts,
    FatTreeNetwork,
    Router,
    Stage,
    UnitTree,
    disperse,
    place_stage_links,
    unit_tree,
)

__all__ = [
    "RN1_HYBRID",
    "CLUSTER_SIZES",
    "NODE_LINKS",
    "HYBRID_STAGES",
    "check_cluster",
    "LeafCluster",
    "leaf_cluster",
    "hybrid_fat_tree",
    "hybrid_locality",
    "cluster_disperse",
    "HybridNetwork",
    "hybrid_network",
]

#: Processing nodes of a bidelta leaf cluster (the paper's three sizes).
CLUSTER_SIZES = (12, 48, 192)
#: Links each way of one processing node.
NODE_LINKS = 2
#: Hybrid fat-trees built as wiring: the clusters alone (1) or under one unit-tree stage (2).
HYBRID_STAGES = (1, 2)
#: Inputs of a first-stage router from the tree (a quarter of 8), the rest from the nodes.
TREE_INPUTS = CHANNELS // 4


def check_cluster(cluster, name: str = "cluster") -> int:
    """A leaf cluster size (12, 48, 192), or an error naming the parameter ``name``."""
    if isinstance(cluster, bool) or not isinstance(cluster, int):
        raise TypeError(f"{name} must be 12, 48 or 192, not {cluster!r}")
    if cluster not in CLUSTER_SIZES:
        raise ValueError(f"{name} must be 12, 48 or 192, not {cluster!r}")
    return cluster


@dataclass
class LeafCluster:
    """A bidelta leaf cluster's routers and links, in the local form of :class:`UnitTree`.

    Routers are named ``s{j}_{r}`` (stage ``j``, router ``r``); their :class:`Router` layer is
    ``s{j}``, ``node`` the group they serve (stage 0: 0, the whole cluster). Link ends:
    ``("in"|"out", name, port)``, ``("sub_up", e, k)`` (node ``e``'s link ``k`` into the
    cluster), ``("sub_down", e, k)``, ``("top_up", k)`` (to the tree) and ``("top_down", k)``.
    """

    nodes: int
    seed: int | None = None
    routers: dict[str, Router] = field(default_factory=dict)
    links: list[tuple[tuple, tuple]] = field(default_factory=list)

    #: Links per node each way (the role of :attr:`UnitTree.width`).
    width = NODE_LINKS

    @property
    def stages(self) -> int:
        """Routing stages: one choosing a third (or the tree), then ``log4(n / 3)``."""
        return 1 + ((self.nodes // 3).bit_length() - 1) // 2

    @property
    def first(self) -> int:
        """Routers of the first stage: ``n / 3``."""
        return self.nodes // 3

    @property
    def per_stage(self) -> int:
        """Routers of every later stage: ``n / 4``."""
        return self.nodes // DIRECTIONS

    @property
    def top(self) -> int:
        """Links each way between the cluster and the tree: two per first-stage router."""
        return 2 * self.first

    def inputs(self) -> list[tuple]:
        return [("sub_up", e, k) for e in range(self.nodes) for k in range(NODE_LINKS)] + [
            ("top_down", k) for k in range(self.top)
        ]

    def outputs(self) -> list[tuple]:
        return [("sub_down", e, k) for e in range(self.nodes) for k in range(NODE_LINKS)] + [
            ("top_up", k) for k in range(self.top)
        ]

    def router_modes(self, seed: int) -> dict[tuple, tuple[str, int]]:
        """``(name,) -> (mode, LFSR seed)`` of every router."""
        return {
            (name,): (r.mode, router_seed(seed, 0, k))
            for k, (name, r) in enumerate(sorted(self.routers.items()))
        }

    def layer_counts(self) -> dict[str, int]:
        counts = Counter(r.layer for r in self.routers.values())
        return {f"s{j}": counts[f"s{j}"] for j in range(self.stages)}

    def digits(self, dest: int) -> list[int]:
        """Direction at each stage toward node ``dest``: its third (0..2), then base-4
        digits of ``dest mod n / 3``, most significant first."""
        check_int_range("node", dest, 0, self.nodes - 1)
        third, rest = divmod(dest, self.nodes // 3)
        return [third] + [(rest >> 2 * k) & 3 for k in reversed(range(self.stages - 1))]

    def route(self, src: int | None, dest: int | None) -> list[int]:
        """Directions router by router from node ``src`` (None: from the tree) to node
        ``dest`` (None: up to the tree). Every node (and the tree) is the same distance from
        ``dest``, as in a bidelta network: the cluster's stages."""
        if src is not None:
            check_int_range("node", src, 0, self.nodes - 1)
        if dest is None:
            if src is None:
                raise ValueError("a route needs a source or a destination")
            return [UP]
        if src == dest:
            raise ValueError(f"a node cannot route to itself ({src})")
        return self.digits(dest)

    def toward(self, dest: int | None):
        """The direction function of :meth:`FatTreeNetwork._walker` for this cluster's
        routers: toward node ``dest`` (None: up)."""
        digits = None if dest is None else self.digits(dest)

        def direction(r: Router, crossbar: int = 0) -> int:
            j = int(r.layer[1:])
            if digits is None:
                return UP
            return digits[j]

        return direction


def leaf_cluster(nodes: int, seed: int | None = None) -> LeafCluster:
    """The bidelta leaf cluster of ``nodes`` (12, 48 or 192) processing nodes; ``seed``
    shuffles the node links within their halves and every group's links between stages
    (None: regular)."""
    n = check_cluster(nodes, "nodes")
    if seed is not None:
        check_int_range("seed", seed, 0)
    rng = random.Random(seed) if seed is not None else None
    c = LeafCluster(n, seed)
    stages, first, per = c.stages, c.first, c.per_stage
    last = stages - 1

    def add(name, layer, group, mode="primary"):
        c.routers[name] = Router(name, layer, group, mode)
        return name

    firsts = [add(f"s0_{r}", "s0", 0) for r in range(first)]
    groups = {}  # (stage, group) -> router names (last stage: the group's two chips)
    for j in range(1, stages):
        count = 3 * DIRECTIONS ** (j - 1)
        size = per // count
        for g in range(count):
            if j == last:
                groups[j, g] = [f"s{j}_{g}", f"s{j}_{(g + 1) % count}"]
                add(f"s{j}_{g}", f"s{j}", g, "alternate")
            else:
                groups[j, g] = [add(f"s{j}_{g * size + k}", f"s{j}", g) for k in range(size)]

    def group_inputs(j, g):
        """Input ends of group ``g`` of stage ``j`` in dealing order: round-robin over its
        routers (last stage: crossbar 0 of its first chip, crossbar 1 of the second)."""
        names = groups[j, g]
        if j == last:
            ports = [range(0, 4), range(4, 8)]
        else:
            ports = [range(CHANNELS)] * len(names)
        return [
            ("in", names[m % len(names)], ports[m % len(names)][m // len(names)])
            for m in range(sum(map(len, ports)))
        ]

    def group_outputs(j, g, d):
        """Output ends of direction ``d`` of group ``g`` of stage ``j``, router by router
        (so dealing them round-robin sends a router's two links to different routers)."""
        if j == 0:
            names = firsts
        else:
            names = groups[j, g]
        if j == last:
            return [("out", names[0], d), ("out", names[1], DIRECTIONS + d)]
        return [("out", name, 2 * d + k) for name in names for k in (0, 1)]

    def deal(sources, sinks):
        if len(sources) != len(sinks):
            raise AssertionError(f"{len(sources)} links for {len(sinks)} inputs")
        order = list(sources)
        if rng is not None:
            rng.shuffle(order)
        c.links.extend(zip(order, sinks, strict=True))

    # First stage: 6 node links per router (link 0 of every node into the first half, link 1
    # into the second), 2 tree links per router dealt round-robin.
    half = first // 2
    for k in range(NODE_LINKS):
        names = firsts[k * half : (k + 1) * half]
        slots = [("in", names[m % half], m // half) for m in range(half * (CHANNELS - TREE_INPUTS))]
        deal([("sub_up", e, k) for e in range(n)], slots)
    for k in range(c.top):
        c.links.append((("top_down", k), ("in", firsts[k % first], 6 + k // first)))
    for k in range(c.top):
        c.links.append((("out", firsts[k // 2], 2 * UP + k % 2), ("top_up", k)))
    # Later stages: group g's direction d into sub-group 4 g + d (stage 0: d is the third).
    for j in range(stages):
        count = 1 if j == 0 else 3 * DIRECTIONS ** (j - 1)
        for g in range(count):
            for d in range(3 if j == 0 else DIRECTIONS):
                outs = group_outputs(j, g, d)
                if j == last:
                    e = g * DIRECTIONS + d
                    c.links.extend((o, ("sub_down", e, k)) for k, o in enumerate(outs))
                else:
                    # A router's two links of a direction onto different routers (chips at
                    # the last stage), random among such dealings with a seed: one dead
                    # router or link never takes both (single-fault tolerance).
                    sub = d if j == 0 else g * DIRECTIONS + d
                    names = groups[j + 1, sub]
                    ins = group_inputs(j + 1, sub)
                    routers = [ins[m :: len(names)] for m in range(len(names))]
                    pairs = [outs[k : k + 2] for k in range(0, len(outs), 2)]
                    c.links.extend(deal_apart(pairs, routers, rng))
    return c


def _unit_routers() -> int:
    return len(unit_tree(8).routers)


def hybrid_fat_tree(cluster: int, stages: int) -> FatTreeCounts:
    """Counts of the hybrid fat-tree of ``stages`` stages (1: one cluster, then 8-wide unit
    trees): as :func:`fattree.spec.rn1_tree.fat_tree`, with the leaf cluster's routers and
    up links at stage 1. Stage 1's ``width`` is the nodes' 2 links."""
    leaf = leaf_cluster(check_cluster(cluster))
    check_int_range("stages", stages, 1, 6)
    per_tree = _unit_routers()
    result, child_top = [], None
    for s in range(1, stages + 1):
        nodes = SUBTREES ** (stages - s)
        if s == 1:
            stage = Stage(1, NODE_LINKS, nodes, 1, nodes * len(leaf.routers), leaf.top)
        else:
            per_node = child_top // CHANNELS
            stage = Stage(s, 8, nodes, per_node, nodes * per_node * per_tree, per_node * 128)
        result.append(stage)
        child_top = stage.top
    return FatTreeCounts(tuple(result), cluster * SUBTREES ** (stages - 1))


def hybrid_locality(cluster: int, stages: int) -> list[dict]:
    """From one processing node: for each distance class, how many nodes lie there and how
    many routers and swallows a connection to them crosses. Inside the cluster: its stages.
    Through stage ``c >= 2`` at level ``L`` (1..3) of that stage's unit tree: the cluster's
    first router up, one up router per stage ``2 .. c - 1``, ``1 + L`` in the stage-``c``
    unit tree, three per stage ``c - 1 .. 2`` down, the cluster's stages; a swallow on each
    of the ``2 (c - 1)`` links between stacks."""
    leaf = leaf_cluster(check_cluster(cluster))
    check_int_range("stages", stages, 1, 6)
    rows = [
        {
            "class": "cluster",
            "stage": 1,
            "level": 0,
            "endpoints": cluster - 1,
            "routers": leaf.stages,
            "swallows": 0,
        }
    ]
    for c in range(2, stages + 1):
        below = cluster * SUBTREES ** (c - 2)
        for level in (1, 2, 3):
            rows.append(
                {
                    "class": f"stage {c} level {level}",
                    "stage": c,
                    "level": level,
                    "endpoints": below * 3 * DIRECTIONS ** (level - 1),
                    "routers": 1 + (c - 2) + (1 + level) + 3 * (c - 2) + leaf.stages,
                    "swallows": 2 * (c - 1),
                }
            )
    return rows


@dataclass
class HybridNetwork(FatTreeNetwork):
    """A hybrid fat-tree as wiring, in the form of :class:`FatTreeNetwork` (and with its
    interface: :meth:`route`, :meth:`heads`, :meth:`counts`, :meth:`connected`).

    Stage 1 holds the leaf clusters (``trees[1, t]`` a :class:`LeafCluster`), stage 2 the
    8-wide unit trees. Router keys ``(s, t, name)``; swallows ``("sw", 2, t, "sub", c, k)``
    in front of subtree port ``c``'s link ``k`` of parent tree ``t`` and ``("sw", 1, t,
    "top", k)`` in front of cluster ``t``'s top link ``k``. Edge channels: node ``e``'s
    links ``("ep_out", e, k)`` / ``("ep_in", e, k)`` (channel ``2 e + k``), then the top
    links of the highest stage ``("top_down", t, k)`` / ``("top_up", t, k)``.
    """

    cluster: int = 12

    @property
    def nodes(self) -> int:
        return self.cluster * SUBTREES ** (self.stages - 1)

    def route(self, src: int | None, dest: int | None) -> list[list[int]]:
        """Directions, one list per head byte (one per stack crossed): inside a cluster its
        stages; across clusters: up (direction 3 at the cluster's first stage), across the
        parent unit tree (:meth:`UnitTree.route` between the clusters' subtree ports), down
        the destination's cluster."""
        for x in (src, dest):
            if x is not None:
                check_int_range("node", x, 0, self.nodes - 1)
        if src is not None and src == dest:
            raise ValueError(f"a node cannot route to itself ({src})")
        leaf = self.trees[1, 0]
        n = self.cluster
        if dest is None:
            if src is None:
                raise ValueError("a route needs a source or a destination")
            return [[UP]] * self.stages
        down = leaf.route(None, dest % n)
        if self.stages == 1:
            return [down]
        a, b = dest // n, None if src is None else src // n
        if src is None:
            return [UnitTree.route(None, a), down]
        if a == b:
            return [down]
        return [[UP], UnitTree.route(b, a), down]

    def heads(self, src: int | None, dest: int | None, fill: int = 0) -> list[int]:
        return [head_for(d, fill) for d in self.route(src, dest)]

    def owner(self, item: tuple) -> tuple[int, int]:
        if item[0] in ("in", "out"):
            item = item[1:-1]
        if item[0] == "ep_out":
            return 1, item[1] // self.cluster
        return super().owner(item)

    def _cluster_piece(self, t: int, faults: frozenset):
        """Cluster ``t``'s share of :meth:`connected` (as ``FatTreeNetwork._piece("leaf")``):
        ``(inside, up, down)`` with ``inside[a][b]``, ``up[a]`` (bit mask of the cluster's
        top links a head from node ``a`` going up reaches), ``down[b]`` (bit mask of the top
        links from which node ``b`` is reached)."""
        cache = self.__dict__.setdefault("_pieces", {})
        if ("cluster", t, faults) in cache:
            return cache["cluster", t, faults]
        leaf = self.trees[1, t]
        base, n = t * self.cluster, self.cluster
        top = self.stages == 1

        def top_source(k):
            return ("top_down", t, k) if top else ("out", "sw", 1, t, "top", k, 0)

        inside, down = [], []
        for b in range(n):
            goal = {("ep_in", base + b, k) for k in range(NODE_LINKS)}
            reach = self._walker(1, t, faults, leaf.toward(b), lambda e, g=goal: int(e in g))
            inside.append(
                [
                    a != b and any(reach(("ep_out", base + a, k)) for k in range(NODE_LINKS))
                    for a in range(n)
                ]
            )
            mask = 0
            for k in range(leaf.top):
                sw = ("sw", 1, t, "top", k)
                if ("elem", sw) not in faults and reach(top_source(k)):
                    mask |= 1 << k
            down.append(mask)
        if top:
            ups = {("top_up", t, k): 1 << k for k in range(leaf.top)}
        else:
            ups = self._up_channels(1, t)
        reach = self._walker(1, t, faults, leaf.toward(None), lambda e: ups.get(e, 0))
        up = [reach(("ep_out", base + a, 0)) | reach(("ep_out", base + a, 1)) for a in range(n)]
        inside = [list(col) for col in zip(*inside, strict=True)]  # [a][b]
        cache["cluster", t, faults] = result = (inside, up, down)
        return result

    def connected(self, dead=(), links=(), stacks=()):
        """``[src][dst]`` as :meth:`FatTreeNetwork.connected`: some path from node ``src``
        (either link) to ``dst`` avoids the dead routers and swallows (``dead``), links
        (named by their source end) and stacks (``(1, t)``: a whole leaf cluster, ``(2,
        t)``: a parent unit tree, each with the swallows in front of it)."""
        import numpy as np

        faults: dict[tuple, set] = {}
        for key in dead:
            faults.setdefault(self.owner(tuple(key)), set()).add(("elem", tuple(key)))
        for end in links:
            faults.setdefault(self.owner(tuple(end)), set()).add(("link", tuple(end)))
        for s, t in stacks:
            faults.setdefault((s, t), set()).add(("stack",))

        def own(s, t):
            return frozenset(faults.get((s, t), ()))

        n, c = self.nodes, self.cluster
        leaves = self.stage_trees(1)
        result = np.zeros((n, n), dtype=bool)
        pieces = [self._cluster_piece(x, own(1, x)) for x in leaves]
        for x in leaves:
            result[x * c : (x + 1) * c, x * c : (x + 1) * c] = np.array(pieces[x][0])
        if self.stages == 1:
            return result
        top = self.trees[1, 0].top
        up = _bits([m for p in pieces for m in p[1]], top).reshape(len(leaves), c, top)
        dn = _bits([m for p in pieces for m in p[2]], top).reshape(len(leaves), c, top)
        across = {p: self._piece("across", 2, p, own(2, p)) for p in self.stage_trees(2)}
        by_child: dict[int, list] = {}
        for (_, ct, k), (_, pt, ch, j) in sorted(self.joins.items()):
            by_child.setdefault(ct, []).append((k, pt, ch, j))
        for a_tree in leaves:
            # m[B][k][k']: from a_tree's top link k, through its parent tree, to cluster B's
            # top link k' (the swallow in front of it).
            masks = [None] * top
            for k, pt, ch, j in by_child[a_tree]:
                masks[k] = [across[pt][ch][b][j] for b in leaves]
            m = _bits([x for k in range(top) for x in masks[k]], top)
            m = m.reshape(top, len(leaves), top).transpose(1, 0, 2)
            paths = np.matmul(np.matmul(up[a_tree][None], m), dn.transpose(0, 2, 1))
            rows = slice(a_tree * c, (a_tree + 1) * c)
            cross = (paths > 0).transpose(1, 0, 2).reshape(c, n)
            cross[:, rows] = False
            result[rows] |= cross
        return result


def _bits(masks: list[int], width: int):
    """``[len(masks)][width]`` float32 array of the masks' bits (masks may pass 64 bits)."""
    import numpy as np

    out = np.zeros((len(masks), width), dtype=np.float32)
    for lo in range(0, width, 32):
        chunk = np.array([(m >> lo) & 0xFFFFFFFF for m in masks], dtype=np.int64)
        span = min(32, width - lo)
        out[:, lo : lo + span] = (chunk[:, None] >> np.arange(span)) & 1
    return out


def cluster_disperse(
    top: int, parent_trees: int, rng: random.Random | None = None
) -> list[tuple[int, int, int]]:
    """Wiring of one leaf cluster's ``top`` up links into its parent node's
    ``parent_trees`` unit trees, as :func:`fattree.spec.rn1_tree.disperse` gives it (``(0,
    link, parent tree)``), 8 links into each tree, by halves: up link ``k`` leaves
    first-stage router ``r = k // 2``; the routers of the first half of the first stage
    (which every node's link 0 enters) go to the first half of the parent trees, the second
    half (links 1) to the second, round-robin within the half, so a router's two links reach
    two trees and a node's two routers four different ones. With ``rng`` each round over a
    half's trees is in a random order (random wiring that keeps this)."""
    if top != parent_trees * CHANNELS:
        raise ValueError(f"{top} up links do not fill {parent_trees} parent trees' ports")
    if parent_trees == 1:
        return [(0, k, 0) for k in range(top)]
    span = parent_trees // 2
    order = [list(range(span)), list(range(span, parent_trees))]
    wiring = []
    for k in range(top):
        h, m = divmod(k, top // 2)  # the half of the first stage, the link within it
        if rng is not None and m % span == 0:
            rng.shuffle(order[h])
        wiring.append((0, k, order[h][m % span]))
    return wiring


def hybrid_network(
    cluster: int = 12,
    stages: int = 2,
    seed: int | None = None,
    lfsr_seed: int = 1,
    dispersed: bool = True,
) -> HybridNetwork:
    """The hybrid fat-tree of ``cluster``-node leaf clusters (12, 48, 192) as wiring:
    ``stages`` 1 is one cluster with its up links as edge channels; 2 is 64 clusters under
    one node of 8-wide unit trees (1, 4 or 16 of them: a cluster's 8, 32 or 128 up links
    over 8-link subtree ports), a cluster's up links dispersed over the parent trees by
    :func:`cluster_disperse` (``dispersed=False``: in blocks, links ``0 .. 7`` to the first
    parent tree, ..., as :func:`fattree.spec.rn1_tree.fat_tree_network` has it).

    ``seed``: None wires regularly; a seed shuffles each stack's wiring and the dispersion's
    order. LFSR seeds: router ``k`` (by name) of stack ``t`` of stage ``s`` gets
    ``router_seed(lfsr_seed, s - 1, t * routers_per_stack + k)``."""
    RN1_HYBRID.check("cluster", cluster)
    RN1_HYBRID.check("stages", stages)
    if seed is not None:
        RN1_HYBRID.check("seed", seed)
    check_int_range("lfsr_seed", lfsr_seed, 0)
    if not isinstance(dispersed, bool):
        raise TypeError(f"dispersed must be True or False, not {dispersed!r}")
    counts = hybrid_fat_tree(cluster, stages)
    rng = random.Random(seed) if seed is not None else None
    net = HybridNetwork(stages, seed, dispersed, cluster=cluster)
    for st in counts.stages:
        for t in range(st.trees):
            tree_seed = rng.getrandbits(32) if rng is not None else None
            if st.stage == 1:
                tree = leaf_cluster(cluster, tree_seed)
            else:
                tree = unit_tree(8, tree_seed)
            net.trees[st.stage, t] = tree
            for k, name in enumerate(sorted(tree.routers)):
                net.routers[st.stage, t, name] = (
                    tree.routers[name].mode,
                    router_seed(lfsr_seed, st.stage - 1, t * len(tree.routers) + k),
                )
    up_of: dict[tuple, tuple] = {}
    for below, above in zip(counts.stages, counts.stages[1:], strict=False):
        child_top = below.top
        for node in range(below.nodes):
            if dispersed and below.stage == 1:
                wiring = cluster_disperse(child_top, above.trees_per_node, rng)
            elif dispersed:
                wiring = disperse(below.trees_per_node, child_top, above.trees_per_node, rng)
            else:
                wiring = [(0, k, k // CHANNELS) for k in range(child_top)]
            slots = Counter()
            parent0 = node // SUBTREES * above.trees_per_node
            for _, k, p in wiring:
                up_of[below.stage, node, k] = (above.stage, parent0 + p, node % SUBTREES, slots[p])
                slots[p] += 1
    top = counts.stages[-1].top // counts.stages[-1].trees_per_node
    place_stage_links(net, stages, up_of, leaf_nodes=cluster, node_links=NODE_LINKS, top=top)
    return net


#: DeHon's hybrid fat-tree: the design table's parameters, and what ``RN1Hybrid`` and
#: ``RN1HybridModel`` check.
RN1_HYBRID = Contract(
    "rn1-hybrid",
    (
        Param(
            "cluster",
            12,
            "nodes per leaf cluster: 12, 48 or 192",
            lo=min(CLUSTER_SIZES),
            hi=max(CLUSTER_SIZES),
            value=check_cluster,
        ),
        Param(
            "stages",
            2,
            "1: one cluster; 2: 64 clusters under unit trees",
            lo=min(HYBRID_STAGES),
            hi=max(HYBRID_STAGES),
        ),
        Param("seed", 1, "seed of the routers' LFSRs", lo=0),
    ),
)
