"""Leiserson (1985) section V: Lemma 6 (pearls), Lemma 7 (forests), Theorems 5 and 8 and
Corollary 9 (decomposition trees), checked on exhaustive, random (hypothesis) and hand-made
adversarial inputs. Every bound is asserted here against numbers computed independently of
the code under test (vertex sets cut with ``Graph.cut``, pearls counted one by one)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fattree.spec.decomposition import (
    DecompositionTree,
    Graph,
    alpha_width,
    balance,
    binary_tree_network,
    corollary9_bound,
    cutting_plane_tree,
    hypercube_graph,
    mesh,
    morton,
    pearl_cut,
    random_graph,
    random_mesh_subgraph,
    subtree_forest,
    theorem5_bound,
    theorem8_bound,
)

RANDOM = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TOL = 1e-9


# -- Lemma 6 -----------------------------------------------------------------------------------


def check_pearls(first, second):
    """Run Lemma 6 and check every claim by counting pearls one by one."""
    result = pearl_cut(first, second)
    strings = (list(first), list(second))
    assert len(result.cuts) <= 2
    seen = []
    for pieces in result.sets:
        assert len(pieces) <= 2, result
        for s, lo, hi in pieces:
            assert 0 <= lo < hi <= len(strings[s])
            seen += [(s, i) for i in range(lo, hi)]
    everything = [(s, i) for s in (0, 1) for i in range(len(strings[s]))]
    assert sorted(seen) == everything  # each pearl in exactly one set
    # The cuts are exactly the piece ends inside a string.
    ends = {(s, x) for pieces in result.sets for s, lo, hi in pieces for x in (lo, hi)}
    inner = {(s, x) for s, x in ends if 0 < x < len(strings[s])}
    assert inner == set(result.cuts), result
    black = [sum(strings[s][i] for s, lo, hi in p for i in range(lo, hi)) for p in result.sets]
    size = [sum(hi - lo for _s, lo, hi in p) for p in result.sets]
    blacks = sum(map(sum, strings))
    whites = len(first) + len(second) - blacks
    assert abs(black[0] - black[1]) <= 1
    if blacks % 2 == 0 and whites % 2 == 0:  # the lemma's case: exact halves of each colour
        assert black[0] == black[1] == blacks // 2
        assert size[0] - black[0] == size[1] - black[1] == whites // 2
    return result


def test_lemma6_every_pair_of_short_strings():
    for total in range(0, 9):
        for split in range(total + 1):
            for bits in itertools.product((0, 1), repeat=total):
                check_pearls(bits[:split], bits[split:])


@RANDOM
@given(
    first=st.lists(st.integers(0, 1), max_size=300),
    second=st.lists(st.integers(0, 1), max_size=300),
)
def test_lemma6_random_strings(first, second):
    check_pearls(first, second)


ADVERSARIAL_PEARLS = {
    # A's first position (L's first half) is all black and S is all white: the scan must
    # leave phase 1 and slide A along L.
    "blacks packed at the head of L": ([1] * 8 + [0] * 8, [0] * 4),
    # Every black in S: A must rotate into S.
    "blacks only in the short string": ([0] * 12, [1] * 4 + [0] * 2),
    # One black at each far end: A must hold exactly one of two distant pearls.
    "two blacks at the far ends": ([1] + [0] * 10 + [1], [0] * 6),
    # Every move changes the count: the scan must not step over the target.
    "alternating colours": ([1, 0] * 9, [0, 1] * 5),
    # The root cut of Theorem 8: one string, S empty.
    "one string": ([0, 0, 1, 1, 1, 1, 0, 0], []),
    "short string first": ([1, 1], [0] * 6 + [1, 1] * 3),
    "equal lengths": ([1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1]),
    "no blacks": ([0] * 6, [0] * 4),
    "all black": ([1] * 6, [1] * 4),
    # Odd counts are outside the lemma; the blacks must still be split within one.
    "odd blacks and whites": ([1, 1, 1, 0], [0, 0, 1]),
    "empty strings": ([], []),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL_PEARLS))
def test_lemma6_adversarial(name):
    first, second = ADVERSARIAL_PEARLS[name]
    check_pearls(first, second)


def test_lemma6_packed_blacks_need_the_slide():
    # The first half of L holds 8 blacks; rotating it back over the all-white S (phase 1)
    # only gets down to 6, so A must become S + a piece of L slid along L (phase 2): the
    # first piece with 4 blacks is L[4:10].
    result = check_pearls([1] * 8 + [0] * 8, [0] * 4)
    assert result.sets[0] == ((0, 4, 10), (1, 0, 4))
    assert result.cuts == ((0, 4), (0, 10))


def test_pearl_cut_rejects_non_sequences():
    with pytest.raises(TypeError, match="first must be a sequence of pearls"):
        pearl_cut(3, [])
    with pytest.raises(TypeError, match="second must be a sequence of pearls"):
        pearl_cut([], "10")


# -- Lemma 7 -----------------------------------------------------------------------------------


def brute_forest(lo, hi, height):
    """Every complete subtree (dyadic run) inside lo..hi-1 whose parent is not inside."""
    out = []
    for h in range(height + 1):
        for q in range((1 << height) >> h):
            a, b = q << h, (q + 1) << h
            pa, pb = (q >> 1) << (h + 1), ((q >> 1) + 1) << (h + 1)
            if lo <= a and b <= hi and not (h < height and lo <= pa and pb <= hi):
                out.append((h, q))
    return sorted(out, key=lambda t: t[1] << t[0])


def test_lemma7_every_run_of_64_leaves():
    for lo in range(64):
        for hi in range(lo + 1, 65):
            forest = subtree_forest(lo, hi)
            assert forest == brute_forest(lo, hi, 6)
            k = hi - lo
            heights = [h for h, _q in forest]
            assert max(heights) <= math.floor(math.log2(k))  # 3) largest tree
            assert all(heights.count(h) <= 2 for h in heights)  # 2) two of any height
            covered = [x for h, q in forest for x in range(q << h, (q + 1) << h)]
            assert covered == list(range(lo, hi))  # 1) exactly the leaves of the run


@RANDOM
@given(lo=st.integers(0, 2**40), k=st.integers(1, 2**40))
def test_lemma7_long_runs(lo, k):
    forest = subtree_forest(lo, lo + k)
    heights = [h for h, _q in forest]
    assert max(heights) <= k.bit_length() - 1
    assert all(heights.count(h) <= 2 for h in set(heights))
    assert sum(1 << h for h in heights) == k
    x = lo
    for h, q in forest:  # left to right, touching, each a complete subtree
        assert q << h == x
        x += 1 << h


# -- decomposition trees: Theorem 8 and Corollary 9 --------------------------------------------


def check_balanced(tree: DecompositionTree):
    """Theorem 8's claims on ``balance(tree)``, each measured independently."""
    graph, r = tree.graph, tree.depth
    bal = balance(tree)
    n = graph.n
    assert bal.depth == (math.ceil(math.log2(n)) if n > 1 else 0)
    widths = tree.widths()
    bound = theorem8_bound(widths, bal.depth)
    where = {}
    for v, leaf in enumerate(tree.leaf_of):
        where.setdefault(leaf, []).append(v)
    procs = set(graph.processors)
    for i, level in enumerate(bal.sets):
        assert len(level) == 1 << i
        line = sorted(x for runs in level for lo, hi in runs for x in range(lo, hi))
        assert line == list(range(tree.leaves))  # the sets partition T's leaves
        forest = bal.forest_sums(i)
        for q, runs in enumerate(level):
            assert len(runs) <= 2  # at most two strings of consecutive leaves
            assert sum(hi - lo for lo, hi in runs) == tree.leaves >> i  # half the pearls
            members = {v for lo, hi in runs for x in range(lo, hi) for v in where.get(x, ())}
            if i:
                parent = {x for lo, hi in bal.sets[i - 1][q >> 1] for x in range(lo, hi)}
                assert {x for lo, hi in runs for x in range(lo, hi)} <= parent
                halves = [
                    len(
                        procs
                        & {
                            v
                            for lo, hi in bal.sets[i][p]
                            for x in range(lo, hi)
                            for v in where.get(x, ())
                        }
                    )
                    for p in (q & ~1, q | 1)
                ]
                assert abs(halves[0] - halves[1]) <= 1  # balanced to within one
            cut = graph.cut(members)
            assert cut == bal.level_cuts(i)[q]
            # Lemma 7's forest: at most four trees of a height, none above level i of T.
            trees = [t for lo, hi in runs for t in subtree_forest(lo, hi)]
            assert all(h <= r - i for h, _q in trees)
            assert all(sum(1 for h2, _ in trees if h2 == h) <= 4 for h, _ in trees)
            # The proof's chain: cut <= sum over forest roots <= 4 sum_{k>=i} w_k.
            assert cut <= forest[q] <= bound[i]
    assert max(bal.level_sizes(bal.depth), default=0) <= 1
    assert all(c <= 2 * (1 << i) for i, c in enumerate(bal.cuts))  # two cuts per halving
    assert sorted(bal.fat_tree_leaf().values()) == sorted(set(bal.fat_tree_leaf().values()))
    return bal


