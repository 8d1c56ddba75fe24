"""DeHon's fat-tree of several unit-tree stages (fattree/spec/rn1_tree.py
``fat_tree_network``): the wiring against the counts, routes of one head byte per unit tree
crossed followed through the wiring (routers rotate the head, swallows drop it)."""

import random
from collections import Counter

import numpy as np
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


# --- The model: swallow elements, the sparse stepping, traffic through two stages -------

from fattree.sim.checks.rn1 import (  # noqa: E402
    BURST,
    End,
    Knobs,
    delivered_by_node,
    network_queues,
    run_network_traffic,
)
from fattree.sim.models.rn1 import (  # noqa: E402
    RN1FatTreeModel,
    RN1NetworkModel,
    RN1SparseNetworkModel,
    RN1SwallowModel,
)
from fattree.spec.rn1 import BLOCKED, CONNECTED, DROP, TURN, word  # noqa: E402

MODELS = {}


def fat_model(stages=2, seed=None):
    """One model per wiring for the module (4160 routers take a second to build); reset
    before each use."""
    if (stages, seed) not in MODELS:
        MODELS[stages, seed] = RN1FatTreeModel(stages, seed)
    model = MODELS[stages, seed]
    model.reset()
    return model


def run_traffic(model, queues, knobs, rng, limit=3000, shadow=None):
    return run_network_traffic(model, queues, knobs, rng, limit, shadow)


queues_for = network_queues
delivered = delivered_by_node


def test_swallow_drops_the_head_and_passes_the_rest():
    sw = RN1SwallowModel()
    h1, h2, a, b = word(1, 0x33), word(1, 0x24), word(1, 7), word(1, 9)
    fwd = [h1, h2, a, b, word(0, TURN), 0, 0, 0, 0, 0, 0, 0]
    bk = [0, 0, 0, 0, 0, 0, word(0, CONNECTED), a, b, word(0, DROP), 0, word(0, CONNECTED)]
    seen = []
    for f, k in zip(fwd, bk, strict=True):
        sw.step([f], [k])
        seen.append((sw.o_fwd[0], sw.i_bk[0], sw.state))
    # The first byte vanishes; everything else one cycle later, both ways, across the turn.
    assert [x[0] for x in seen] == [0, h2, a, b, word(0, TURN), 0, 0, 0, 0, 0, 0, 0]
    assert [x[1] for x in seen] == [0] * 6 + [word(0, CONNECTED), a, b, word(0, DROP), 0] + [
        word(0, CONNECTED)
    ]
    assert seen[-2][2] != 0 and seen[-1][2] == 0  # released by the status after the DROP
    # Nothing after the used byte: answered BLOCKED, nothing passed on.
    sw.reset()
    out = []
    for f in [h1, word(0, DROP), 0, 0]:
        sw.step([f], [0])
        out.append((sw.o_fwd[0], sw.i_bk[0]))
    assert out == [(0, 0), (0, word(0, BLOCKED)), (0, 0), (0, 0)]


def _pruned(net, leaves):
    """The fat-tree's elements and links that touch leaf trees ``< leaves`` and the parent
    stage (links to leaf trees left out are dropped): a small network with swallows on
    which the plain stepping is fast enough to compare against."""
    keep = {k for k in net.routers if k[0] == 2 or k[1] < leaves}
    keep_sw = {
        k for k in net.swallows if k[1] == 2 and k[4] < leaves or k[1] == 1 and k[2] < leaves
    }
    nodes = leaves * 64
    ins = [e for e in net.inputs if e[0] == "top_down" or e[1] < nodes]
    outs = [e for e in net.outputs if e[0] == "top_up" or e[1] < nodes]
    edges = set(ins) | set(outs)

    def ok(end):
        if end[0] in ("in", "out"):
            key = end[1:-1]
            return key in keep or key in keep_sw
        return end in edges

    links = [(a, b) for a, b in net.links if ok(a) and ok(b)]
    routers = {k: v for k, v in net.routers.items() if k in keep}
    return routers, links, ins, outs, sorted(keep_sw)


