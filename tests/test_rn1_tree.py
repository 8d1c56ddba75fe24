"""The unit-tree and fat-tree generator (fattree/spec/rn1_tree.py): the derived component and
capacity tables, and that the generated wiring routes every pair of subtrees."""

from collections import Counter

import pytest

from fattree.spec.rn1_tree import (
    SUBTREES,
    UP,
    disperse,
    fat_tree,
    unit_tree,
)

TREES = {(w, seed): unit_tree(w, seed) for w in (2, 8) for seed in (None, 5)}


@pytest.mark.parametrize("width, counts", [(2, (8, 12, 16, 16)), (8, (32, 48, 64, 64))])
def test_components_per_layer(width, counts):
    tree = unit_tree(width)
    assert tuple(tree.layer_counts().values()) == counts
    assert sum(counts) == 26 * width  # 52 and 208: the 8-wide is four 2-wide stacks' worth


@pytest.mark.parametrize("key", TREES)
def test_capacities_grow_sixteen_fold_over_three_levels(key):
    w = key[0]
    rows = TREES[key].channels()
    assert [(r["channels"], r["up"], r["down"]) for r in rows] == [
        (64, w, w),
        (16, 3 * w, 3 * w),
        (4, 8 * w, 8 * w),
        (1, 16 * w, 16 * w),
    ]
    growth = rows[3]["up"] / rows[0]["up"]
    assert growth == 16 and abs(growth ** (1 / 3) - 4 ** (2 / 3)) < 1e-9


@pytest.mark.parametrize("key", TREES)
def test_every_port_is_wired_once(key):
    tree = TREES[key]
    sources = Counter(src for src, _ in tree.links)
    sinks = Counter(dst for _, dst in tree.links)
    assert max(sources.values()) == 1 and max(sinks.values()) == 1
    for name in tree.routers:
        assert sorted(p for kind, r, *p in sinks if kind == "in" and r == name) == [
            [k] for k in range(8)
        ]
        assert sorted(p for kind, r, *p in sources if kind == "out" and r == name) == [
            [k] for k in range(8)
        ]