@st.composite
def random_trees(draw):
    vertices = draw(st.integers(1, 40))
    edges = draw(
        st.lists(
            st.tuples(st.integers(0, vertices - 1), st.integers(0, vertices - 1)).filter(
                lambda e: e[0] != e[1]
            ),
            max_size=120,
        )
    )
    procs = draw(st.sets(st.integers(0, vertices - 1), min_size=1))
    depth = draw(st.integers(max(0, (len(procs) - 1).bit_length()), 9))
    leaves = draw(
        st.lists(
            st.integers(0, (1 << depth) - 1), min_size=len(procs), max_size=len(procs), unique=True
        )
    )
    others = draw(st.lists(st.integers(0, (1 << depth) - 1), min_size=vertices, max_size=vertices))
    leaf_of = list(others)
    for p, leaf in zip(sorted(procs), leaves, strict=True):
        leaf_of[p] = leaf
    return DecompositionTree(Graph(vertices, tuple(edges), tuple(procs)), depth, tuple(leaf_of))


@RANDOM
@given(tree=random_trees())
def test_theorem8_random_graphs_and_trees(tree):
    check_balanced(tree)


def caterpillar(n):
    """The most unbalanced tree: processor j alone on one side of cut j (leaf 2^(n-1-j)),
    on a path graph: every cut of T has bandwidth 1 or 2."""
    edges = tuple((j, j + 1) for j in range(n - 1))
    leaf_of = tuple(1 << (n - 1 - j) if j < n - 1 else 0 for j in range(n))
    return DecompositionTree(Graph(n, edges), n, leaf_of)