@pytest.mark.parametrize("seed", [None, pytest.param(4, marks=pytest.mark.slow)])
def test_sparse_stepping_equals_the_plain_stepping(seed):
    net = fat_tree_network(2, seed)
    parts = _pruned(net, 2)
    sparse, plain = RN1SparseNetworkModel(*parts), RN1NetworkModel(*parts)
    rng = random.Random(11)
    pairs = [(rng.randrange(128), rng.randrange(128)) for _ in range(60)]
    queues, want = queues_for(net, [(a, b) for a, b in pairs if a != b], rng)
    knobs = Knobs(start=0.5, turn=0.3, busy=0.1)
    senders, receivers, cycles = run_traffic(sparse, queues, knobs, rng, shadow=plain)
    sparse.sync_lfsrs()
    assert [r.lfsr.state for r in sparse.routers.values()] == [
        r.lfsr.state for r in plain.routers.values()
    ]
    assert delivered(receivers) == want


@pytest.mark.parametrize("seed", [None, pytest.param(7, marks=pytest.mark.slow)])
def test_two_stages_deliver_at_every_distance_with_turns_and_retries(seed):
    model = fat_model(2, seed)
    rng = random.Random(seed or 1)
    pairs = [pair_at(level_, rng, 4096) for level_ in range(1, 7) for _ in range(8)]
    queues, want = queues_for(model.net, pairs, rng)
    knobs = Knobs(start=0.3, turn=0.4, busy=0.15)
    senders, receivers, _ = run_traffic(model, queues, knobs, rng)
    assert delivered(receivers) == want
    # What the senders had confirmed CONNECTED is what arrived (head bytes dropped).
    sent = Counter(seg for s in senders.values() for tag, seg in s.sent if tag == "first")
    assert sum(sent.values()) == len(pairs)
    # Turned segments came back over the same connections, every one of them.
    ends = list(senders.values()) + list(receivers.values())
    turned = Counter(seg for e in ends for tag, seg in e.sent if tag == "turn")
    assert turned and turned == Counter(
        seg for e in ends for tag, seg in e.received if tag == "turn"
    )
    assert sum(s.blocked for s in senders.values()) > 0  # busy receivers: retried


def test_hot_spot_through_the_parent_stage():
    # 24 senders in other leaf trees for one node at once: heads meet, are blocked and
    # retried (BURST: no gaps), every transmission gets through exactly once.
    model = fat_model(2, None)
    rng = random.Random(3)
    sources = rng.sample(range(64, 4096), 24)
    queues, want = queues_for(model.net, [(a, 5) for a in sources], rng)
    senders, receivers, _ = run_traffic(model, queues, BURST, rng)
    assert delivered(receivers) == want
    assert sum(s.blocked for s in senders.values()) > 0


