"""FT(l, w) topology against a link table built explicitly by the recursive rule of section 3."""

import itertools
import random

import pytest

from fattree.spec.topology import FatTree, Link

SIZES = [(1, 2), (1, 3), (2, 2), (2, 3), (2, 4), (3, 2), (3, 3), (3, 4), (4, 2), (4, 3), (5, 2)]


def recursive_table(levels, w):
    """``{(h, t, i): (h + 1, parent)}`` by the construction rule, without Theorem 1:
    FT(1, w) is one switch; FT(k+1, w) is w copies of FT(k, w), copy c offsetting its switch
    indices by c * w**(k-1), plus w**k new switches, SW(k-1, t) port j -> SW(k, (t*w) mod w**k
    + j)."""
    table = {}
    for k in range(1, levels):
        # Grow FT(k, w) (levels 0..k-1, w**(k-1) switches per level) into FT(k+1, w).
        per_level = w ** (k - 1)
        grown = {}
        for c in range(w):
            for (h, t, i), (h2, t2) in table.items():
                grown[(h, c * per_level + t, i)] = (h2, c * per_level + t2)
        for t in range(w**k):
            for j in range(w):
                grown[(k - 1, t, j)] = (k, (t * w) % w**k + j)
        table = grown
    return table


def children_table(table):
    """Parent -> its children in increasing index order (the documented down-port order)."""
    children = {}
    for (_h, t, i), parent in table.items():
        children.setdefault(parent, []).append((t, i))
    return {parent: sorted(kids) for parent, kids in children.items()}


@pytest.mark.parametrize("levels, w", SIZES)
def test_up_neighbour_matches_construction(levels, w):
    tree = FatTree(levels, w)
    table = recursive_table(levels, w)
    assert len(table) == (levels - 1) * w**levels
    assert {(link.level, link.switch, link.port) for link in tree.up_links()} == set(table)
    children = children_table(table)
    for (h, t, i), (h2, parent) in table.items():
        assert tree.next_switch(h, t, i) == parent
        down_port = children[(h2, parent)].index((t, i))
        assert tree.up_neighbour(h, t, i) == (h2, parent, down_port)
        assert tree.down_neighbour(h2, parent, down_port) == (h, t, i)


@pytest.mark.parametrize("levels, w", SIZES)
def test_every_switch_has_w_parents_and_w_children(levels, w):
    table = recursive_table(levels, w)
    children = children_table(table)
    for h in range(levels - 1):
        for t in range(w ** (levels - 1)):
            assert len({table[(h, t, i)] for i in range(w)}) == w  # w distinct parents
            assert len(children[(h + 1, t)]) == w


def tree_paths(levels, w, table, src_switch, dst_switch):
    """All (ports, up switches, down switches) from the explicit table: climb by every port
    choice; a path reaches the destination when its top switch is also the destination's
    ancestor through the same climb of the destination (searched, not assumed)."""
    children = children_table(table)
    found = []
    for height in range(levels):
        for ports in itertools.product(range(w), repeat=height):
            up, t = [], src_switch
            for h, p in enumerate(ports):
                up.append((h, t))
                t = table[(h, t, p)][1]
            top = t
            # Walk down from the top by every down-port choice to find dst_switch.
            stack = [(height, top, [])]
            while stack:
                h, t, trail = stack.pop()
                if h == 0:
                    if t == dst_switch:
                        found.append((ports, up, trail))
                    continue
                for child, i in children[(h, t)]:
                    stack.append((h - 1, child, trail + [(h - 1, child, i)]))
    return found


@pytest.mark.parametrize("levels, w", [(2, 2), (2, 3), (3, 2), (3, 3), (4, 2)])
def test_theorem2_mirrored_down_path_exhaustive(levels, w):
    # Every route the explicit wiring allows from one leaf switch to another uses, on the way
    # down, the same port numbers in the destination's ancestors (Theorem 2), and the routes of
    # minimal height are exactly the ones FatTree.route gives.
    tree = FatTree(levels, w)
    table = recursive_table(levels, w)
    for s, d in itertools.product(range(w ** (levels - 1)), repeat=2):
        src, dst = s * w, d * w + (w - 1)
        height = tree.common_level(src, dst)
        paths = [p for p in tree_paths(levels, w, table, s, d) if len(p[0]) == height]
        assert len(paths) == w**height  # one route per port vector: no alternatives down
        for ports, up, down in paths:
            assert [i for (_, _, i) in down] == list(reversed(ports))
            route = tree.route(src, dst, ports)
            assert route[0] == Link("inject", 0, s, 0)
            assert route[-1] == Link("eject", 0, d, w - 1)
            assert [(x.level, x.switch) for x in route[1 : 1 + height]] == up
            assert [(x.level, x.switch, x.port) for x in route[1 + height : -1]] == down
        # No lower turn-around point exists.
        assert not [p for p in tree_paths(levels, w, table, s, d) if len(p[0]) < height]


def test_common_level_digits():
    tree = FatTree(4, 4)
    # The paper's example: node 3 (switch 000) to node 95 (switch 113, base 4) climbs to 3.
    assert tree.node_switch(3) == (0, 3) and tree.node_switch(95) == (23, 3)
    assert tree.digits(23) == [3, 1, 1]
    assert tree.common_level(3, 95) == 3
    assert tree.common_level(0, 3) == 0
    assert tree.common_level(0, 4) == 1
    assert tree.common_level(0, 16) == 2