def _follow(tree, start, digits):
    """Every sink reached from ``start`` when each down router takes direction
    ``digits[level - 1]`` (all of the direction's outputs, as the random choice may)."""
    nxt = dict(tree.links)
    frontier, reached = [start], set()
    while frontier:
        sink = nxt[frontier.pop()]
        if sink[0] != "in":
            reached.add(sink)
            continue
        r = tree.routers[sink[1]]
        level = int(r.layer[-1])
        d = digits[level - 1]
        if r.mode == "alternate":
            frontier.append(("out", r.name, 4 * (sink[2] // 4) + d))
        else:
            frontier += [("out", r.name, 2 * d), ("out", r.name, 2 * d + 1)]
    return reached


# The 8-wide trees: seconds each, the same check as on the 2-wide ones, slow points.
@pytest.mark.parametrize(
    "key", [pytest.param(k, marks=pytest.mark.slow) if k[0] == 8 else k for k in TREES]
)
def test_every_pair_of_subtrees_is_routed(key):
    tree = TREES[key]
    w = tree.width
    for s in range(0, SUBTREES, 3):
        for t in range(SUBTREES):
            if s == t:
                continue
            level = ((s ^ t).bit_length() + 1) // 2  # lowest common node's level
            digits = [(t >> 2 * k) & 3 for k in range(3)]
            # Up router: crossover of that level (all of its outputs), then down to t.
            for k in range(w):
                _, up, port = next(dst for src, dst in tree.links if src == ("sub_up", s, k))
                if tree.routers[up].mode == "alternate":
                    ports = [4 * (port // 4) + level - 1]
                else:
                    ports = [2 * (level - 1), 2 * (level - 1) + 1]
                reached = set()
                for p in ports:
                    reached |= _follow(tree, ("out", up, p), digits)
                assert reached and reached <= {("sub_down", t, k) for k in range(w)}
    # From the top, every subtree and every one of its links.
    for t in range(SUBTREES):
        digits = [(t >> 2 * k) & 3 for k in range(3)]
        reached = set()
        for k in range(16 * w):
            reached |= _follow(tree, ("top_down", k), digits)
        assert reached == {("sub_down", t, k) for k in range(w)}


def test_up_direction_leaves_the_top():
    tree = unit_tree(8)
    tops = [src for src, dst in tree.links if dst[0] == "top_up"]
    assert len(tops) == 128 and all(p in (2 * UP, 2 * UP + 1) for _, _, p in tops)


def test_two_wide_last_stage_feeds_each_node_from_two_chips():
    tree = unit_tree(2)
    for t in range(SUBTREES):
        chips = {src[1] for src, dst in tree.links if dst[:2] == ("sub_down", t)}
        assert len(chips) == 2
        assert all(tree.routers[c].mode == "alternate" for c in chips)


def test_dispersion_is_even():
    # A 2-wide leaf unit tree (32 top links) into a node of 4 unit trees: 8 links each.
    assert Counter(p for _, _, p in disperse(1, 32, 4)) == {p: 8 for p in range(4)}
    # A node of four 8-wide unit trees (128 top links each) into 64: each child tree gives
    # 2 links to every parent tree.
    wiring = disperse(4, 128, 64)
    per = Counter((t, p) for t, _, p in wiring)
    assert set(per.values()) == {2} and len(per) == 4 * 64
    with pytest.raises(ValueError, match="do not fill"):
        disperse(1, 32, 3)


def test_fat_tree_counts():
    counts = [fat_tree(n) for n in (1, 2, 3)]
    assert [c.processors for c in counts] == [64, 4096, 262144]
    assert [c.routers for c in counts] == [52, 64 * 52 + 4 * 208, 4096 * 52 + 256 * 208 + 64 * 208]
    three = counts[2].stages
    assert [(s.nodes, s.trees_per_node, s.width, s.top) for s in three] == [
        (4096, 1, 2, 32),
        (64, 4, 8, 512),
        (1, 64, 8, 8192),
    ]
    # Parent stages have a quarter of the unit trees of their child stage (same width).
    assert three[1].trees == 4 * three[2].trees


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: unit_tree(4), "width must be 2 or 8, not 4"),
        (lambda: fat_tree(0), "stages must be between 1 and 6, not 0"),
    ],
)
def test_parameter_errors(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


def test_dehon_components_experiment():
    import argparse

    from fattree.sim.experiments import registry

    result = registry()["dehon-components"].run(argparse.Namespace(stages=[1, 2], seed=None))
    rows = {(r[0], r[1]): r for r in result.rows}
    assert rows["unit tree 2-wide", "-"][4:7] == [52, "8/12/16/16", "2/6/16/32"]
    assert rows["unit tree 8-wide", "-"][4:7] == [208, "32/48/64/64", "8/24/64/128"]
    assert rows["fat-tree", 2][2:5] == [4096, "64/4", 4160]
    assert result.extra["unit_trees"]["8"]["channels"][1]["down"] == 24


def _deliver(tree, start, head):
    """Every sink a head reaches from ``start``, each router taking direction ``head & 3``
    (all of the direction's outputs) and passing the head on rotated, as the RN1 does."""
    from fattree.spec.rn1 import pass_head

    nxt = dict(tree.links)
    frontier, reached = [(start, head)], set()
    while frontier:
        end, h = frontier.pop()
        sink = nxt[end]
        if sink[0] != "in":
            reached.add(sink)
            continue
        r, d = tree.routers[sink[1]], h & 3
        ports = [4 * (sink[2] // 4) + d] if r.mode == "alternate" else [2 * d, 2 * d + 1]
        frontier += [(("out", r.name, p), pass_head(h)) for p in ports]
    return reached


@pytest.mark.parametrize("width", [2, 8])
def test_route_heads_reach_their_destination(width):
    from fattree.spec.rn1 import head_for

    tree = TREES[width, None]
    for s in range(SUBTREES):
        for t in range(SUBTREES):
            if s == t:
                continue
            head = head_for(tree.route(s, t), fill=s)
            assert tree.destination(s, head) == t
            reached = _deliver(tree, ("sub_up", s, width - 1), head)
            assert reached and reached <= {("sub_down", t, k) for k in range(width)}
        up = head_for(tree.route(s, None))
        assert tree.destination(s, up) is None
        assert {e[0] for e in _deliver(tree, ("sub_up", s, 0), up)} == {"top_up"}
    for t in range(SUBTREES):
        head = head_for(tree.route(None, t), fill=0xFF)
        assert tree.destination(None, head) == t
        assert _deliver(tree, ("top_down", t % 16), head) <= {
            ("sub_down", t, k) for k in range(width)
        }
    with pytest.raises(ValueError, match="cannot route to itself"):
        tree.route(5, 5)


# --- single faults: widest dispersal of a subtree's links over the up routers -------------


@pytest.mark.parametrize("key", TREES)
def test_a_subtrees_links_enter_different_up_routers(key):
    tree = TREES[key]
    w = tree.width
    for t in range(SUBTREES):
        ups = [dst[1] for src, dst in tree.links if src[:2] == ("sub_up", t)]
        assert len(ups) == w and all(tree.routers[u].layer == "up" for u in ups)
        # 2-wide: two chips (dual crossbar); 8-wide: four routers, two links each (an up
        # router takes one level-1 node's links, whose node its crossovers enter).
        assert Counter(Counter(ups).values()) == ({1: 2} if w == 2 else {2: 4})


def _everyone(n):
    import numpy as np

    everyone = np.ones((n, n), dtype=bool)
    np.fill_diagonal(everyone, False)
    return everyone


@pytest.mark.parametrize("seed", [None, 1, 2])
def test_any_one_dead_router_of_the_unit_tree_cuts_no_pair(seed):
    # Before the dispersal, a dead up router cut its 4 nodes off (252 of the 4032 pairs) and
    # 44 of the 52 routers cut some pair (a down router's two links into one chip).
    from fattree.spec.rn1_tree import fat_tree_network

    net = fat_tree_network(1, seed)
    everyone = _everyone(net.nodes)
    assert (net.connected() == everyone).all()
    for key in net.routers:
        assert (net.connected(dead=[key]) == everyone).all(), key
    # Two faults can cut: up chips 0 and 1 are both ways up of level-1 nodes 0 and 1, whose 8
    # nodes then reach no one (they are still reached); every other pair is kept.
    cut = net.connected(dead=[(1, 0, "up0"), (1, 0, "up1")])
    assert (~cut[:8].any(axis=1)).sum() == 8 and cut[8:].sum() == everyone[8:].sum()


@pytest.mark.parametrize(
    "seed, step", [(None, 5), (3, 5), pytest.param(None, 1, marks=pytest.mark.slow)]
)
def test_any_one_dead_link_of_the_unit_tree_cuts_no_pair(seed, step):
    # Every link takes ~35 s: by default every fifth (all of them behind --run-slow).
    from fattree.spec.rn1_tree import fat_tree_network

    net = fat_tree_network(1, seed)
    everyone = _everyone(net.nodes)
    ends = [src for src, dst in net.links if dst[0] != "top_up" and src[0] != "top_down"]
    assert len(ends) == 64 * 2 + 52 * 8 - 32  # node links, router outputs but the top's
    for end in ends[::step]:
        assert (net.connected(links=[end]) == everyone).all(), end


def test_a_dead_parent_up_router_keeps_a_12_node_cluster_sending():
    # The 8-wide unit tree used to give a subtree port's 8 links (a 12-node cluster's way up)
    # to one up router: that router dead, the cluster sent nothing out (0 of 12 x 756 pairs).
    from fattree.spec.rn1_hybrid import hybrid_network

    net = hybrid_network(12, 2, None)
    everyone = _everyone(net.nodes)
    for u in range(16, 24):  # the up routers of level-1 node 4 (clusters 16..19)
        assert (net.connected(dead=[(2, 0, f"up{u}")]) == everyone).all(), u