@pytest.mark.parametrize("level_", range(1, 7))
def test_head_cycles_are_the_routers_plus_the_swallows(level_):
    model = fat_model(2, None)
    a, b = pair_at(level_, random.Random(level_), 4096)
    route = model.net.route(a, b)
    routers, swallows = sum(map(len, route)), len(route) - 1
    assert routers == -(-level_ // 3) + level_ and swallows == (0 if level_ <= 3 else 2)
    heads = model.net.heads(a, b)
    words = [word(1, h) for h in heads] + [word(1, 0x5A), word(0, DROP)]
    arrive = status = None
    n = model.channels
    for cycle in range(60):
        o_fwd, i_bk = model.o_fwd, model.i_bk
        if arrive is None and any(o_fwd[2 * b + k] for k in range(2)):
            arrive = cycle
        if i_bk[2 * a] == word(0, CONNECTED):
            status = cycle
            break
        i_fwd, o_bk = [0] * n, [0] * n
        i_fwd[2 * a] = words[cycle] if cycle < len(words) else 0
        close = cycle > 0 and any(
            o_fwd[2 * b + k] == word(0, DROP) and arrive is not None for k in range(2)
        )
        if close:  # the destination answers in the cycle the close arrives
            for k in range(2):
                o_bk[2 * b + k] = word(0, CONNECTED) if o_fwd[2 * b + k] == word(0, DROP) else 0
        model.step(i_fwd, o_bk)
    # One cycle per router and per swallow, and a swallow's dropped byte costs one more
    # cycle before the next head byte can leave it.
    assert arrive == routers + 2 * swallows
    # The close follows the bytes through every element; the status comes back as fast.
    assert status == len(words) - 1 + 2 * (routers + swallows)


# --- Faults: connectivity over the wiring, the paper's claim about unit-tree stacks -------


def path_exists(net, a, b, dead=(), links=(), stacks=()):
    """Brute force: some choice of outputs takes a head from node ``a`` (either link) to
    node ``b`` through live routers, swallows and links (``deliver`` with the faults)."""
    dead, links, stacks = set(dead), set(links), set(stacks)
    if id(net) not in _NEXT:
        _NEXT[id(net)] = (net, dict(net.links))
    sink_of = _NEXT[id(net)][1]
    heads = tuple(net.heads(a, b))
    frontier = [(("ep_out", a, k), heads) for k in range(2)]
    seen = set()
    while frontier:
        end, hs = frontier.pop()
        if (end, hs) in seen or end in links:
            continue
        seen.add((end, hs))
        sink = sink_of[end]
        if sink[0] != "in":
            if sink[:2] == ("ep_in", b):
                return True
            continue
        key, port = sink[1:-1], sink[-1]
        tree = (key[1], key[2]) if key[0] == "sw" else key[:2]
        if key in dead or tree in stacks:
            continue
        if key[0] == "sw":
            frontier.append((("out", *key, 0), hs[1:]))
            continue
        mode, d = net.routers[key][0], hs[0] & 3
        ports = [4 * (port // 4) + d] if mode == "alternate" else [2 * d, 2 * d + 1]
        frontier += [(("out", *key, p), (pass_head(hs[0]), *hs[1:])) for p in ports]
    return False


def test_connected_agrees_with_a_path_search():
    net = NETS[2, 7]
    rng = random.Random(5)
    # Faults packed into leaf trees 0..3 and parent tree 1, so that many pairs among the
    # nodes of those leaves lose some of their paths, and some all of them.
    mine = [
        src
        for src, _ in net.links
        if src[0] == "out"
        and (src[1:3] in {(1, 0), (1, 1), (1, 2), (1, 3), (2, 1)} or src[1] == "sw")
    ]
    links = rng.sample(mine, 500)
    dead = rng.sample(sorted(k for k in net.routers if k[:2] in {(1, 0), (1, 2), (2, 1)}), 12)
    dead += rng.sample(sorted(k for k in net.swallows if k[1:3] in {(1, 1), (2, 1)}), 20)
    got = net.connected(dead=dead, links=links)
    cases = Counter()
    for _ in range(150):
        a, b = rng.sample(range(256), 2)
        want = path_exists(net, a, b, dead, links)
        assert got[a, b] == want, (a, b)
        cases[want, a // 64 == b // 64] += 1
    assert len(cases) == 4  # connected and cut pairs, inside a leaf tree and across
    # A stack fault is its routers and its swallows.
    stacks = [(1, 2), (2, 0)]
    got = net.connected(stacks=stacks)
    for _ in range(60):
        a, b = rng.sample(range(256), 2)
        assert got[a, b] == path_exists(net, a, b, stacks=stacks), (a, b)


def _claim(net):
    n = net.nodes
    everyone = np.ones((n, n), dtype=bool)
    np.fill_diagonal(everyone, False)
    assert (net.connected() == everyone).all()
    results = {p: net.connected(stacks=[(2, p)]) for p in net.stage_trees(2)}
    for x in (0, 37, 63):
        cut = everyone.copy()
        cut[64 * x : 64 * x + 64, :] = cut[:, 64 * x : 64 * x + 64] = False
        assert (net.connected(stacks=[(1, x)]) == cut).all()  # exactly its own nodes
    return everyone, results


@pytest.mark.parametrize("seed", [None, pytest.param(7, marks=pytest.mark.slow)])
def test_any_one_non_leaf_stack_can_go(seed):
    # DeHon: "Proper dispersion makes it possible to remove entire unit tree stacks
    # anywhere, except at the leaves, and still have a functionally complete fat-tree".
    everyone, results = _claim(NETS[2, seed])
    for p, got in results.items():
        assert (got == everyone).all(), p


def test_without_dispersion_a_parent_stack_cuts_nodes_off():
    net = fat_tree_network(2, dispersed=False)
    everyone, results = _claim(net)
    local = np.arange(net.nodes) % 64
    leaf = np.arange(net.nodes) // 64
    for p, got in results.items():
        # Parent tree p took both links of up routers 4p .. 4p + 3 of every leaf tree: the
        # 16 nodes behind them reach nothing outside their own leaf tree (they are still
        # reached: the links down into a leaf tree feed every top router of it).
        behind = (local >= 16 * p) & (local < 16 * p + 16)
        other = leaf[:, None] != leaf[None, :]
        want = everyone & ~(other & behind[:, None])
        assert (got == want).all(), p


def test_latency_experiment_measures_two_stages():
    import argparse

    from fattree.sim.experiments import registry

    result = registry()["dehon-latency"].run(argparse.Namespace(stages=[2]))
    rows = [r for r in result.rows if r[:2] == ["fat-tree", 2]]
    assert [r[5] for r in rows] == [2, 3, 4, 6, 7, 8]  # ceil(L / 3) + L routers
    # Measured on the model: one cycle per router, two per swallow (levels 4..6 cross two).
    assert [r[7] for r in rows] == [2, 3, 4, 10, 11, 12]
    assert [result.extra["swallows"][f"2/{level}"] for level in range(1, 7)] == [0] * 3 + [2] * 3


@pytest.mark.slow
def test_faults_experiment_on_the_fat_tree():
    import argparse

    from fattree.sim.experiments import registry

    args = argparse.Namespace(network="fat-tree", endpoints=64, faults=[64], trials=2, seed=1)
    result = registry()["dehon-faults"].run(args)
    rows = {(r[0], r[1]): r[2:] for r in result.rows}
    random_, regular, blocked = (rows["parent stacks", 1][k : k + 2] for k in (0, 2, 4))
    assert random_ == regular == [1, 1] and blocked[1] < 0.76
    leaf = 1 - (2 * 64 * 4095 - 64 * 63) / (4096 * 4095)
    assert rows["leaf stacks", 1] == pytest.approx([leaf] * 6)
    assert all(0 < v < 1 for v in rows["routers", 64])


# --- Hardware: the swallow element and a network with swallows, against the models -------

from amaranth import Module  # noqa: E402
from amaranth.lib import wiring  # noqa: E402
from amaranth.lib.wiring import In, Out  # noqa: E402

from fattree.hdl.rn1.network import wire_network  # noqa: E402
from fattree.hdl.rn1.router import channel_signature  # noqa: E402
from fattree.hdl.rn1.swallow import RN1Swallow  # noqa: E402
from fattree.sim.testbench import simulate  # noqa: E402


def test_swallow_rtl_equals_its_model_every_cycle():
    # Random words on both links, codes and closes among them, so every state and release
    # path is taken (protocol or not): the element and its model must agree on every word.
    dut, model = RN1Swallow(), RN1SwallowModel()
    rng = random.Random(2)
    states = Counter()

    def rand_word(p_byte):
        if rng.random() < p_byte:
            return word(1, rng.getrandbits(8))
        return word(0, rng.choice([0, 0, 0, TURN, CONNECTED, BLOCKED, rng.getrandbits(8)]))

    async def bench(ctx):
        p = 0.5
        for cycle in range(4000):
            got = (ctx.get(dut.o.fwd.as_value()), ctx.get(dut.i.bk.as_value()))
            assert got == (model.o_fwd[0], model.i_bk[0]), cycle
            if cycle % 50 == 0:
                p = rng.choice([0.1, 0.5, 0.9])  # short and long transmissions
            f, b = rand_word(p), rand_word(0.3)
            ctx.set(dut.i.fwd.as_value(), f)
            ctx.set(dut.o.bk.as_value(), b)
            model.step([f], [b])
            states[model.state, model.decisions[0]] += 1
            await ctx.tick()

    simulate(dut, bench)
    assert {d for _, d in states} == {None, "swallow", "blocked", "release"}


class _Chain(wiring.Component):
    """Eight channels through swallows into router a, its outputs through swallows into
    router b: the smallest network in which a head byte is used, dropped, and the next byte
    routes (a swallow on each side of a router, as on a link between two unit trees)."""

    def __init__(self, parts):
        self.parts = parts
        channel = channel_signature()
        super().__init__({"i": In(channel).array(8), "o": Out(channel).array(8)})

    def elaborate(self, platform):
        m = Module()
        wire_network(m, *self.parts[:4], self.i, self.o, self.parts[4])
        return m


def _chain_parts():
    routers = {("a",): ("primary", 5), ("b",): ("primary", 9)}
    swallows = [("sw", "in", k) for k in range(8)] + [("sw", "mid", k) for k in range(8)]
    links = []
    for k in range(8):
        links += [
            (("x_in", k), ("in", "sw", "in", k, 0)),
            (("out", "sw", "in", k, 0), ("in", "a", k)),
            (("out", "a", k), ("in", "sw", "mid", k, 0)),
            (("out", "sw", "mid", k, 0), ("in", "b", k)),
            (("out", "b", k), ("x_out", k)),
        ]
    inputs, outputs = [("x_in", k) for k in range(8)], [("x_out", k) for k in range(8)]
    return routers, links, inputs, outputs, swallows


@pytest.mark.parametrize("knobs", [Knobs(start=0.4, turn=0.4, busy=0.1), BURST])
def test_network_with_swallows_rtl_equals_the_model(knobs):
    parts = _chain_parts()
    dut, model = _Chain(parts), RN1NetworkModel(*parts)
    rng = random.Random(8)
    queues, want = {}, Counter()
    for c in range(8):
        for _ in range(6):
            head_b = rng.getrandbits(8)
            data = [rng.getrandbits(8) for _ in range(rng.randint(1, 3))]
            # A used byte for the first swallows, a's head, b's head (a's is dropped by the
            # swallows between), then the data.
            queues.setdefault(c, []).append([rng.getrandbits(8), rng.getrandbits(8), head_b] + data)
            want[head_b & 3, (pass_head(head_b), *data)] += 1
    senders = {
        c: End(True, random.Random(rng.getrandbits(32)), knobs, q) for c, q in queues.items()
    }
    receivers = {c: End(False, random.Random(rng.getrandbits(32)), knobs) for c in range(8)}
    done = {}

    async def bench(ctx):
        for cycle in range(3000):
            o_fwd = [ctx.get(dut.o[k].fwd.as_value()) for k in range(8)]
            i_bk = [ctx.get(dut.i[k].bk.as_value()) for k in range(8)]
            assert (o_fwd, i_bk) == (model.o_fwd, model.i_bk), cycle
            i_fwd = [senders[c].step(i_bk[c]) for c in range(8)]
            o_bk = [receivers[c].step(o_fwd[c]) for c in range(8)]
            for k in range(8):
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
        (c // 2, seg) for c, r in receivers.items() for tag, seg in r.received if tag == "first"
    )
    assert got == want
    assert sum(s.blocked for s in senders.values()) > 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"stages": 3}, "stages must be between 1 and 2, not 3"),
        ({"stages": 0}, "stages must be between 1 and 2, not 0"),
        ({"seed": -1}, "seed must be at least 0, not -1"),
    ],
)
def test_fat_tree_component_parameter_errors(kwargs, message):
    from fattree.hdl.rn1.fat_tree import RN1FatTree

    with pytest.raises(ValueError) as info:
        RN1FatTree(**kwargs)
    assert str(info.value) == message


