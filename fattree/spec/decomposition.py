"""Decomposition trees of routing networks (Leiserson 1985, section V), as data and algorithms.

A routing network R on a set P of processors has a ``[w_0, ..., w_r]`` *decomposition tree*
when P (with the network's other vertices) splits in two, each half in two again, and so on
for r levels until each set holds at most one processor, and every set at level i exchanges
at most ``w_i`` bits per unit time with the rest. Here R is a :class:`Graph` (unit-capacity
edges, processors a subset of the vertices) and the bandwidth of a vertex set is the number of
edges leaving it, so the whole vertex set (level 0) has bandwidth 0: a closed network.

A tree of depth r is stored as one number per vertex, the leaf (0 .. 2^r - 1) it lies in; the
set of node q at level i is every vertex whose leaf has q as its top i bits
(:class:`DecompositionTree`). The paper's pieces:

* Theorem 5's cutting planes (:func:`cutting_plane_tree`): a network laid out in a cube is cut
  by planes perpendicular to x, y, z in turn through the middle of each box; a vertex's leaf
  is the Morton (bit-interleaved) code of its lattice point.
* Lemma 6, the pearl-cutting lemma (:func:`pearl_cut`): two strings of black and white pearls
  are split with at most two cuts into two sets of at most two strings each, with half the
  pearls of each colour in each set. The continuity argument of the paper (Fig. 4) is run as
  a scan: the circle L + S, an arc A of half the pearls rotated back over S, then its part in
  L slid along L; every move changes the blacks in A by at most one, so some position has
  half of them. With odd counts the blacks are split within one.
* Lemma 7 (:func:`subtree_forest`): the maximal complete subtrees whose leaves lie in a run
  of consecutive leaves; at most two of each height, the largest of height at most lg k.
* Theorem 8 (:func:`balance`): the tree's leaves on a line, processors black and empty
  leaves white; Lemma 6 applied recursively gives a balanced tree T' of depth ceil(lg n)
  whose sets are at most two runs of T's leaves. Its bound ``w'_i = 4 sum_{k>=i} w_k``
  (:func:`theorem8_bound`) and Corollary 9's ``(4 alpha/(alpha-1) w, alpha)``
  (:func:`corollary9_bound`) are formulas here; the tests check the measured cuts against
  them, the code path does not assume them.

Pure Python and numpy; no Amaranth.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

from ..params import check_int_range, check_positive_int, check_power_of_two

__all__ = [
    "Graph",
    "DecompositionTree",
    "PearlCut",
    "BalancedTree",
    "MAX_VERTICES",
    "MAX_DEPTH",
    "pearl_cut",
    "subtree_forest",
    "balance",
    "cutting_plane_tree",
    "morton",
    "theorem5_bound",
    "theorem8_bound",
    "corollary9_bound",
    "alpha_width",
    "mesh",
    "binary_tree_network",
    "hypercube_graph",
    "random_graph",
    "random_mesh_subgraph",
]

#: Largest graph the builders and trees take (a tree's leaf line is walked in numpy).
MAX_VERTICES = 1 << 20
#: Deepest decomposition tree (its leaf line has 2^depth positions).
MAX_DEPTH = 24


# -- graphs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Graph:
    """An undirected multigraph on ``vertices`` vertices (0 .. vertices-1), unit-capacity
    ``edges`` (pairs), ``processors`` a subset of the vertices (default: all of them), and
    optionally ``coords``, a lattice point ``(x, y, z)`` per vertex (the layout Theorem 5 cuts).
    """

    vertices: int
    edges: tuple[tuple[int, int], ...]
    processors: tuple[int, ...] | None = None
    coords: tuple[tuple[int, int, int], ...] | None = None

    def __post_init__(self):
        check_int_range("vertices", self.vertices, 1, MAX_VERTICES)
        edges = _int_pairs("edges", self.edges, self.vertices)
        if any(u == v for u, v in edges):
            raise ValueError("edges must join two different vertices, not a self-loop")
        object.__setattr__(self, "edges", edges)
        procs = self.processors
        if procs is None:
            procs = tuple(range(self.vertices))
        else:
            if isinstance(procs, (str, bytes)) or not hasattr(procs, "__iter__"):
                raise TypeError(f"processors must be a list of vertices, not {procs!r}")
            procs = tuple(procs)
            for p in procs:
                check_int_range("processors", p, 0)
                if p >= self.vertices:
                    raise ValueError(
                        f"processors must be vertices 0 .. {self.vertices - 1} "
                        f"(vertices = {self.vertices}), not {p!r}"
                    )
            if len(set(procs)) != len(procs):
                raise ValueError("processors must be distinct vertices")
            procs = tuple(sorted(procs))
        object.__setattr__(self, "processors", procs)
        if self.coords is not None:
            coords = self.coords
            if isinstance(coords, (str, bytes)) or not hasattr(coords, "__iter__"):
                raise TypeError(f"coords must be a list of (x, y, z) points, not {coords!r}")
            coords = tuple(tuple(c) if hasattr(c, "__iter__") else c for c in coords)
            if len(coords) != self.vertices or any(
                not isinstance(c, tuple) or len(c) != 3 for c in coords
            ):
                raise ValueError(
                    f"coords must give one (x, y, z) per vertex (vertices = {self.vertices})"
                )
            for c in coords:
                for x in c:
                    check_int_range("coords", x, 0)
            object.__setattr__(self, "coords", coords)

    @property
    def n(self) -> int:
        """Number of processors."""
        return len(self.processors)

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.edges:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        a = np.asarray(self.edges, dtype=np.int64)
        return a[:, 0], a[:, 1]

    def cut(self, vertex_set) -> int:
        """Edges with exactly one end in ``vertex_set`` (its bandwidth)."""
        inside = np.zeros(self.vertices, bool)
        inside[list(vertex_set)] = True
        u, v = self.edge_arrays()
        return int(np.count_nonzero(inside[u] != inside[v]))


def _int_pairs(name: str, pairs, vertices: int) -> tuple[tuple[int, int], ...]:
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"{name} must be a list of (u, v) pairs, not {pairs!r}")
    out = []
    for pair in pairs:
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"{name} must be a list of (u, v) pairs, not {pair!r} in it")
        u, v = pair
        for x in pair:
            check_int_range(name, x, 0)
            if x >= vertices:
                raise ValueError(
                    f"{name} must join vertices 0 .. {vertices - 1} (vertices = {vertices}), "
                    f"not {pair!r}"
                )
        out.append((u, v))
    return tuple(out)


def _cuts(labels: np.ndarray, graph: Graph, count: int) -> np.ndarray:
    """Bandwidth of each of ``count`` vertex sets, vertex v in set ``labels[v]``."""
    u, v = graph.edge_arrays()
    lu, lv = labels[u], labels[v]
    cross = lu != lv
    return np.bincount(lu[cross], minlength=count) + np.bincount(lv[cross], minlength=count)


# -- decomposition trees -----------------------------------------------------------------------


@dataclass(frozen=True)
class DecompositionTree:
    """A decomposition tree of ``graph`` of ``depth`` levels: vertex v lies in leaf
    ``leaf_of[v]`` (0 .. 2^depth - 1), and node q of level i holds the vertices whose leaf
    has q as its top i bits. Each leaf holds at most one processor (checked)."""

    graph: Graph
    depth: int
    leaf_of: tuple[int, ...]

    def __post_init__(self):
        if not isinstance(self.graph, Graph):
            raise TypeError(f"graph must be a Graph, not {self.graph!r}")
        check_int_range("depth", self.depth, 0, MAX_DEPTH)
        leaf_of = self.leaf_of
        if isinstance(leaf_of, (str, bytes)) or not hasattr(leaf_of, "__iter__"):
            raise TypeError(f"leaf_of must be a list of leaves, one per vertex, not {leaf_of!r}")
        leaf_of = tuple(leaf_of)
        if len(leaf_of) != self.graph.vertices:
            raise ValueError(
                f"leaf_of must give one leaf per vertex ({self.graph.vertices}), not {len(leaf_of)}"
            )
        for leaf in leaf_of:
            check_int_range("leaf_of", leaf, 0)
            if leaf >> self.depth:
                raise ValueError(
                    f"leaf_of must hold leaves 0 .. {(1 << self.depth) - 1} of a tree of depth "
                    f"{self.depth}, not {leaf!r}"
                )
        held = [leaf_of[p] for p in self.graph.processors]
        if len(set(held)) != len(held):
            raise ValueError("leaf_of puts two processors in one leaf of the tree")
        object.__setattr__(self, "leaf_of", leaf_of)

    @property
    def leaves(self) -> int:
        return 1 << self.depth

    def black(self) -> np.ndarray:
        """The leaf line as pearls: 1 where a leaf holds a processor."""
        line = np.zeros(self.leaves, np.int64)
        line[[self.leaf_of[p] for p in self.graph.processors]] = 1
        return line

    def level_cuts(self, level: int) -> np.ndarray:
        """Bandwidth of each of the 2^level sets at ``level``."""
        check_int_range("level", level, 0, self.depth)
        labels = np.asarray(self.leaf_of, np.int64) >> (self.depth - level)
        return _cuts(labels, self.graph, 1 << level)

    def level_sizes(self, level: int) -> np.ndarray:
        """Processors in each set at ``level``."""
        return np.bincount(
            np.asarray([self.leaf_of[p] for p in self.graph.processors], np.int64)
            >> (self.depth - level),
            minlength=1 << level,
        )

    def widths(self) -> list[int]:
        """``[w_0, ..., w_depth]``: the largest bandwidth of a set at each level."""
        return [int(self.level_cuts(i).max(initial=0)) for i in range(self.depth + 1)]

    def trimmed(self) -> DecompositionTree:
        """The same tree cut off at the first level where every set holds at most one
        processor (the paper stops cutting there)."""
        for level in range(self.depth + 1):
            if self.level_sizes(level).max(initial=0) <= 1:
                shift = self.depth - level
                return DecompositionTree(self.graph, level, tuple(x >> shift for x in self.leaf_of))
        raise AssertionError("unreachable: the leaves hold at most one processor each")


# -- Lemma 6: cutting two strings of pearls ----------------------------------------------------


@dataclass(frozen=True)
class PearlCut:
    """The result of Lemma 6 on two strings: ``sets[0]`` (A) and ``sets[1]`` (the rest), each
    a list of ``(string, start, stop)`` pieces (at most two, none empty), and the ``cuts``
    made, as ``(string, position)`` (a cut between pearls position-1 and position)."""

    sets: tuple[tuple[tuple[int, int, int], ...], tuple[tuple[int, int, int], ...]]
    cuts: tuple[tuple[int, int], ...]


def _halve(strings, prefix):
    """Lemma 6 on at most two runs ``(lo, hi)`` of a line whose blacks have prefix sums
    ``prefix``: ``(A, rest, cuts)`` as runs and cut positions on the line.

    The circle is L then S (L the longer); A starts as L's first half, rotates back over S
    (phase 1), then its piece in L slides along L (phase 2) until A is where the rest began.
    """
    runs = [r for r in strings if r[1] > r[0]]
    if not runs:
        return (), (), ()
    runs.sort(key=lambda r: r[0] - r[1])  # longest first (stable: ties keep their order)
    (l0, l1), (s0, s1) = runs[0], runs[1] if len(runs) > 1 else (runs[0][1], runs[0][1])
    length, short = l1 - l0, s1 - s0
    m = (length + short) // 2

    def blacks(lo, hi):
        return int(prefix[hi] - prefix[lo])

    total = blacks(l0, l1) + blacks(s0, s1)
    targets = {total // 2, (total + 1) // 2}
    # Phase 1: A = S[short - t:] + L[:m - t], t = 0 .. short.
    for t in range(short + 1):
        if blacks(s1 - t, s1) + blacks(l0, l0 + m - t) in targets:
            a = [(s1 - t, s1), (l0, l0 + m - t)]
            rest = [(l0 + m - t, l1), (s0, s1 - t)]
            cuts = [p for p, lo, hi in ((s1 - t, s0, s1), (l0 + m - t, l0, l1)) if lo < p < hi]
            return _runs(a), _runs(rest), tuple(cuts)
    # Phase 2: A = S + L[u : u + m - short], u = 1 .. length - (m - short).
    piece = m - short
    for u in range(1, length - piece + 1):
        if blacks(s0, s1) + blacks(l0 + u, l0 + u + piece) in targets:
            a = [(s0, s1), (l0 + u, l0 + u + piece)]
            rest = [(l0, l0 + u), (l0 + u + piece, l1)]
            cuts = [p for p in (l0 + u, l0 + u + piece) if l0 < p < l1]
            return _runs(a), _runs(rest), tuple(cuts)
    raise AssertionError("unreachable: the blacks in A change by at most one per move")


def _runs(runs) -> tuple[tuple[int, int], ...]:
    return tuple(sorted(r for r in runs if r[1] > r[0]))


def pearl_cut(first, second=()) -> PearlCut:
    """Lemma 6: split two strings of pearls (truthy = black) with at most two cuts into two
    sets of at most two strings each, each set with half the pearls of each colour (exactly
    when both counts are even; the blacks within one otherwise)."""
    strings = []
    for name, s in (("first", first), ("second", second)):
        if isinstance(s, (str, bytes)) or not hasattr(s, "__iter__"):
            raise TypeError(f"{name} must be a sequence of pearls (0 white, 1 black), not {s!r}")
        strings.append([1 if x else 0 for x in s])
    line = strings[0] + strings[1]
    prefix = np.concatenate(([0], np.cumsum(line, dtype=np.int64)))
    bounds = ((0, len(strings[0])), (len(strings[0]), len(line)))
    a, rest, cuts = _halve(list(bounds), prefix)

    def local(runs):
        out = []
        for lo, hi in runs:
            index = 0 if hi <= bounds[0][1] else 1
            out.append((index, lo - bounds[index][0], hi - bounds[index][0]))
        return tuple(out)

    located = tuple(
        (0, p) if p < bounds[0][1] or not bounds[1][1] > bounds[1][0] else (1, p - bounds[1][0])
        for p in cuts
    )
    return PearlCut((local(a), local(rest)), located)


# -- Lemma 7: a run of leaves as complete subtrees ---------------------------------------------


def subtree_forest(lo: int, hi: int) -> list[tuple[int, int]]:
    """The maximal complete subtrees of a complete binary tree whose leaves all lie in the run
    ``lo .. hi-1``, as ``(height, index)``: the subtree covers leaves ``index * 2^height ..
    (index + 1) * 2^height - 1``. Left to right."""
    check_int_range("lo", lo, 0)
    check_int_range("hi", hi, lo)
    out = []
    x = lo
    while x < hi:
        height = (x & -x).bit_length() - 1 if x else (hi - x).bit_length() - 1
        while x + (1 << height) > hi:
            height -= 1
        out.append((height, x >> height))
        x += 1 << height
    return out


# -- Theorem 8: a balanced tree from any tree --------------------------------------------------


@dataclass(frozen=True)
class BalancedTree:
    """Theorem 8's balanced tree T' built from ``tree`` (T). ``sets[i][q]`` is node q of
    level i of T': at most two runs ``(lo, hi)`` of T's leaf line; node q's children are
    2q and 2q + 1. ``cuts`` counts the Lemma 6 cuts made at each level."""

    tree: DecompositionTree
    sets: tuple[tuple[tuple[tuple[int, int], ...], ...], ...]
    cuts: tuple[int, ...] = field(default=())

    @property
    def depth(self) -> int:
        return len(self.sets) - 1

    def labels(self, level: int) -> np.ndarray:
        """The node of ``level`` that each vertex of the graph lies in."""
        line = np.zeros(self.tree.leaves, np.int64)
        for q, runs in enumerate(self.sets[level]):
            for lo, hi in runs:
                line[lo:hi] = q
        return line[np.asarray(self.tree.leaf_of, np.int64)]

    def level_cuts(self, level: int) -> np.ndarray:
        return _cuts(self.labels(level), self.tree.graph, len(self.sets[level]))

    def level_sizes(self, level: int) -> np.ndarray:
        procs = np.asarray(self.tree.graph.processors, np.int64)
        return np.bincount(self.labels(level)[procs], minlength=len(self.sets[level]))

    def widths(self) -> list[int]:
        """``[w'_0, ..., w'_depth]``, measured on the graph."""
        return [int(self.level_cuts(i).max(initial=0)) for i in range(self.depth + 1)]

    def forest_sums(self, level: int) -> list[int]:
        """Per node of ``level``: the summed bandwidth of the roots of the Lemma 7 forests of
        its runs (the quantity Theorem 8's proof bounds by ``4 sum w_k``)."""
        t = self.tree
        per_level = [t.level_cuts(i) for i in range(t.depth + 1)]
        return [
            sum(
                int(per_level[t.depth - h][q]) for lo, hi in runs for h, q in subtree_forest(lo, hi)
            )
            for runs in self.sets[level]
        ]

    def fat_tree_leaf(self) -> dict[int, int]:
        """Theorem 10's identification: processor -> leaf of the balanced tree (the leaf of the
        fat-tree it is placed at)."""
        labels = self.labels(self.depth)
        return {p: int(labels[p]) for p in self.tree.graph.processors}


def balance(tree: DecompositionTree) -> BalancedTree:
    """Theorem 8: the balanced decomposition tree T' of depth ceil(lg n) made from ``tree`` by
    cutting its leaf line recursively with Lemma 6 (each set's processors halved within one,
    each set at most two runs of consecutive leaves)."""
    if not isinstance(tree, DecompositionTree):
        raise TypeError(f"tree must be a DecompositionTree, not {tree!r}")
    n = tree.graph.n
    depth = (n - 1).bit_length() if n > 1 else 0
    prefix = np.concatenate(([0], np.cumsum(tree.black())))
    sets = [((((0, tree.leaves),)),)]
    cuts = []
    for _ in range(depth):
        nxt, made = [], 0
        for runs in sets[-1]:
            a, rest, c = _halve(list(runs), prefix)
            nxt += [_merged(a), _merged(rest)]
            made += len(c)
        sets.append(tuple(nxt))
        cuts.append(made)
    return BalancedTree(tree, tuple(sets), tuple(cuts))


def _merged(runs):
    """Runs that touch on the line are one run."""
    out = []
    for lo, hi in runs:
        if out and out[-1][1] == lo:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


# -- Theorem 5: cutting planes -----------------------------------------------------------------


def morton(x: int, y: int, z: int, bits: int) -> int:
    """Leaf of lattice point (x, y, z) of a cube of side 2^bits under Theorem 5's cuts: the
    first cut halves x, the second y, the third z, and so on (bits interleaved x, y, z from
    the top)."""
    code = 0
    for b in range(bits - 1, -1, -1):
        code = (code << 3) | ((x >> b) & 1) << 2 | ((y >> b) & 1) << 1 | ((z >> b) & 1)
    return code


def cutting_plane_tree(graph: Graph, *, trim: bool = True) -> DecompositionTree:
    """Theorem 5's decomposition tree of a graph laid out on the lattice points of the cube of
    side 2^b that holds its ``coords``: planes through the middle of each box, perpendicular
    to x, y and z in turn, until each box holds at most one processor (``trim``; without it,
    down to single lattice points)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a Graph, not {graph!r}")
    if graph.coords is None:
        raise ValueError("graph has no coords: Theorem 5 cuts a layout")
    bits = cube_bits(graph)
    if 3 * bits > MAX_DEPTH:
        raise ValueError(f"coords must lie in a cube of side at most 2^{MAX_DEPTH // 3}")
    leaf_of = tuple(morton(x, y, z, bits) for x, y, z in graph.coords)
    tree = DecompositionTree(graph, 3 * bits, leaf_of)
    return tree.trimmed() if trim else tree


def cube_bits(graph: Graph) -> int:
    """b with every coordinate below 2^b (the cube Theorem 5 cuts has side 2^b)."""
    top = max((c for point in graph.coords for c in point), default=0)
    return max(0, top.bit_length())


# -- the bounds --------------------------------------------------------------------------------


def theorem5_bound(volume: float, levels: int, gamma: float = 1.0) -> list[float]:
    """Theorem 5: a box made by i cuts of a cube of volume v has surface at most
    ``4 * 4^(1/3) * (v/2^i)^(2/3)``; with gamma bits per unit of surface, ``w_i`` for
    ``i = 0 .. levels``."""
    return [4 * 4 ** (1 / 3) * gamma * (volume / 2**i) ** (2 / 3) for i in range(levels + 1)]


def theorem8_bound(widths, levels: int) -> list[int]:
    """Theorem 8: ``w'_i = 4 * sum_{k=i}^{r} w_k`` for ``i = 0 .. levels``."""
    widths = list(widths)
    return [4 * sum(widths[i:]) for i in range(levels + 1)]


def alpha_width(widths, alpha: float) -> float:
    """The least w with ``w_k <= w / alpha^k`` for every k: ``(w, alpha)`` fits the tree."""
    return max((wk * alpha**k for k, wk in enumerate(widths)), default=0.0)


def corollary9_bound(w: float, alpha: float, levels: int) -> list[float]:
    """Corollary 9: a (w, alpha) tree has a ``(4 alpha/(alpha - 1) w, alpha)`` balanced tree;
    its ``w'_i`` for ``i = 0 .. levels``."""
    if not 1 < alpha <= 2:
        raise ValueError(f"alpha must satisfy 1 < alpha <= 2, not {alpha!r}")
    return [4 * alpha / (alpha - 1) * w / alpha**i for i in range(levels + 1)]


# -- graph families ----------------------------------------------------------------------------


def mesh(sides) -> Graph:
    """The 1-, 2- or 3-dimensional mesh with the given sides, each vertex a processor at its
    lattice point, unit edges (Theorem 5 holds with gamma = 1)."""
    if isinstance(sides, (str, bytes)) or not hasattr(sides, "__iter__"):
        raise TypeError(f"sides must be a list of 1 to 3 mesh sides, not {sides!r}")
    sides = tuple(sides)
    if not 1 <= len(sides) <= 3:
        raise ValueError(f"sides must be a list of 1 to 3 mesh sides, not {sides!r}")
    for s in sides:
        check_positive_int("sides", s)
    dims = sides + (1,) * (3 - len(sides))
    if math.prod(dims) > MAX_VERTICES:
        raise ValueError(f"sides must give at most {MAX_VERTICES} vertices, not {sides!r}")
    points = [(x, y, z) for x in range(dims[0]) for y in range(dims[1]) for z in range(dims[2])]
    index = {p: i for i, p in enumerate(points)}
    edges = []
    for x, y, z in points:
        for d in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
            q = (x + d[0], y + d[1], z + d[2])
            if q in index:
                edges.append((index[(x, y, z)], index[q]))
    return Graph(len(points), tuple(edges), None, tuple(points))


def binary_tree_network(leaves: int) -> Graph:
    """A complete binary tree as a routing network: the leaves are the processors, the
    internal nodes switches (heap numbering, vertex 0 unused is avoided: node v is vertex
    v - 1). Laid out with leaf i at the lattice point whose Morton code is i, each switch at
    its leftmost leaf's point."""
    check_power_of_two("leaves", leaves, 1)
    if 2 * leaves > MAX_VERTICES:
        raise ValueError(f"leaves must be at most {MAX_VERTICES // 2}, not {leaves}")
    edges = tuple((v - 1, v // 2 - 1) for v in range(2, 2 * leaves))
    bits = -(-max(1, leaves.bit_length() - 1) // 3)
    coords = []
    for v in range(1, 2 * leaves):
        level = v.bit_length() - 1
        first_leaf = (v << (leaves.bit_length() - 1 - level)) - leaves
        coords.append(_unmorton(first_leaf, bits))
    procs = tuple(range(leaves - 1, 2 * leaves - 1))
    return Graph(2 * leaves - 1, edges, procs, tuple(coords))


def _unmorton(code: int, bits: int) -> tuple[int, int, int]:
    x = y = z = 0
    for b in range(bits):
        x |= ((code >> (3 * b + 2)) & 1) << b
        y |= ((code >> (3 * b + 1)) & 1) << b
        z |= ((code >> (3 * b)) & 1) << b
    return x, y, z


def hypercube_graph(dim: int) -> Graph:
    """The ``dim``-dimensional Boolean hypercube, node v at the lattice point whose Morton code
    is v (so Theorem 5's cuts are the cuts across the dimensions, highest first)."""
    check_int_range("dim", dim, 0, 20)
    n = 1 << dim
    bits = -(-dim // 3)
    shift = 3 * bits - dim  # v's top bit is the first cut
    edges = tuple((v, v ^ (1 << i)) for v in range(n) for i in range(dim) if v < v ^ (1 << i))
    coords = tuple(_unmorton(v << shift, bits) for v in range(n))
    return Graph(n, edges, None, coords)


def random_graph(n: int, degree: float, seed: int, side: int | None = None) -> Graph:
    """Erdos-Renyi G(n, p) with mean degree ``degree``, the vertices (all processors) at
    distinct random lattice points of a cube of side ``side`` (default the least power of two
    with room for 8n points): a layout with long wires and an unbalanced cutting-plane tree."""
    check_int_range("n", n, 1, MAX_VERTICES)
    if not isinstance(degree, (int, float)) or isinstance(degree, bool) or not 0 <= degree < n:
        raise ValueError(f"degree must be a number in 0 .. n-1, not {degree!r}")
    check_int_range("seed", seed, 0)
    if side is None:
        side = 1 << -(-max(1, (8 * n - 1).bit_length()) // 3)
    check_power_of_two("side", side, 1)
    if side**3 < n or side**3 > MAX_VERTICES * 64:
        raise ValueError(f"side must give room for the n = {n} points, not {side}")
    rng = random.Random(seed)
    p = degree / max(1, n - 1)
    edges = []
    if p > 0:
        # Geometric skips over each row: time in the number of edges, not n^2.
        log_q = math.log1p(-p) if p < 1 else None
        for u in range(n):
            v = u + 1
            while True:
                if log_q is not None:
                    v += int(math.log(1.0 - rng.random()) / log_q)
                if v >= n:
                    break
                edges.append((u, v))
                v += 1
    cells = rng.sample(range(side**3), n)
    coords = tuple((c // side**2, c // side % side, c % side) for c in cells)
    return Graph(n, tuple(edges), None, coords)


def random_mesh_subgraph(side: int, keep: float, procs: float, seed: int) -> Graph:
    """A 3D mesh of the given side with each edge kept with probability ``keep`` and each
    vertex a processor with probability ``procs`` (at least one): unit wires, so Theorem 5
    holds with gamma = 1, and uneven processors, so its tree is unbalanced."""
    check_int_range("side", side, 1, 64)
    for name, value in (("keep", keep), ("procs", procs)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be a probability in 0 .. 1, not {value!r}")
    check_int_range("seed", seed, 0)
    full = mesh((side, side, side))
    rng = random.Random(seed)
    edges = tuple(e for e in full.edges if rng.random() < keep)
    chosen = tuple(v for v in range(full.vertices) if rng.random() < procs) or (0,)
    return Graph(full.vertices, edges, chosen, full.coords)
