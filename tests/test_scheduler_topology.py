"""FT(l, m, w) (fattree/spec/scheduler.py, GeneralizedFatTree) against a link table built
explicitly by section 3's recursive rule with m copies, and Theorems 1-2 on it."""

import itertools
import random

import pytest

from fattree.spec.scheduler import GeneralizedFatTree, general_tree
from fattree.spec.topology import FatTree, Link

#: m != w both ways (fewer and more parents than children), and m == w.
SIZES = [
    (1, 2, 3),
    (2, 2, 3),
    (2, 3, 2),
    (2, 4, 2),
    (2, 2, 4),
    (3, 2, 3),
    (3, 3, 2),
    (3, 4, 2),
    (3, 2, 4),
    (4, 2, 3),
    (4, 3, 2),
    (3, 3, 3),
]


def recursive_table(levels, m, w):
    """``{(h, t, i): (h + 1, parent, down_port)}`` by the construction rule, without Theorem 1:
    FT(1, m, w) is one switch; FT(k+1, m, w) is m copies of FT(k, m, w), copy c offsetting the
    switch indices of each level by c times that level's count, plus w**k new switches; up port
    j of the old top switch c * w**(k-1) + t goes to new switch t * w + j, on its down port c."""
    table = {}
    counts = [1]  # switches per level of FT(k, m, w)
    for k in range(1, levels):
        grown = {}
        for c in range(m):
            for (h, t, i), (h2, t2, p) in table.items():
                grown[(h, c * counts[h] + t, i)] = (h2, c * counts[h2] + t2, p)
        for c in range(m):
            for t in range(w ** (k - 1)):
                for j in range(w):
                    grown[(k - 1, c * w ** (k - 1) + t, j)] = (k, t * w + j, c)
        table = grown
        counts = [m * n for n in counts] + [w**k]
    return table, counts


@pytest.mark.parametrize("levels, m, w", SIZES)
def test_wiring_matches_construction(levels, m, w):
    tree = GeneralizedFatTree(levels, m, w)
    table, counts = recursive_table(levels, m, w)
    assert list(tree.switch_counts) == counts
    assert counts == [m ** (levels - 1 - h) * w**h for h in range(levels)]
    assert tree.num_nodes == m**levels
    assert {(x.level, x.switch, x.port) for x in tree.up_links()} == set(table)
    for (h, t, i), (h2, parent, down_port) in table.items():
        assert tree.next_switch(h, t, i) == parent
        assert tree.up_neighbour(h, t, i) == (h2, parent, down_port)
        assert tree.down_neighbour(h2, parent, down_port) == (h, t, i)
    # Every switch below the top has w distinct parents; every switch above level 0 has m
    # children, one on each down port.
    below = {}
    for h2, parent, p in table.values():
        below.setdefault((h2, parent), set()).add(p)
    for h in range(levels - 1):
        for t in range(counts[h]):
            assert len({table[(h, t, i)][:2] for i in range(w)}) == w
        for t in range(counts[h + 1]):
            assert below[(h + 1, t)] == set(range(m))


@pytest.mark.parametrize("levels, m, w", SIZES)
def test_theorem1_digit_form(levels, m, w):
    # Theorem 1 in digits: the base-m digits above h stay, the port digits shift up one and
    # P becomes digit 0 (the base-m digit h drops out): Fig. 7's s_{h+1} = s_{l-2}..s_{h+1}
    # P_0..P_h.
    tree = GeneralizedFatTree(levels, m, w)
    for h in range(levels - 1):
        for t in tree.switches(h):
            digits = tree.digits(h, t)
            ports, high = digits[:h], digits[h:]
            for p in range(w):
                nxt = tree.digits(h + 1, tree.next_switch(h, t, p))
                assert nxt == [p] + ports + high[1:]


def paths(tree, table, s, d, height):
    """Every climb of ``height`` from leaf switch s by any ports, then every descent by any
    down ports to leaf switch d, searched on the explicit table."""
    children = {}
    for (h, t, i), (h2, parent, p) in table.items():
        children.setdefault((h2, parent), []).append((p, h, t, i))
    found = []
    for ports in itertools.product(range(tree.w), repeat=height):
        up, t = [], s
        for h, p in enumerate(ports):
            up.append((h, t))
            t = table[(h, t, p)][1]
        stack = [(height, t, [])]
        while stack:
            h, t, trail = stack.pop()
            if h == 0:
                if t == d:
                    found.append((ports, up, trail))
                continue
            for _p, h1, child, i in children[(h, t)]:
                stack.append((h1, child, trail + [(h1, child, i)]))
    return found