@pytest.mark.slow
def test_one_stage_component_is_the_unit_tree_wiring():
    # RN1FatTree(1) elaborates the same routers and links as RN1UnitTree (whose RTL is
    # checked against the model in tests/test_rn1_unit_tree.py), and no swallow.
    from amaranth.hdl import Fragment

    from fattree.hdl.rn1.fat_tree import RN1FatTree

    dut = RN1FatTree(1, seed=3)
    fragment = Fragment.get(dut, None)
    names = {name for _, name, _ in fragment.subfragments}
    assert len(names) == 52 and all(n.startswith("r_1_0_") for n in names)
    assert len(dut.i) == len(dut.o) == 160


def test_rtl_head_cycles_through_swallows():
    # The latency rule on the hardware: through swallow, router, swallow, router (R = 2,
    # S = 2) the first word arrives R + 2S cycles after the first byte is sent, and the
    # status is back 2 (R + S) cycles after the close was sent.
    parts = _chain_parts()
    dut = _Chain(parts)
    words = [word(1, 0x11), word(1, 0x02), word(1, 0x03), word(1, 0x5A), word(0, DROP)]
    seen = {}

    async def bench(ctx):
        for cycle in range(40):
            o_fwd = [ctx.get(dut.o[k].fwd.as_value()) for k in range(8)]
            status = ctx.get(dut.i[0].bk.as_value())
            if "arrive" not in seen and any(o_fwd):
                seen["arrive"] = cycle
                seen["out"] = next(k for k in range(8) if o_fwd[k])
            if status:
                seen["status"] = (cycle, status)
                return
            ctx.set(dut.i[0].fwd.as_value(), words[cycle] if cycle < len(words) else 0)
            out = seen.get("out")
            if out is not None:
                # The destination answers in the cycle the close (a word after a byte) comes.
                close = o_fwd[out] == word(0, DROP) and seen.get("last", 0) >> 8
                ctx.set(dut.o[out].bk.as_value(), word(0, CONNECTED) if close else 0)
                seen["last"] = o_fwd[out]
            await ctx.tick()

    simulate(dut, bench)
    assert seen["arrive"] == 2 + 2 * 2
    assert seen["out"] // 2 == 3  # b's direction: head 0x03
    assert seen["status"] == (len(words) - 1 + 2 * (2 + 2), word(0, CONNECTED))