def adversarial_trees():
    yield "caterpillar: one processor split off per level", caterpillar(9)
    # All processors in the last leaves of a deep line: the first cuts of T separate nothing.
    g = Graph(8, tuple((i, (i + 3) % 8) for i in range(8)))
    yield (
        "processors packed at the end of a deep line",
        DecompositionTree(g, 10, tuple(range(1016, 1024))),
    )
    # Every edge joins the two ends of the leaf line: all of them cross every balanced cut.
    far = Graph(16, tuple((i, 15 - i) for i in range(8)) * 3)
    yield "edges between far-apart leaves", DecompositionTree(far, 4, tuple(range(16)))
    # A star: the hub's edges are all cut wherever the hub goes.
    star = Graph(17, tuple((0, i) for i in range(1, 17)))
    yield "star graph", DecompositionTree(star, 6, tuple(range(0, 34, 2)))
    yield "one processor", DecompositionTree(Graph(3, ((0, 1), (1, 2)), (1,)), 3, (0, 5, 7))
    yield "two processors", DecompositionTree(Graph(2, ((0, 1),)), 1, (1, 0))
    # 11 processors: odd counts at every level, and switches sharing leaves with processors.
    sw = Graph(14, tuple((i, i + 1) for i in range(13)), tuple(range(11)))
    yield (
        "odd counts with switches",
        DecompositionTree(sw, 6, (3, 9, 10, 11, 40, 41, 42, 60, 61, 62, 63, 3, 9, 63)),
    )


@pytest.mark.parametrize("name", [name for name, _ in adversarial_trees()])
def test_theorem8_adversarial(name):
    check_balanced(dict(adversarial_trees())[name])


