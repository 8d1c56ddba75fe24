"""DeHon's hybrid fat-trees (fattree/spec/rn1_hybrid.py): bidelta leaf clusters against the
counts derived from the paper's rules, alone and under a stage of 8-wide unit trees; routes
followed through the wiring; traffic and head cycles on the cycle-exact model; pairs still
connected under faults against a path search."""

import random
from collections import Counter

import numpy as np
import pytest

from fattree.sim.checks.rn1 import (
    BURST,
    End,
    Knobs,
    delivered_by_node,
    network_queues,
    run_network_traffic,
)
from fattree.sim.models.rn1 import RN1HybridModel, RN1NetworkModel, RN1SparseNetworkModel
from fattree.spec.rn1 import BLOCKED, CONNECTED, DROP, pass_head, word
from fattree.spec.rn1_hybrid import (
    CLUSTER_SIZES,
    hybrid_fat_tree,
    hybrid_locality,
    hybrid_network,
    leaf_cluster,
)
from fattree.spec.rn1_tree import UP, unit_tree

NETS = {}


def net_of(cluster, stages, seed=None, dispersed=True):
    """One wiring per parameter set for the module (read-only in the tests)."""
    key = (cluster, stages, seed, dispersed)
    if key not in NETS:
        NETS[key] = hybrid_network(cluster, stages, seed, dispersed=dispersed)
    return NETS[key]


_SINK = {}


def sink_of(net):
    if id(net) not in _SINK:
        _SINK[id(net)] = (net, dict(net.links))
    return _SINK[id(net)][1]