# --- The hierarchical export: routers and swallows as instances of shared modules --------

import re  # noqa: E402
import shutil  # noqa: E402

from fattree.designs import get_design  # noqa: E402
from fattree.hdl.rn1.fat_tree import RN1FatTree  # noqa: E402
from fattree.hdl.rn1.modules import ExportShapeError, _seed_port  # noqa: E402

_ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")


class _One(wiring.Component):
    """One router placed as an instance of its shared module (``wire_network`` with
    ``hierarchy=True``), with the ports of ``RN1Router``: the router's own bench runs on it."""

    def __init__(self, mode, seed):
        self.routers = {("x",): (mode, seed)}
        channel = channel_signature()
        super().__init__({"i": In(channel).array(8), "o": Out(channel).array(8)})

    def elaborate(self, platform):
        m = Module()
        ins, outs = [("e_in", k) for k in range(8)], [("e_out", k) for k in range(8)]
        links = [(ins[k], ("in", "x", k)) for k in range(8)]
        links += [(("out", "x", k), outs[k]) for k in range(8)]
        wire_network(m, self.routers, links, ins, outs, self.i, self.o, hierarchy=True)
        return m


@pytest.mark.cocotb
@_ICARUS
@pytest.mark.parametrize(
    "mode, seed, bench_seed, passes",
    [
        ("primary", 4321, 4321, True),
        pytest.param("alternate", 7, 7, True, marks=pytest.mark.slow),
        ("primary", 4321, 4322, False),
    ],
)
def test_shared_router_module_is_the_router(mode, seed, bench_seed, passes, tmp_path):
    # The router's bench (random, hot spot, stress phases: 720 transmissions against
    # RN1Model every cycle) on the shared module with its seed on the port. The model of a
    # seed one off must fail: the port really sets the LFSR.
    from amaranth.back import verilog

    from fattree.hdl.rn1.modules import network_modules
    from fattree.sim.cocotb_runner import run_bench

    dut = _One(mode, seed)
    text = verilog.convert(dut, name="rn1", emit_src=False) + network_modules(dut.routers)
    result = run_bench(
        get_design("rn1"),
        {"mode": mode, "seed": bench_seed},
        "icarus",
        verilog=text,
        root=tmp_path,
        bench={"frames": 80},
    )
    s = result.summary
    assert result.passed == passes, s.get("first_mismatch") or result.log
    if passes:
        assert s["checked"] == 720 and s["mismatches"] == 0
    else:
        # A failed run skips the phases after the one that failed (the bench fails fast).
        assert s["cycle_mismatches"] > 0 and 0 < s["checked"] < 720