def test_theorem8_caterpillar_is_balanced_at_every_level():
    bal = check_balanced(caterpillar(9))
    for i in range(bal.depth + 1):
        sizes = bal.level_sizes(i)
        assert set(sizes.tolist()) <= {9 >> i, -(-9 // (1 << i))}


def sibling_pairs_tree():
    """16 leaves, processors at leaves 0, 5, 8, 9, 10, 11, 12, 15 (vertices 0-7), switches at
    leaves 2, 3, 4 (vertices 8-10); two edges join each of the sibling leaves (2, 3), (4, 5),
    (8, 9), (10, 11). No edge crosses a cut above the leaves: w = [0, 0, 0, 0, 2]. Found by a
    hill-climbing search over small random trees and graphs for the largest w'_i / bound."""
    leaf_of = (0, 5, 8, 9, 10, 11, 12, 15, 2, 3, 4)
    pairs = ((8, 9), (10, 1), (2, 3), (4, 5))
    graph = Graph(11, pairs * 2, tuple(range(8)))
    return DecompositionTree(graph, 4, leaf_of)


def test_theorem8_bound_is_attained():
    # The balanced tree must cut inside sibling pairs: its level-2 set {3, 4, 9, 10} (two
    # runs, four ends, each end splitting a pair) has 4 * 2 = 8 edges leaving it, which is
    # 4 * sum_{k>=2} w_k exactly: the paper's constant 4 cannot be lowered for this tree.
    tree = sibling_pairs_tree()
    assert tree.widths() == [0, 0, 0, 0, 2]
    bal = check_balanced(tree)
    assert bal.sets[2][1] == ((3, 5), (9, 11))
    members = [v for v, leaf in enumerate(tree.leaf_of) if leaf in (3, 4, 9, 10)]
    assert tree.graph.cut(members) == 8 == theorem8_bound(tree.widths(), bal.depth)[2]


STRUCTURED = {
    "3D mesh 8^3": lambda: mesh((8, 8, 8)),
    "3D mesh 6^3 in a cube of side 8": lambda: mesh((6, 6, 6)),
    "2D grid 16x16 in a cube": lambda: mesh((16, 16)),
    "line of 40": lambda: mesh((40,)),
    "binary tree of 64 leaves": lambda: binary_tree_network(64),
    "hypercube dim 7": lambda: hypercube_graph(7),
    "random G(300, 4)": lambda: random_graph(300, 4.0, 1),
    "random mesh subgraph": lambda: random_mesh_subgraph(8, 0.7, 0.3, 2),
}


@pytest.mark.parametrize(
    "name",
    # The 512-node mesh and the 300-node random graph take seconds each: slow points.
    [
        pytest.param(name, marks=pytest.mark.slow)
        if name in ("3D mesh 8^3", "random G(300, 4)")
        else name
        for name in sorted(STRUCTURED)
    ],
)
def test_theorem8_and_corollary9_on_structured_graphs(name):
    tree = cutting_plane_tree(STRUCTURED[name]())
    bal = check_balanced(tree)
    widths, measured = tree.widths(), bal.widths()
    for alpha in (4 ** (1 / 3), 1.1, 1.5, 2.0):
        w = alpha_width(widths, alpha)
        assert all(wk <= w / alpha**k * (1 + TOL) for k, wk in enumerate(widths))
        cor9 = corollary9_bound(w, alpha, bal.depth)
        thm8 = theorem8_bound(widths, bal.depth)
        for i in range(bal.depth + 1):
            # Corollary 9 is Theorem 8's sum bounded by a geometric series.
            assert measured[i] <= thm8[i] <= cor9[i] * (1 + TOL)


# -- Theorem 5: cutting planes -----------------------------------------------------------------


def surface(box):
    (x0, x1), (y0, y1), (z0, z1) = box
    a, b, c = x1 - x0, y1 - y0, z1 - z0
    return 2 * (a * b + b * c + a * c)


@pytest.mark.parametrize("side", [2, 3, 4, 5, 8])
def test_theorem5_unit_wire_meshes(side):
    # A box made by i cuts crosses at most its surface in unit edges (gamma = 1), and that
    # surface is at most 4 * 4^(1/3) * (v/2^i)^(2/3).
    graph = mesh((side, side, side))
    tree = cutting_plane_tree(graph, trim=False)
    cube = 1 << (tree.depth // 3)
    bound = theorem5_bound(cube**3, tree.depth)
    for i in range(tree.depth + 1):
        # The box of node q at level i, from its bits (x first).
        dims = [cube, cube, cube]
        for j in range(i):
            dims[j % 3] //= 2
        cuts = tree.level_cuts(i)
        box_surface = surface(((0, dims[0]), (0, dims[1]), (0, dims[2])))
        assert cuts.max(initial=0) <= box_surface <= bound[i] * (1 + TOL)


@settings(RANDOM, max_examples=25)
@given(
    side=st.integers(2, 8),
    keep=st.floats(0, 1),
    procs=st.floats(0, 1),
    seed=st.integers(0, 1000),
)
def test_theorem5_random_unit_wire_layouts(side, keep, procs, seed):
    graph = random_mesh_subgraph(side, keep, procs, seed)
    tree = cutting_plane_tree(graph)
    cube = 1 << (cutting_plane_tree(graph, trim=False).depth // 3)
    bound = theorem5_bound(cube**3, tree.depth)
    assert all(w <= b * (1 + TOL) for w, b in zip(tree.widths(), bound, strict=True))
    # Trimmed where the paper stops: one level up, some box still holds two processors.
    assert tree.level_sizes(tree.depth).max() <= 1
    if tree.depth:
        assert tree.level_sizes(tree.depth - 1).max() >= 2
    check_balanced(tree)


@pytest.mark.parametrize("side", [3, 4, 6, 8])
def test_theorem5_then_corollary9_the_chain_of_theorem10(side):
    # Theorem 10's proof: a network in volume v has a (4 * 4^(1/3) gamma v^(2/3), 4^(1/3))
    # tree (Theorem 5), hence a balanced one with w'_i <= 4 alpha/(alpha - 1) times that over
    # alpha^i (Corollary 9): with gamma = 1, about 68.7 (v / 2^i)^(2/3).
    alpha = 4 ** (1 / 3)
    for graph in (mesh((side, side, side)), random_mesh_subgraph(side, 0.8, 0.4, side)):
        tree = cutting_plane_tree(graph)
        volume = 8 ** (cutting_plane_tree(graph, trim=False).depth // 3)
        w = theorem5_bound(volume, 0)[0]
        assert all(wk <= w / alpha**k * (1 + TOL) for k, wk in enumerate(tree.widths()))
        bal = balance(tree)
        bound = corollary9_bound(w, alpha, bal.depth)
        assert bound[0] == pytest.approx(4 * alpha / (alpha - 1) * 4 * alpha * volume ** (2 / 3))
        assert all(m <= b for m, b in zip(bal.widths(), bound, strict=True))


def test_morton_order_is_the_cutting_order():
    # The first cut is x's top bit, then y's, then z's.
    assert morton(1, 0, 0, 1) == 4 and morton(0, 1, 0, 1) == 2 and morton(0, 0, 1, 1) == 1
    assert morton(2, 0, 0, 2) == 32 and morton(1, 0, 0, 2) == 4
    assert sorted(morton(x, y, z, 2) for x in range(4) for y in range(4) for z in range(4)) == list(
        range(64)
    )


def test_hypercube_cuts_are_the_dimension_cuts():
    # The subcubes of dimension d - i each have i * 2^(d-i) edges leaving them.
    for d in range(1, 9):
        tree = cutting_plane_tree(hypercube_graph(d))
        assert tree.depth == d
        assert tree.widths() == [i * (1 << (d - i)) for i in range(d + 1)]


def test_level_cuts_equal_graph_cuts():
    tree = cutting_plane_tree(random_graph(120, 5.0, 3))
    for i in range(tree.depth + 1):
        cuts = tree.level_cuts(i)
        for q in range(1 << i):
            members = [v for v, leaf in enumerate(tree.leaf_of) if leaf >> (tree.depth - i) == q]
            assert cuts[q] == tree.graph.cut(members)


# -- parameters --------------------------------------------------------------------------------


def test_parameter_errors():
    with pytest.raises(ValueError, match="vertices must be between 1 and"):
        Graph(0, ())
    with pytest.raises(ValueError, match="edges must join two different vertices"):
        Graph(2, ((1, 1),))
    with pytest.raises(
        ValueError, match=r"edges must join vertices 0 \.\. 1 \(vertices = 2\), not \(0, 2\)"
    ):
        Graph(2, ((0, 2),))
    with pytest.raises(ValueError, match="processors must be distinct"):
        Graph(3, (), (1, 1))
    with pytest.raises(ValueError, match="coords must give one"):
        Graph(2, (), None, ((0, 0, 0),))
    with pytest.raises(ValueError, match="leaf_of puts two processors in one leaf"):
        DecompositionTree(Graph(2, ()), 1, (0, 0))
    with pytest.raises(ValueError, match="leaf_of must give one leaf per vertex"):
        DecompositionTree(Graph(2, ()), 1, (0,))
    with pytest.raises(TypeError, match="graph must be a Graph"):
        DecompositionTree("g", 1, (0,))
    with pytest.raises(ValueError, match="graph has no coords"):
        cutting_plane_tree(Graph(2, ()))
    with pytest.raises(ValueError, match="alpha must satisfy 1 < alpha <= 2"):
        corollary9_bound(1.0, 1.0, 3)
    with pytest.raises(TypeError, match="tree must be a DecompositionTree"):
        balance(None)
    # Two processors in one leaf is still fine for switches (not processors).
    DecompositionTree(Graph(3, (), (0, 1)), 1, (0, 1, 1))