def test_paper_examples():
    # Section 3: FT(3, 4), SW(0,0) to SW(0,6) with P0 = 1 comes down through Dlink(0, 6, 1).
    tree = FatTree(3, 4)
    route = tree.route(0, 6 * 4, [1, 2])
    assert Link("up", 0, 0, 1) in route and Link("down", 0, 6, 1) in route
    # Section 4, Fig. 8: FT(4, 4), node 3 -> node 95 with P = (0, 1, 0): level-1 switches
    # 000 -> s2 s1 P0 = 000 and 110; level-2 switches s2 P0 P1 = 001 and 101.
    tree = FatTree(4, 4)
    up = tree.up_path(3, [0, 1, 0])
    down = tree.down_path(95, [0, 1, 0])
    assert [x.switch for x in up] == [0, 0, 1]
    assert [x.switch for x in reversed(down)] == [int("113", 4), int("110", 4), int("101", 4)]


@pytest.mark.parametrize("levels, w", [(3, 4), (4, 3), (5, 2), (3, 16)])
def test_route_is_connected(levels, w):
    # Walking the returned links with up_neighbour / down_neighbour goes from src to dst.
    tree = FatTree(levels, w)
    rng = random.Random(levels * 100 + w)
    for _ in range(200):
        src, dst = rng.randrange(tree.num_nodes), rng.randrange(tree.num_nodes)
        height = tree.common_level(src, dst)
        ports = [rng.randrange(w) for _ in range(height)]
        route = tree.route(src, dst, ports)
        assert len(route) == 2 * height + 2
        here = tree.node_switch(src)[0]
        for link in route[1 : 1 + height]:
            assert link.switch == here
            _, here, _ = tree.up_neighbour(link.level, link.switch, link.port)
        for link in route[1 + height : -1]:
            # Coming down: the link is named by the child, which hangs on `here`.
            level, parent, down_port = tree.up_neighbour(link.level, link.switch, link.port)
            assert parent == here
            assert tree.down_neighbour(level, parent, down_port) == (
                link.level,
                link.switch,
                link.port,
            )
            here = link.switch
        assert tree.attached_node(here, route[-1].port) == dst


def test_enumeration_and_str():
    tree = FatTree(3, 4)
    assert (tree.num_nodes, tree.num_switches) == (64, 16)
    assert list(tree.nodes()) == list(range(64))
    assert list(tree.switches(2)) == list(range(16))
    assert list(tree.link_levels()) == [0, 1]
    assert len(tree.up_links()) == 2 * 64
    assert repr(tree) == "FatTree(levels=3, w=4)"
    assert tree == FatTree(3, 4) and tree != FatTree(3, 2) and len({tree, FatTree(3, 4)}) == 1
    assert [str(x) for x in tree.route(0, 63, [1, 2])] == [
        "I(0,0)",
        "U(0,0,1)",
        "U(1,1,2)",
        "D(1,13,2)",
        "D(0,15,1)",
        "E(15,3)",
    ]
    assert FatTree(1, 4).route(1, 2, []) == [Link("inject", 0, 0, 1), Link("eject", 0, 0, 2)]


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda: FatTree(0, 2), ValueError, "levels must be a positive integer, not 0"),
        (lambda: FatTree("3", 2), TypeError, "levels must be a positive integer, not '3'"),
        (lambda: FatTree(3, 1), ValueError, "w must be at least 2, not 1"),
        (lambda: FatTree(3, 2.0), TypeError, "w must be an integer, not 2.0"),
        (
            lambda: FatTree(2, 4).route(0, 16, []),
            ValueError,
            "dst must be between 0 and 15, not 16",
        ),
        (
            lambda: FatTree(2, 4).route(-1, 3, []),
            ValueError,
            "src must be between 0 and 15, not -1",
        ),
        (
            lambda: FatTree(3, 4).route(0, 63, [1]),
            ValueError,
            "ports must have 2 entries (the common level of nodes 0 and 63 in FT(3, 4)), not 1",
        ),
        (
            lambda: FatTree(3, 4).route(0, 63, [1, 4]),
            ValueError,
            "ports[1] must be between 0 and 3, not 4",
        ),
        (
            lambda: FatTree(3, 4).route(0, 63, "12"),
            TypeError,
            "ports must be a sequence of integers, not '12'",
        ),
        (
            lambda: FatTree(3, 4).next_switch(2, 0, 0),
            ValueError,
            "level must be between 0 and 1 for an up port (the top level has none), not 2",
        ),
        (
            lambda: FatTree(1, 4).up_neighbour(0, 0, 0),
            ValueError,
            "FT(1, 4) has no up links, level 0 has none",
        ),
        (
            lambda: FatTree(3, 4).down_neighbour(0, 0, 0),
            ValueError,
            "level must be between 1 and 2 for a switch with switches below it, not 0",
        ),
        (
            lambda: FatTree(3, 4).switches(3),
            ValueError,
            "level must be between 0 and 2, not 3",
        ),
        (
            lambda: FatTree(3, 4).up_neighbour(0, 16, 0),
            ValueError,
            "switch must be between 0 and 15, not 16",
        ),
        (
            lambda: FatTree(3, 4).ancestor(0, [0, 0, 0]),
            ValueError,
            "ports must have at most 2 entries in FT(3, 4), not 3",
        ),
    ],
)
def test_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message