def test_hierarchical_export_of_one_stage():
    # 52 instances of two modules (20 primary with their seeds on the port, 32 alternate:
    # the bottom down layer and, for single-fault tolerance, the up layer),
    # instead of 52 copies of the router: a hundredth of the flat export's text.
    from amaranth.back import verilog

    dut = RN1FatTree(1, 3, hierarchy=True)
    text = verilog.convert(dut, name="ft", emit_src=False) + dut.verilog_modules()
    modules = re.findall(r"^module (\S+?) ?\(", text, re.M)
    assert sorted(modules) == [
        "\\rn1_router_primary.lfsr",
        "ft",
        "rn1_router_alternate",
        "rn1_router_primary",
    ]
    placed = Counter(re.findall(r"^  (rn1_router_\w+) r_\S+ \($", text, re.M))
    assert placed == {"rn1_router_primary": 20, "rn1_router_alternate": 32}
    seeds = sorted(int(s, 16) for s in re.findall(r"\.seed\(16'h([0-9a-f]{4})\)", text))
    want = sorted(seed for mode, seed in dut.net.routers.values() if mode == "primary")
    assert seeds == want and len(set(seeds)) == 20
    assert len(text) < 2_000_000  # the flat export: 70 MB of RTLIL
    assert RN1FatTree(1, 3).verilog_modules() == ""