@pytest.mark.parametrize("levels, m, w", [(2, 2, 3), (2, 3, 2), (3, 2, 3), (3, 3, 2), (4, 2, 3)])
def test_theorem2_exhaustive(levels, m, w):
    # Every route the explicit wiring allows from one leaf switch to another comes down through
    # the same port numbers it went up by (Theorem 2), one route per port vector, and none turns
    # below the common level.
    tree = GeneralizedFatTree(levels, m, w)
    table, counts = recursive_table(levels, m, w)
    for s, d in itertools.product(range(counts[0]), repeat=2):
        src, dst = s * m, d * m + (m - 1)
        height = tree.common_level(src, dst)
        for lower in range(height):
            assert not paths(tree, table, s, d, lower)
        found = paths(tree, table, s, d, height)
        assert len(found) == w**height
        for ports, up, down in found:
            assert [i for (_, _, i) in down] == list(reversed(ports))
            route = tree.route(src, dst, ports)
            assert route[0] == Link("inject", 0, s, 0) and route[-1] == Link("eject", 0, d, m - 1)
            assert [(x.level, x.switch) for x in route[1 : 1 + height]] == up
            assert [(x.level, x.switch, x.port) for x in route[1 + height : -1]] == down


@pytest.mark.parametrize("levels, w", [(1, 2), (2, 2), (2, 3), (3, 2), (3, 4), (4, 3)])
def test_equal_to_fattree_when_m_equals_w(levels, w):
    ft, gt = FatTree(levels, w), GeneralizedFatTree(levels, w, w)
    assert general_tree(ft) == gt and general_tree(gt) is gt
    assert gt.num_nodes == ft.num_nodes and gt.num_switches == ft.num_switches
    assert list(gt.up_links()) == list(ft.up_links())
    for h in ft.link_levels():
        for t in ft.switches(h):
            for p in ft.ports():
                assert gt.up_neighbour(h, t, p) == ft.up_neighbour(h, t, p)
                if h:
                    assert gt.down_neighbour(h, t, p) == ft.down_neighbour(h, t, p)
    rng = random.Random(levels * w)
    for _ in range(200):
        src, dst = rng.randrange(ft.num_nodes), rng.randrange(ft.num_nodes)
        height = ft.common_level(src, dst)
        assert gt.common_level(src, dst) == height
        ports = [rng.randrange(w) for _ in range(height)]
        assert gt.route(src, dst, ports) == ft.route(src, dst, ports)
        assert gt.ancestor(src // w, ports) == ft.ancestor(src // w, ports)


def test_paper_example_in_the_general_numbering():
    # Fig. 8: FT(4, 4, 4), node 3 -> node 95 is switch (0,000) -> (0,113); P = 0, 1, 0 leads
    # to SW(1, 110), SW(2, 101) on the destination side (base 4).
    tree = GeneralizedFatTree(4, 4, 4)
    assert tree.node_switch(3) == (0, 3) and tree.node_switch(95) == (23, 3)
    assert tree.common_level(3, 95) == 3
    assert tree.ancestor(23, [0]) == int("110", 4)
    assert tree.ancestor(23, [0, 1]) == int("101", 4)
    assert tree.ancestor(0, [0, 1]) == int("001", 4)


def test_tapered_example():
    # FT(3, 4, 2): 64 nodes, 16 leaf switches of 4 nodes with 2 up links each, 8 switches at
    # level 1, 4 at the top.
    tree = GeneralizedFatTree(3, 4, 2)
    assert tree.switch_counts == (16, 8, 4) and tree.num_nodes == 64 and tree.num_switches == 16
    assert tree.name() == "FT(3, 4, 2)" and GeneralizedFatTree(3, 2, 2).name() == "FT(3, 2)"
    # Node 5 is on leaf switch 1 (port 1); it reaches SW(1, 0*2 + P0) via its base-4 digit 0.
    assert tree.node_switch(5) == (1, 1)
    assert [tree.next_switch(0, 1, p) for p in range(2)] == [0, 1]
    assert [tree.next_switch(0, 4, p) for p in range(2)] == [2, 3]
    assert tree.common_level(0, 63) == 2 and tree.common_level(0, 5) == 1


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (
            lambda: GeneralizedFatTree(0, 2, 2),
            ValueError,
            "levels must be a positive integer, not 0",
        ),
        (lambda: GeneralizedFatTree(2, 1, 2), ValueError, "m must be at least 2, not 1"),
        (lambda: GeneralizedFatTree(2, 2, 1), ValueError, "w must be at least 2, not 1"),
        (lambda: GeneralizedFatTree(2, "4", 2), TypeError, "m must be an integer, not '4'"),
        (lambda: GeneralizedFatTree(3, 4, 2).next_switch(1, 8, 0), ValueError, "switch must be"),
        (lambda: GeneralizedFatTree(3, 4, 2).next_switch(0, 0, 2), ValueError, "port must be"),
        (
            lambda: GeneralizedFatTree(3, 4, 2).route(0, 63, [0]),
            ValueError,
            r"ports must have 2 entries \(the common level of nodes 0 and 63 in FT\(3, 4, 2\)\)",
        ),
        (lambda: general_tree(3), TypeError, "tree must be a FatTree or a GeneralizedFatTree"),
    ],
)
def test_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()
