"""DeHon's fat-tree of several unit-tree stages (fattree/spec/rn1_tree.py
``fat_tree_network``): the wiring against the counts, routes of one head byte per unit tree
crossed followed through the wiring (routers rotate the head, swallows drop it)."""

import random
from collections import Counter

import pytest

from fattree.spec.rn1 import pass_head
from fattree.spec.rn1_tree import fat_tree, fat_tree_network, unit_tree

NETS = {(2, None): fat_tree_network(2), (2, 7): fat_tree_network(2, 7)}


def level(a: int, b: int) -> int:
    """Tree level of the lowest common node of processing nodes ``a`` and ``b``."""
    return ((a ^ b).bit_length() + 1) // 2


def pair_at(level_: int, rng: random.Random, nodes: int) -> tuple[int, int]:
    """A random (source, destination) pair whose lowest common node is at ``level_``."""
    while True:
        a = rng.randrange(nodes)
        b = a ^ rng.randrange(1 << 2 * (level_ - 1), 1 << 2 * level_)
        if b < nodes and level(a, b) == level_:
            return a, b


_NEXT = {}  # id(net) -> (net, sink of every link source)


def deliver(net, start, heads):
    """Every sink the head bytes ``heads`` reach from link source ``start``: a router takes
    direction ``heads[0] & 3`` (all of the direction's outputs, as the random choice may)
    and passes the byte on rotated; a swallow drops the first byte."""
    if id(net) not in _NEXT:
        _NEXT[id(net)] = (net, dict(net.links))
    nxt = _NEXT[id(net)][1]
    frontier, reached = [(start, tuple(heads))], set()
    while frontier:
        end, hs = frontier.pop()
        sink = nxt[end]
        if sink[0] != "in":
            reached.add((sink, hs))
            continue
        key, port = sink[1:-1], sink[-1]
        if key[0] == "sw":
            frontier.append((("out", *key, 0), hs[1:]))
            continue
        mode, d = net.routers[key][0], hs[0] & 3
        ports = [4 * (port // 4) + d] if mode == "alternate" else [2 * d, 2 * d + 1]
        frontier += [(("out", *key, p), (pass_head(hs[0]), *hs[1:])) for p in ports]
    return reached


@pytest.mark.parametrize("stages", [1, 2])
def test_wiring_matches_the_counts(stages):
    net = fat_tree_network(stages, 3)
    counts = fat_tree(stages)
    assert len(net.routers) == counts.routers == {1: 52, 2: 4160}[stages]
    assert [(r["trees"], r["routers"], r["top"]) for r in net.counts()] == [
        (s.trees, s.routers, s.top) for s in counts.stages
    ]
    # Every port of every router and swallow is wired once, every edge channel once.
    sources = Counter(src for src, _ in net.links)
    sinks = Counter(dst for _, dst in net.links)
    assert set(sources.values()) == {1} and set(sinks.values()) == {1}
    ports = {(key, p) for key in net.routers for p in range(8)}
    ports |= {(key, 0) for key in net.swallows}
    assert {(e[1:-1], e[-1]) for e in sinks if e[0] == "in"} == ports
    assert {(e[1:-1], e[-1]) for e in sources if e[0] == "out"} == ports
    assert {e for e in sources if e[0] not in ("in", "out")} == set(net.inputs)
    assert {e for e in sinks if e[0] not in ("in", "out")} == set(net.outputs)
    assert len(net.inputs) == len(net.outputs) == 2 * 64**stages + counts.stages[-1].top
    # One swallow on each side of every link between stages: 2 x 64 x 32 at two stages.
    assert len(net.swallows) == (0 if stages == 1 else 2 * 64 * 32)


def test_one_stage_is_the_unit_tree():
    net, tree = fat_tree_network(1, lfsr_seed=9), unit_tree(2)
    assert net.routers == {(1, 0, *k): v for k, v in tree.router_modes(9).items()}
    rename = {"sub_up": "ep_out", "sub_down": "ep_in"}

    def local(end):
        if end[0] in ("in", "out"):
            return (end[0], end[3], *end[4:])
        if end[0] in ("top_up", "top_down"):
            return (end[0], end[2])
        return ({v: k for k, v in rename.items()}[end[0]], *end[1:])

    assert sorted((local(a), local(b)) for a, b in net.links) == sorted(tree.links)


@pytest.mark.parametrize("key", NETS)
def test_dispersion_sends_an_up_routers_links_to_different_parent_trees(key):
    net = NETS[key]
    ups = Counter()  # (leaf tree, up router, parent tree)
    for src, dst in net.links:
        if src[:2] == ("out", 1) and dst[:3] == ("in", "sw", 2):
            ups[src[2], src[3], dst[3]] += 1
    for t in net.stage_trees(1):
        parents = Counter({(u, p): n for (tree, u, p), n in ups.items() if tree == t})
        assert len(parents) == 32 and set(parents.values()) == {1}
        assert Counter(p for _, p in parents) == {p: 8 for p in range(4)}
    blocked = fat_tree_network(2, dispersed=False)
    ups = {
        (src[3], dst[3])
        for src, dst in blocked.links
        if src[:3] == ("out", 1, 0) and dst[:2] == ("in", "sw")
    }
    assert len(ups) == 16  # both links of an up router into one parent tree


@pytest.mark.parametrize("key", NETS)
def test_routes_reach_their_destination_at_every_level(key):
    net = NETS[key]
    rng = random.Random(key[1] or 0)
    for level_ in range(1, 7):
        for _ in range(12):
            a, b = pair_at(level_, rng, net.nodes)
            heads = net.heads(a, b, fill=rng.getrandbits(8))
            route = net.route(a, b)
            stage = -(-level_ // 3)  # the unit-tree stage that crosses over
            assert len(heads) == 2 * stage - 1  # one byte per unit tree crossed
            assert sum(map(len, route)) == stage + level_  # ceil(L / 3) + L routers
            for k in range(2):
                reached = deliver(net, ("ep_out", a, k), heads)
                assert reached and {s for s, _ in reached} <= {("ep_in", b, 0), ("ep_in", b, 1)}
                # What arrives is the last head byte as its unit tree's routers pass it on.
                last = heads[-1]
                for _ in route[-1]:
                    last = pass_head(last)
                assert {hs for _, hs in reached} == {(last,)}


def test_routes_to_and_from_the_root_top():
    net = NETS[2, 7]
    for b in (0, 1000, 4095):
        reached = deliver(net, ("top_down", 2, 77), net.heads(None, b))
        assert {s for s, _ in reached} <= {("ep_in", b, 0), ("ep_in", b, 1)} and reached
    reached = deliver(net, ("ep_out", 99, 1), net.heads(99, None))
    assert reached and {s[0] for s, _ in reached} == {"top_up"}


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: fat_tree_network(3), ValueError, "stages must be between 1 and 2, not 3"),
        (lambda: NETS[2, None].route(5, 5), ValueError, "a node cannot route to itself (5)"),
        (
            lambda: NETS[2, None].route(0, 4096),
            ValueError,
            "node must be between 0 and 4095, not 4096",
        ),
    ],
)
def test_parameter_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message