def test_seed_port_refuses_an_export_of_another_shape():
    a, b = "16'h5a3c", "16'h3ca5"
    text = f"module r(x);\n  reg [15:0] v = {a};\nendmodule\n"
    other = text.replace(a, b)
    with pytest.raises(ExportShapeError, match="differ elsewhere"):
        _seed_port(text, other, "r")  # the constant once, not twice
    with pytest.raises(ExportShapeError, match="differ elsewhere"):
        _seed_port(text + f"// {a}", other + "//", "r")
    with pytest.raises(ExportShapeError, match=r"not in module \\r\.lfsr"):
        _seed_port(text + f"// {a}", other + f"// {b}", "r")


def test_hierarchy_parameter_errors():
    with pytest.raises(TypeError, match=r"^hierarchy must be True or False, not 1$"):
        RN1FatTree(1, 1, hierarchy=1)


def _network_bench(design, params, simulator, frames, root):
    from fattree.sim.cocotb_runner import run_bench

    result = run_bench(
        get_design(design), params, simulator, seed=3, bench={"frames": frames}, root=root
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    # The traffic's transmissions, then those of the rounds steered into coverage holes.
    assert s["mismatches"] == 0 and s["checked"] == frames + s.get("steered", 0)
    assert s["retries"] > 0 and s["turned_segments"] > 0
    return result


@pytest.mark.slow
@pytest.mark.cocotb
@_ICARUS
def test_one_stage_network_bench_on_icarus(tmp_path):
    result = _network_bench(
        "rn1-fat-tree-network", {"stages": 1, "seed": 2}, "icarus", 96, tmp_path
    )
    # One router per level and the up router: dehon-latency's 2, 3, 4, on the RTL.
    assert result.summary["head_cycles"] == [2, 3, 4]


@pytest.mark.cocotb
@_ICARUS
def test_one_stage_network_coverage_has_no_hole(tmp_path):
    # 64 transmissions, then the rounds steered into what they left: every bin of the
    # model's cover points hit (docs/dehon.md, "Coverage").
    from fattree.sim.cocotb_runner import run_bench

    result = run_bench(
        get_design("rn1-fat-tree-network"),
        {"stages": 1, "seed": 1},
        "icarus",
        seed=1,
        bench={"frames": 64, "coverage": True},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["coverage"]["holes"] == [], s["coverage"]
    assert 0 < s["steered"] == s["checked"] - 64
    # Every node got a transmission, and the root's top links (driven as a parent would).
    assert len(s["coverage"]["points"]["deliver"]["bins"]) == 65


@pytest.mark.slow  # the default point on Verilator: build and run
@pytest.mark.cocotb
def test_network_coverage_closes_at_the_default_point(tmp_path, capsys):
    import json

    from fattree.scripts.main import main

    argv = ["sim", "rn1-fat-tree-network", "--coverage", "--json"]
    code = main([*argv, "--build-root", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["coverage"]["holes"] == []
    assert code == 0 and out["passed"]


@pytest.mark.parametrize(
    "simulator, why",
    [("verilator", "past 23 GB"), ("icarus", "iverilog ran out of memory at 16 GB")],
)
def test_two_stage_network_is_refused_in_one_line(simulator, why, tmp_path):
    # Both simulators ran out of this machine on the 4160 routers (docs/dehon.md): refused
    # before anything is exported or built, rather than eat the shared machine's memory.
    from fattree.sim.cocotb_runner import run_bench

    with pytest.raises(ValueError) as info:
        run_bench(
            get_design("rn1-fat-tree-network"), {"stages": 2, "seed": 1}, simulator, root=tmp_path
        )
    assert str(info.value).startswith("the two-stage fat-tree (4160 RN1) does not build on ")
    assert why in str(info.value) and "\n" not in str(info.value)
    assert not any(tmp_path.iterdir())
    # One stage is not refused by the same rule.
    from fattree.sim.cocotb_runner import _refusal

    assert _refusal(get_design("rn1-fat-tree-network"), {"stages": 1, "seed": 1}, simulator) is None


def test_synthesis_gets_the_flat_form_or_a_one_line_refusal(built_but_unused):
    # The synthesis flow reads Amaranth's RTLIL (no shared modules): one stage elaborates flat
    # (52 RN1Router components), two stages are refused before any export.
    from fattree.hdl.rn1.fat_tree import fat_tree_network_top
    from fattree.hdl.rn1.router import RN1Router
    from fattree.hdl.target import SynthesisTarget

    m = fat_tree_network_top(1, 1).elaborate(SynthesisTarget("ecp5"))
    kinds = Counter(type(sub).__name__ for sub, _loc in m._named_submodules.values())
    assert kinds == {RN1Router.__name__: 52}
    message = (
        "the fat-tree of 2 unit-tree stages does not fit: 4160 RN1 need about 4569152 LUT4 by "
        "the single routers' ECP5 figures (1377 primary, 811 alternate); the LFE5U-85F has "
        "83640"
    )
    with pytest.raises(ValueError) as info:
        fat_tree_network_top(2, 1).elaborate(SynthesisTarget("ecp5"))
    assert str(info.value) == message


def test_an_export_gets_the_shared_modules_it_instantiates_once():
    from fattree.hdl.rn1.modules import MODULES, with_shared_modules

    places = "".join(f"  rn1_router_primary r{k} (.clk(clk));\n" for k in range(2))
    top = f"module top(clk);\n{places}endmodule\n"
    text = with_shared_modules(top)
    assert text.startswith(top)
    assert text.count(f"module {MODULES['primary']}(") == 1
    assert f"module {MODULES['alternate']}(" not in text and MODULES["swallow"] not in text
    assert with_shared_modules(text) == text  # defined now: nothing appended again
    assert with_shared_modules("module plain(a);\nendmodule\n") == "module plain(a);\nendmodule\n"


@pytest.mark.slow  # the 64 endpoints' export: about a minute
def test_the_fat_tree_with_endpoints_exports_each_router_module_once():
    from fattree.designs import elaborate_verilog, get_design

    text = elaborate_verilog(
        get_design("rn1-fat-tree"), {"seed": 1, "retry": "immediate", "max_bytes": 8}
    )
    modules = re.findall(r"^module\s+(\S+?)\s*\(", text, re.M)
    assert modules.count("rn1_router_primary") == modules.count("rn1_router_alternate") == 1
    assert not [m for m in modules if ".r_" in m]  # no router of the network as its own copy
    assert len(re.findall(r"^\s*rn1_router_(?:primary|alternate)\s", text, re.M)) == 52