def deliver(net, start, heads, dead=(), stacks=()):
    """Every sink the head bytes reach from link source ``start``: a router takes every
    output of direction ``heads[0] & 3`` (as the random choice may) and passes the byte on
    rotated; a swallow drops the first byte. Dead elements and stacks pass nothing."""
    nxt = sink_of(net)
    frontier, reached, seen = [(start, tuple(heads))], set(), set()
    while frontier:
        end, hs = frontier.pop()
        if (end, hs) in seen:
            continue
        seen.add((end, hs))
        sink = nxt[end]
        if sink[0] != "in":
            reached.add((sink, hs))
            continue
        key, port = sink[1:-1], sink[-1]
        stack = (key[1], key[2]) if key[0] == "sw" else key[:2]
        if key in dead or stack in stacks:
            continue
        if key[0] == "sw":
            frontier.append((("out", *key, 0), hs[1:]))
            continue
        mode, d = net.routers[key][0], hs[0] & 3
        ports = [4 * (port // 4) + d] if mode == "alternate" else [2 * d, 2 * d + 1]
        frontier += [(("out", *key, p), (pass_head(hs[0]), *hs[1:])) for p in ports]
    return reached


def pair_in(net, cls, rng):
    """A random (source, destination) pair of distance class ``cls`` (0: one cluster; ``L``:
    clusters whose lowest common node in the parent unit tree is at level ``L``)."""
    n = net.cluster
    while True:
        a, b = rng.randrange(net.nodes), rng.randrange(net.nodes)
        if a == b:
            continue
        ca, cb = a // n, b // n
        level = 0 if ca == cb else ((ca ^ cb).bit_length() + 1) // 2
        if level == cls:
            return a, b


# --- The leaf cluster and the hybrid tree against the derivation ---------------------------


@pytest.mark.parametrize("n", CLUSTER_SIZES)
def test_cluster_counts_follow_the_derivation(n):
    c = leaf_cluster(n)
    stages = {12: 2, 48: 3, 192: 4}[n]
    # n = 3 * 4^(s - 1): the first stage picks a third, every later stage a quarter.
    assert c.stages == stages and n == 3 * 4 ** (stages - 1)
    # 8 r = 2n + 2n / 3 first-stage inputs (a quarter from the tree): r = n / 3; later
    # stages n / 4 routers (the 2n links of a bidelta stage).
    assert c.layer_counts() == {"s0": n // 3, **{f"s{j}": n // 4 for j in range(1, stages)}}
    assert len(c.routers) == {12: 7, 48: 40, 192: 208}[n]
    assert c.top == {12: 8, 48: 32, 192: 128}[n]
    # The up links fit the unit trees: one 8-wide subtree port, a 2-wide top, an 8-wide top.
    assert c.top in (8, 16 * unit_tree(2).width, 16 * unit_tree(8).width)
    modes = Counter((r.layer, r.mode) for r in c.routers.values())
    assert all(
        mode == ("alternate" if layer == f"s{stages - 1}" else "primary") for layer, mode in modes
    )


@pytest.mark.parametrize("n, seed", [(12, None), (12, 3), (48, None), (48, 5), (192, 2)])
def test_cluster_ports_each_wired_once_and_the_quarter_from_the_tree(n, seed):
    c = leaf_cluster(n, seed)
    sources = Counter(src for src, _ in c.links)
    sinks = Counter(dst for _, dst in c.links)
    assert set(sources.values()) == {1} and set(sinks.values()) == {1}
    ports = {(name, p) for name in c.routers for p in range(8)}
    assert {e[1:] for e in sinks if e[0] == "in"} == ports
    assert {e[1:] for e in sources if e[0] == "out"} == ports
    assert {e for e in sources if e[0] != "out"} == set(c.inputs())
    assert {e for e in sinks if e[0] != "in"} == set(c.outputs())
    into = {dst: src for src, dst in c.links}
    outof = dict(c.links)
    for r in range(n // 3):
        kinds = Counter(into["in", f"s0_{r}", p][0] for p in range(8))
        assert kinds == {"sub_up": 6, "top_down": 2}  # one quarter from the tree
        # Direction 3 of the first stage goes to the tree, directions 0..2 to stage 1.
        assert {outof["out", f"s0_{r}", p][0] for p in (6, 7)} == {"top_up"}
        assert all(outof["out", f"s0_{r}", p][1].startswith("s1_") for p in range(6))
    for e in range(n):
        # A node's two ways in and out use different routers.
        assert len({outof["sub_up", e, k][1] for k in range(2)}) == 2
        assert len({into["sub_down", e, k][1] for k in range(2)}) == 2


@pytest.mark.parametrize("cluster, stages, seed", [(12, 1, 4), (12, 2, None), (48, 2, 7)])
def test_hybrid_wiring_matches_the_counts(cluster, stages, seed):
    net = net_of(cluster, stages, seed)
    counts = hybrid_fat_tree(cluster, stages)
    assert len(net.routers) == counts.routers
    assert (
        counts.routers
        == {(12, 1): 7, (12, 2): 64 * 7 + 208, (48, 2): 64 * 40 + 4 * 208}[cluster, stages]
    )
    assert [(r["trees"], r["routers"], r["top"]) for r in net.counts()] == [
        (s.trees, s.routers, s.top) for s in counts.stages
    ]
    sources = Counter(src for src, _ in net.links)
    sinks = Counter(dst for _, dst in net.links)
    assert set(sources.values()) == {1} and set(sinks.values()) == {1}
    ports = {(key, p) for key in net.routers for p in range(8)}
    ports |= {(key, 0) for key in net.swallows}
    assert {(e[1:-1], e[-1]) for e in sinks if e[0] == "in"} == ports
    assert {(e[1:-1], e[-1]) for e in sources if e[0] == "out"} == ports
    assert {e for e in sources if e[0] not in ("in", "out")} == set(net.inputs)
    assert {e for e in sinks if e[0] not in ("in", "out")} == set(net.outputs)
    assert len(net.inputs) == len(net.outputs) == 2 * net.nodes + counts.stages[-1].top
    top = leaf_cluster(cluster).top
    assert len(net.swallows) == (0 if stages == 1 else 2 * 64 * top)


def test_three_stage_counts():
    # Counts only (two stages are the wired ones): a parent node over 64 nodes whose top is
    # c links is c / 8 unit trees, with a top 16 times as wide.
    c12, c48 = hybrid_fat_tree(12, 3), hybrid_fat_tree(48, 3)
    assert [(s.trees, s.top) for s in c12.stages] == [(4096, 8), (64, 128), (16, 2048)]
    assert c12.processors == 12 * 4096 and c12.routers == 4096 * 7 + 80 * 208
    assert [(s.trees, s.top) for s in c48.stages] == [(4096, 32), (256, 512), (64, 8192)]
    assert c48.routers == 4096 * 40 + 320 * 208


@pytest.mark.parametrize("seed", [None, 6])
def test_dispersion_sends_a_first_stage_routers_up_links_to_different_parent_trees(seed):
    net = net_of(48, 2, seed)
    ups = Counter()  # (cluster, first-stage router, parent tree)
    for src, dst in net.links:
        if src[:2] == ("out", 1) and dst[:3] == ("in", "sw", 2):
            ups[src[2], src[3], dst[3]] += 1
    for t in net.stage_trees(1):
        mine = Counter({(r, p): k for (x, r, p), k in ups.items() if x == t})
        assert len(mine) == 32 and set(mine.values()) == {1}  # 16 routers, 2 parents each
        assert Counter(p for _, p in mine) == {p: 8 for p in range(4)}
    blocked = net_of(48, 2, None, dispersed=False)
    pairs = {
        (src[3], dst[3])
        for src, dst in blocked.links
        if src[:3] == ("out", 1, 0) and dst[:2] == ("in", "sw")
    }
    assert len(pairs) == 16  # both links of a router into one parent tree


# --- Routes --------------------------------------------------------------------------------


@pytest.mark.parametrize("cluster, stages, seed", [(12, 1, 4), (12, 2, None), (48, 2, 7)])
def test_routes_reach_their_destination_in_every_distance_class(cluster, stages, seed):
    net = net_of(cluster, stages, seed)
    rng = random.Random(seed or 0)
    classes = hybrid_locality(cluster, stages)
    assert sum(r["endpoints"] for r in classes) == net.nodes - 1
    for cls, row in enumerate(classes):
        for _ in range(10):
            a, b = pair_in(net, cls, rng)
            route = net.route(a, b)
            heads = net.heads(a, b, fill=rng.getrandbits(8))
            assert sum(map(len, route)) == row["routers"]
            assert len(route) - 1 == row["swallows"]  # one byte per stack crossed
            for k in range(2):
                reached = deliver(net, ("ep_out", a, k), heads)
                assert reached and {s for s, _ in reached} <= {("ep_in", b, 0), ("ep_in", b, 1)}
                last = heads[-1]
                for _ in route[-1]:
                    last = pass_head(last)
                assert {hs for _, hs in reached} == {(last,)}


def test_routes_to_and_from_the_top():
    net = net_of(12, 2, 3)
    for b in (0, 100, 767):
        reached = deliver(net, ("top_down", 0, 77), net.heads(None, b))
        assert reached and {s for s, _ in reached} <= {("ep_in", b, 0), ("ep_in", b, 1)}
    reached = deliver(net, ("ep_out", 99, 1), net.heads(99, None))
    assert reached and {s[0] for s, _ in reached} == {"top_up"}
    one = net_of(12, 1, 4)
    assert one.route(5, None) == [[UP]]
    reached = deliver(one, ("top_down", 0, 3), one.heads(None, 11))
    assert reached and {s for s, _ in reached} <= {("ep_in", 11, 0), ("ep_in", 11, 1)}


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: leaf_cluster(16), ValueError, "nodes must be 12, 48 or 192, not 16"),
        (lambda: leaf_cluster(12.0), TypeError, "nodes must be 12, 48 or 192, not 12.0"),
        (lambda: hybrid_fat_tree(24, 2), ValueError, "cluster must be 12, 48 or 192, not 24"),
        (lambda: hybrid_network(12, 3), ValueError, "stages must be between 1 and 2, not 3"),
        (lambda: hybrid_network(12, 2, -1), ValueError, "seed must be at least 0, not -1"),
        (
            lambda: hybrid_network(12, 1, dispersed="no"),
            TypeError,
            "dispersed must be True or False, not 'no'",
        ),
        (lambda: net_of(12, 2).route(5, 5), ValueError, "a node cannot route to itself (5)"),
        (
            lambda: net_of(12, 2).route(0, 768),
            ValueError,
            "node must be between 0 and 767, not 768",
        ),
    ],
)
def test_parameter_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message


# --- The model: traffic inside clusters and across, head cycles per class ----------------

MODELS = {}


def model_of(cluster, stages, seed=None):
    if (cluster, stages, seed) not in MODELS:
        MODELS[cluster, stages, seed] = RN1HybridModel(cluster, stages, seed)
    model = MODELS[cluster, stages, seed]
    model.reset()
    return model


def run_traffic(model, queues, knobs, rng, limit=4000, shadow=None):
    return run_network_traffic(model, queues, knobs, rng, limit, shadow)


queues_for = network_queues
delivered = delivered_by_node


@pytest.mark.parametrize(
    "cluster, seed",
    [(12, None), (12, 5), (48, None), pytest.param(48, 3, marks=pytest.mark.slow)],
)
def test_transmissions_inside_and_across_clusters_arrive_with_turns_and_retries(cluster, seed):
    model = model_of(cluster, 2, seed)
    rng = random.Random(seed or 1)
    pairs = [pair_in(model.net, cls, rng) for cls in range(4) for _ in range(10)]
    queues, want = queues_for(model.net, pairs, rng)
    senders, receivers, _ = run_traffic(model, queues, Knobs(start=0.3, turn=0.4, busy=0.15), rng)
    assert delivered(receivers) == want
    sent = Counter(seg for s in senders.values() for tag, seg in s.sent if tag == "first")
    assert sum(sent.values()) == len(pairs)  # every status came back CONNECTED once
    ends = list(senders.values()) + list(receivers.values())
    turned = Counter(seg for e in ends for tag, seg in e.sent if tag == "turn")
    assert turned and turned == Counter(
        seg for e in ends for tag, seg in e.received if tag == "turn"
    )
    assert sum(s.blocked for s in senders.values()) > 0


def test_hot_spot_from_other_clusters_and_its_own():
    model = model_of(12, 2)
    rng = random.Random(4)
    sources = rng.sample(range(12, 768), 20) + [1, 2, 3, 7]
    queues, want = queues_for(model.net, [(a, 5) for a in sources], rng)
    senders, receivers, _ = run_traffic(model, queues, BURST, rng)
    assert delivered(receivers) == want
    assert sum(s.blocked for s in senders.values()) > 0


@pytest.mark.parametrize("seed", [None, 2])
def test_sparse_stepping_equals_the_plain_stepping_on_one_cluster(seed):
    net = net_of(12, 1, seed)
    parts = (net.routers, net.links, net.inputs, net.outputs, net.swallows)
    sparse, plain = RN1SparseNetworkModel(*parts), RN1NetworkModel(*parts)
    rng = random.Random(9)
    pairs = [tuple(rng.sample(range(12), 2)) for _ in range(30)]
    queues, want = queues_for(net, pairs, rng)
    _, receivers, _ = run_traffic(
        sparse, queues, Knobs(start=0.5, turn=0.3, busy=0.1), rng, shadow=plain
    )
    assert delivered(receivers) == want


def head_and_status_cycles(model, a, b):
    """(cycle the first word reaches node ``b``, cycle the CONNECTED status is back at
    ``a``) for one transmission of the route's head bytes, one data byte and DROP."""
    words = [word(1, h) for h in model.net.heads(a, b)] + [word(1, 0x5A), word(0, DROP)]
    arrive = None
    n = model.channels
    for cycle in range(80):
        o_fwd, i_bk = model.o_fwd, model.i_bk
        if arrive is None and any(o_fwd[2 * b + k] for k in range(2)):
            arrive = cycle
        if i_bk[2 * a] == word(0, CONNECTED):
            return arrive, cycle, len(words)
        assert i_bk[2 * a] != word(0, BLOCKED)
        i_fwd, o_bk = [0] * n, [0] * n
        i_fwd[2 * a] = words[cycle] if cycle < len(words) else 0
        for k in range(2):
            if o_fwd[2 * b + k] == word(0, DROP) and arrive is not None:
                o_bk[2 * b + k] = word(0, CONNECTED)
        model.step(i_fwd, o_bk)
    raise AssertionError("no status")


@pytest.mark.parametrize("cluster", [12, 48])
def test_head_cycles_are_the_routers_plus_the_swallows_in_every_class(cluster):
    rng = random.Random(cluster)
    for cls, row in enumerate(hybrid_locality(cluster, 2)):
        model = model_of(cluster, 2)
        a, b = pair_in(model.net, cls, rng)
        arrive, status, sent = head_and_status_cycles(model, a, b)
        r, s = row["routers"], row["swallows"]
        assert (r, s) == ({12: 2, 48: 3}[cluster] + (0 if cls == 0 else 2 + cls), 2 * (cls > 0))
        assert arrive == r + 2 * s
        assert status == sent - 1 + 2 * (r + s)


# --- Faults ----------------------------------------------------------------------------------


def path_exists(net, a, b, dead=(), links=(), stacks=()):
    dead, links, stacks = set(dead), set(links), set(stacks)
    nxt = sink_of(net)
    frontier = [(("ep_out", a, k), tuple(net.heads(a, b))) for k in range(2)]
    seen = set()
    while frontier:
        end, hs = frontier.pop()
        if (end, hs) in seen or end in links:
            continue
        seen.add((end, hs))
        sink = nxt[end]
        if sink[0] != "in":
            if sink[:2] == ("ep_in", b):
                return True
            continue
        key, port = sink[1:-1], sink[-1]
        stack = (key[1], key[2]) if key[0] == "sw" else key[:2]
        if key in dead or stack in stacks:
            continue
        if key[0] == "sw":
            frontier.append((("out", *key, 0), hs[1:]))
            continue
        mode, d = net.routers[key][0], hs[0] & 3
        ports = [4 * (port // 4) + d] if mode == "alternate" else [2 * d, 2 * d + 1]
        frontier += [(("out", *key, p), (pass_head(hs[0]), *hs[1:])) for p in ports]
    return False


@pytest.mark.parametrize("cluster, seed", [(12, 7), (48, 2)])
def test_connected_agrees_with_a_path_search(cluster, seed):
    net = net_of(cluster, 2, seed)
    # Random(6), not 5: since the random wiring keeps a direction's two links on different
    # routers (single-fault tolerant), 5's faults cut no pair inside a cluster among the 150.
    rng = random.Random(6)
    everyone = np.ones((net.nodes, net.nodes), dtype=bool)
    np.fill_diagonal(everyone, False)
    assert (net.connected() == everyone).all()
    # Faults packed into clusters 0..3 and parent tree 0, so pairs among those clusters lose
    # some of their paths and some all of them.
    near = {(1, 0), (1, 1), (1, 2), (1, 3), (2, 0)}
    mine = [
        src
        for src, _ in net.links
        if src[0] == "out" and (src[1:3] in near or src[1] == "sw" and src[2:4] in near)
    ]
    links = rng.sample(mine, len(mine) // 4)
    dead = rng.sample(sorted(k for k in net.routers if k[:2] in {(1, 0), (1, 2), (2, 0)}), 10)
    dead += rng.sample(sorted(k for k in net.swallows if k[1:3] in {(1, 1), (2, 0)}), 10)
    got = net.connected(dead=dead, links=links)
    cases = Counter()
    span = 4 * cluster
    for _ in range(150):
        a, b = rng.sample(range(span), 2)
        want = path_exists(net, a, b, dead, links)
        assert got[a, b] == want, (a, b)
        cases[want, a // cluster == b // cluster] += 1
    assert len(cases) == 4  # connected and cut pairs, inside a cluster and across
    got = net.connected(stacks=[(1, 2), (2, 1)])
    for _ in range(60):
        a, b = rng.sample(range(span), 2)
        assert got[a, b] == path_exists(net, a, b, stacks=[(1, 2), (2, 1)]), (a, b)


@pytest.mark.slow  # every choice of three parent trees of a 48-node-cluster hybrid
def test_stacks_that_can_go():
    # 48-node clusters: four parent unit trees. Dispersed by halves, any three of them can
    # go and every pair is still connected (every node's two first-stage routers reach all
    # four); wired in blocks, two can cut half the pairs. A cluster stack cuts exactly its own
    # nodes. 12-node clusters have one parent tree: traffic between clusters needs it.
    import itertools

    net = net_of(48, 2, 3)
    n = net.nodes
    everyone = np.ones((n, n), dtype=bool)
    np.fill_diagonal(everyone, False)
    for gone in itertools.combinations(net.stage_trees(2), 3):
        assert (net.connected(stacks=[(2, p) for p in gone]) == everyone).all(), gone
    same = np.equal.outer(np.arange(n) // 48, np.arange(n) // 48) & everyone
    assert (net.connected(stacks=[(2, p) for p in range(4)]) == same).all()
    blocks = net_of(48, 2, None, dispersed=False)
    assert (blocks.connected(stacks=[(2, 0)]) == everyone).all()
    # Blocks of 8 links: trees 0 and 2 take both up links of routers e mod 8 < 4 and 8 + e
    # mod 8, both of a node e's routers for half the nodes.
    assert blocks.connected(stacks=[(2, 0), (2, 2)]).sum() < 0.51 * everyone.sum()
    cut = everyone.copy()
    cut[48 * 9 : 48 * 10, :] = cut[:, 48 * 9 : 48 * 10] = False
    assert (net.connected(stacks=[(1, 9)]) == cut).all()
    small = net_of(12, 2, 3)
    same = np.equal.outer(np.arange(768) // 12, np.arange(768) // 12)
    assert (small.connected(stacks=[(2, 0)]) == (same & ~np.eye(768, dtype=bool))).all()


@pytest.mark.parametrize("cluster, seed", [(48, None), (48, 4), (192, 1)])
def test_every_node_reaches_four_parent_trees(cluster, seed):
    # Dispersion by halves: a node's two links enter one first-stage router of each half,
    # and the halves feed disjoint halves of the parent trees, two trees per router.
    net = net_of(cluster, 2, seed)
    sink = sink_of(net)
    for x in (0, 17, 63):
        for e in range(cluster):
            parents = set()
            for k in range(2):
                router = sink["ep_out", x * cluster + e, k][3]
                for p in (6, 7):
                    parents.add(sink["out", 1, x, router, 2 * UP + p - 6][3])
            assert len(parents) == 4, (x, e)


# --- The experiments -----------------------------------------------------------------------


def test_components_experiment_has_the_clusters_and_hybrid_trees():
    import argparse

    from fattree.sim.experiments import registry

    result = registry()["dehon-components"].run(argparse.Namespace(stages=[1, 2, 3], seed=None))
    rows = {(r[0], r[1]): r for r in result.rows}
    assert rows["leaf cluster 12", "-"][2:7] == [12, 1, 7, "4/3", "2/8"]
    assert rows["leaf cluster 48", "-"][4:7] == [40, "16/12/12", "2/32"]
    assert rows["leaf cluster 192", "-"][4:7] == [208, "64/48/48/48", "2/128"]
    assert rows["hybrid fat-tree 12", 2][2:7] == [768, "64/1", 656, "-", "8/128"]
    assert rows["hybrid fat-tree 48", 2][2:7] == [3072, "64/4", 3392, "-", "32/512"]
    assert rows["hybrid fat-tree 48", 3][2:5] == [196608, "4096/256/64", 230400]


def test_latency_experiment_measures_the_hybrid_classes():
    import argparse

    from fattree.sim.experiments import registry

    result = registry()["dehon-latency"].run(argparse.Namespace(stages=[1, 2]))
    rows = {(r[0], r[1], r[3]): r for r in result.rows}
    # Inside a cluster: its stages; across: up 1, the parent tree 1 + L, the cluster's
    # stages, two swallows of two cycles each (measured on RN1HybridModel).
    assert [rows["hybrid 12", 2, c][4:] for c in ("cluster", 1, 2, 3)] == [
        [11, 2, None, 2],
        [36, 5, None, 9],
        [144, 6, None, 10],
        [576, 7, None, 11],
    ]
    assert [rows["hybrid 48", 2, c][5:] for c in ("cluster", 1, 2, 3)] == [
        [3, None, 3],
        [6, None, 10],
        [7, None, 11],
        [8, None, 12],
    ]
    assert rows["hybrid 192", 1, "cluster"][4:] == [191, 4, None, 4]
    # Bidelta networks of the hybrids' sizes (the next power of four): log4 N stages.
    assert [r[2::3] for r in result.rows if r[0] == "bidelta (counted)"] == [
        [1024, 5],
        [4096, 6],
        [16384, 7],
    ]
    assert result.extra["locality"]["hybrid 48 3072"] == [[3, 47], [6, 191], [7, 767], [8, 3071]]
    assert result.extra["locality"]["fat-tree 4096"][:3] == [[2, 3], [3, 15], [4, 63]]


# --- Hardware: the 12-node leaf cluster against the model, every cycle ----------------------


def _cluster_traffic(net, rng, count):
    """Transmissions on every channel of one cluster: node to node, node up to the tree,
    tree down to a node (``count`` per input channel); returns (queues, expected arrivals
    keyed by (where, bytes as they arrive))."""
    nodes = net.nodes
    queues, want = {}, Counter()
    for c in range(len(net.inputs)):
        src = c // 2 if c < 2 * nodes else None
        for _ in range(count):
            dest = rng.choice([b for b in range(nodes) if b != src] + [None] * (src is not None))
            heads = net.heads(src, dest, rng.getrandbits(8))
            data = [rng.getrandbits(8) for _ in range(rng.randint(1, 3))]
            queues.setdefault(c, []).append(heads + data)
            last = heads[-1]
            for _ in net.route(src, dest)[-1]:
                last = pass_head(last)
            want["top" if dest is None else dest, (last, *data)] += 1
    return queues, want


@pytest.mark.parametrize(
    "cluster, seed, knobs",
    [
        (12, 1, Knobs(start=0.4, turn=0.4, busy=0.1)),
        pytest.param(12, 6, BURST, marks=pytest.mark.slow),
        pytest.param(48, 2, Knobs(start=0.4, turn=0.3, busy=0.1), marks=pytest.mark.slow),
    ],
)
def test_cluster_rtl_equals_the_model_every_cycle(cluster, seed, knobs):
    from fattree.hdl.rn1.hybrid import RN1Hybrid
    from fattree.sim.testbench import simulate

    dut, model = RN1Hybrid(cluster, 1, seed), RN1HybridModel(cluster, 1, None, seed)
    net = model.net
    n = len(net.inputs)
    rng = random.Random(seed)
    queues, want = _cluster_traffic(net, rng, 3)
    senders = {
        c: End(True, random.Random(rng.getrandbits(32)), knobs, q) for c, q in queues.items()
    }
    receivers = {c: End(False, random.Random(rng.getrandbits(32)), knobs) for c in range(n)}
    done = {}

    async def bench(ctx):
        for cycle in range(4000):
            o_fwd = [ctx.get(dut.o[k].fwd.as_value()) for k in range(n)]
            i_bk = [ctx.get(dut.i[k].bk.as_value()) for k in range(n)]
            assert (o_fwd, i_bk) == (model.o_fwd, model.i_bk), cycle
            i_fwd = [senders[c].step(i_bk[c]) for c in range(n)]
            o_bk = [receivers[c].step(o_fwd[c]) for c in range(n)]
            for k in range(n):
                ctx.set(dut.i[k].fwd.as_value(), i_fwd[k])
                ctx.set(dut.o[k].bk.as_value(), o_bk[k])
            model.step(i_fwd, o_bk)
            await ctx.tick()
            ends = list(senders.values()) + list(receivers.values())
            if all(e.quiet for e in ends) and not any(i_fwd + o_bk + o_fwd + i_bk):
                done["cycles"] = cycle
                return

    simulate(dut, bench)
    assert "cycles" in done
    got = Counter(
        ("top" if c >= 2 * cluster else c // 2, seg)
        for c, r in receivers.items()
        for tag, seg in r.received
        if tag == "first"
    )
    assert got == want
    assert sum(s.blocked for s in senders.values()) > 0


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"cluster": 16}, ValueError, "cluster must be 12, 48 or 192, not 16"),
        ({"stages": 3}, ValueError, "stages must be between 1 and 2, not 3"),
        ({"seed": -1}, ValueError, "seed must be at least 0, not -1"),
    ],
)
def test_component_parameter_errors(kwargs, error, message):
    from fattree.hdl.rn1.hybrid import RN1Hybrid

    with pytest.raises(error) as info:
        RN1Hybrid(**kwargs)
    assert str(info.value) == message


# --- rn1-hybrid: the hierarchical export (shared router modules) against the model --------

import shutil  # noqa: E402


def _hybrid_bench(params, simulator, frames, root):
    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    result = run_bench(
        get_design("rn1-hybrid"), params, simulator, seed=4, bench={"frames": frames}, root=root
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    # The traffic's transmissions, then those of the rounds steered into coverage holes.
    assert s["mismatches"] == 0 and s["checked"] == frames + s.get("steered", 0)
    assert s["turned_segments"] > 0
    return s


@pytest.mark.cocotb
@pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")
def test_one_cluster_design_on_icarus(tmp_path):
    # The design table's rn1-hybrid at its smallest (one 12-node cluster, 7 RN1): the top
    # written from the link list over the shared modules, every output word of its 24
    # channels against RN1HybridModel every cycle.
    _hybrid_bench({"cluster": 12, "stages": 1, "seed": 3}, "icarus", 48, tmp_path)


@pytest.mark.slow
@pytest.mark.cocotb
@pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")
def test_two_stage_hybrid_on_icarus(tmp_path):
    # 64 clusters of 12 under 8-wide unit trees: 656 RN1, 1024 swallows, 768 nodes, 1664
    # channels each way against RN1HybridModel every cycle; random pairs, so most
    # transmissions cross the swallows into the unit trees and back with their status.
    # About 3.5 minutes, and iverilog's compile peaks at 7 GB (docs/dehon.md).
    s = _hybrid_bench({"cluster": 12, "stages": 2, "seed": 1}, "icarus", 96, tmp_path)
    assert s["channels"] == 1664 and s["retries"] > 0


def test_hierarchy_parameter_error():
    from fattree.hdl.rn1.hybrid import RN1Hybrid

    with pytest.raises(TypeError, match=r"^hierarchy must be True or False, not 'yes'$"):
        RN1Hybrid(12, 1, 1, hierarchy="yes")


@pytest.mark.cocotb
@pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")
def test_one_cluster_coverage_has_no_hole(tmp_path, capsys):
    # One 12-node cluster through the command line (docs/dehon.md, "Coverage"): the bins its
    # routers' groups can meet, retries and delivery to every node, every one hit by the
    # random pairs and the rounds steered after them.
    import json

    from fattree.scripts.main import main

    argv = ["sim", "rn1-hybrid", "-s", "icarus", "-p", "stages=1", "--coverage", "--json"]
    code = main([*argv, "--build-root", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    coverage = out["summary"]["coverage"]
    assert coverage["holes"] == [] and coverage["bins"] == 75
    # Direction 3 of the first stage climbs to the (absent) unit trees: no choice there.
    assert "output 6" not in coverage["points"]["choice/S0"]["bins"]
    assert code == 0 and out["passed"]


@pytest.mark.slow
@pytest.mark.cocotb
@pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")
def test_two_stage_coverage_has_no_hole(tmp_path, capsys):
    # The default point (64 clusters of 12 under 8-wide unit trees, 768 nodes) through the
    # command line on Icarus (docs/dehon.md, "Coverage"): the random pairs, a round to every
    # node they did not reach, then rounds steered into the routers' holes, every bin hit.
    # About 16 minutes (build 164 s), at most 4.8 GB (docs/dehon.md).
    import json

    from fattree.scripts.main import main

    argv = ["sim", "rn1-hybrid", "-s", "icarus", "--coverage", "--json"]
    code = main([*argv, "--build-root", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    coverage = out["summary"]["coverage"]
    assert coverage["holes"] == [] and coverage["bins"] == 978
    assert out["summary"]["steered"] > 700  # the sweep alone sends one to most nodes
    assert code == 0 and out["passed"]


def _round_on(model, queues, want, knobs, seed):
    """A steered round run to its end on ``model`` alone: its counts and every cycle's
    outputs."""
    from fattree.sim.checks.rn1 import CHECKS, STEER_LIMIT, network_phase
    from fattree.sim.scoreboard import Scoreboard

    trace = []

    async def tick():
        trace.append((model.o_fwd, model.i_bk))

    sb = Scoreboard(CHECKS)
    phase = network_phase(
        model,
        sb,
        lambda: (model.o_fwd, model.i_bk),
        lambda i_fwd, o_bk: None,
        tick,
        queues,
        want,
        knobs,
        random.Random(seed),
        limit=STEER_LIMIT,
    )
    with pytest.raises(StopIteration) as done:
        phase.send(None)
    assert sb.mismatches == 0
    return done.value.value, trace


def test_steering_sweeps_unreached_nodes_and_tries_rounds_in_place():
    # The two-stage point's first steered round, at a small point (one cluster, few tries):
    # when more nodes are unreached than the tries could aim at, one transmission to each.
    from fattree.sim.checks.rn1 import _network_tried, network_hole_rounds

    model = RN1HybridModel(12, 1)
    coverage = model.start_coverage()
    name, queues, want, knobs, seed = next(network_hole_rounds(model, random.Random(3), tries=8))
    assert name == "sweep" and sorted(b for b, _ in want) == list(range(12))
    # Tried on the model itself and undone: it reaches what it reaches on a copy, and the
    # model then runs it exactly as the copy made before the trial does.
    copy = model.clone()
    reached = _network_tried(model, queues, want, knobs, seed).holes()
    assert coverage.holes() != reached  # the trial counted into a copy of the counts
    ran, trace = _round_on(model, queues, want, knobs, seed)
    assert (ran, trace) == _round_on(copy, queues, want, knobs, seed)
    assert coverage.holes() == copy.coverage.holes() == reached
    assert not [h for h in reached if h.startswith("deliver")]


def test_two_stage_hybrid_declares_the_bins_its_routes_meet():
    # All 589,056 routes of the 768 nodes, found segment by segment (route_senders).
    points = {p.name: p.bins for p in RN1HybridModel(12, 2).cover_points()}
    assert points["deliver"] == tuple(f"node {e}" for e in range(768))
    # Under unit trees the first stage's direction 3 climbs to them: a choice is made there.
    assert {"output 6", "output 7"} <= set(points["choice/S0"])
    # A route through the unit trees carries its cluster's head byte behind theirs: no
    # transmission is its head alone there, as it is in the clusters.
    assert "head alone" not in points["frame/up@2"] and "head alone" in points["frame/S1"]
    assert sum(map(len, points.values())) == 978
