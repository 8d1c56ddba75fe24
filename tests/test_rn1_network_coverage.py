"""Functional coverage of the RN1 router alone and of its networks driven at their channels:
the cover points their models declare (docs/dehon.md, "Coverage"), that counting changes
nothing, that the counts agree with what the model decided, and that the rounds steered into
the holes close them. The benches that report them are in tests/test_rn1_cocotb.py."""

import random
from collections import Counter

import pytest

from fattree.sim.benches.rn1 import anywhere_layout
from fattree.sim.checks.rn1 import (
    BURST,
    CHECKS,
    Knobs,
    RN1Check,
    bidelta_layout,
    hole_rounds,
    router_layout,
    transmissions,
    unit_tree_layout,
)
from fattree.sim.models.rn1 import (
    RN1BideltaModel,
    RN1FatTreeModel,
    RN1HybridModel,
    RN1Model,
    RN1SwallowModel,
    RN1UnitTreeModel,
    grouped_route_senders,
    node_routes,
    route_senders,
)
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.rn1 import arbitration_groups, direction, outputs_for, pass_head

TURNS = Knobs(turn=0.6, busy=0.2, noise=True, codes=0.3, refuse=0.3)


async def _tick():
    return None


def _check(model, seed=1, layout=None):
    """An :class:`RN1Check` of ``model`` against itself (its outputs read back)."""
    return RN1Check(
        model,
        Scoreboard(CHECKS),
        lambda: (list(model.o_fwd), list(model.i_bk)),
        lambda i_fwd, o_bk: None,
        _tick,
        rng=random.Random(seed),
        layout=layout,
    )


def _run(check, name, queues, knobs=None):
    """One phase of ``check`` run to its end (nothing in it waits)."""
    phase = check.phase(name, queues, knobs=knobs)
    with pytest.raises(StopIteration):
        phase.send(None)


def _traced(model, seed=3):
    """Random traffic, a burst and turned traffic through ``model`` (a run-time router's
    ``alternate`` flipped in about a tenth of the cycles); every cycle's outputs."""
    trace = []
    step = model.step
    rng = random.Random(seed)
    runtime = model.mode == "runtime"

    def traced_step(i_fwd, o_bk):
        trace.append((list(model.o_fwd), list(model.i_bk)))
        if runtime and rng.random() < 0.1:
            model.alternate ^= 1
        step(i_fwd, o_bk)

    model.step = traced_step
    check = _check(model, seed, anywhere_layout() if runtime else router_layout(model.mode))
    for name, knobs in (("random", None), ("burst", BURST), ("turns", TURNS)):
        _run(check, name, transmissions("random", 12, rng, check.layout), knobs)
    del model.step
    return trace, check


@pytest.mark.parametrize(
    "mode, priority",
    [
        ("primary", "fixed"),
        ("alternate", "fixed"),
        ("runtime", "fixed"),
        ("primary", "round-robin"),
    ],
)
def test_counting_does_not_change_the_router(mode, priority):
    plain, counted = RN1Model(mode, 0xACE1, priority), RN1Model(mode, 0xACE1, priority)
    coverage = counted.start_coverage()
    assert _traced(plain)[0] == _traced(counted)[0]
    report = coverage.as_dict()
    assert report["hit"] > 0.8 * report["bins"], coverage.holes()


def test_router_counts_agree_with_its_decisions():
    model = RN1Model("primary", 0xACE1)
    coverage = model.start_coverage()
    decided = {"blocked": 0, "release": 0, "open": 0}
    step = model.step

    def counting_step(i_fwd, o_bk):
        step(i_fwd, o_bk)
        for d in model.decisions:
            if d is not None:
                decided["open" if isinstance(d, tuple) else d] += 1

    model.step = counting_step
    check = _check(model, 5, router_layout("primary"))
    rng = random.Random(5)
    for knobs in (None, BURST, TURNS):
        _run(check, "p", transmissions("random", 16, rng, check.layout), knobs)
    hits = {name: p["bins"] for name, p in coverage.as_dict()["points"].items()}
    # Every head decided once: granted or blocked; every blocked one answered at its close.
    arbitrated = sum(hits["arbitrate/router"].values())
    assert decided["open"] + decided["blocked"] >= arbitrated > 0
    assert hits["discard/router"]["answered BLOCKED"] == decided["blocked"]
    assert sum(hits["release/router"].values()) == decided["release"] == decided["open"]
    # The choice is made where both outputs were free, the first head takes it.
    both_free = sum(n for b, n in hits["arbitrate/router"].items() if b.endswith("2 free"))
    assert sum(hits["choice/router"].values()) == both_free
    # Each circuit's first segment ends once, by a close forward (TURN or another).
    frame = hits["frame/router"]
    assert frame["head alone"] + frame["head and bytes"] == decided["open"]


def test_router_points_follow_the_design_point():
    def points(*args):
        return {p.name: p.bins for p in RN1Model(*args).cover_points()}

    primary = points("primary")
    assert primary["choice/router"] == tuple(f"output {o}" for o in range(8))
    assert primary["rank/router"] == tuple(f"input {i}" for i in range(7))  # 7 ranks last
    assert len(primary["arbitrate/router"]) == 9
    alternate = points("alternate")
    assert "choice/router" not in alternate  # one output per crossbar and direction
    assert alternate["rank/router"] == (
        "input 0",
        "input 1",
        "input 2",
        "input 4",
        "input 5",
        "input 6",
    )
    assert alternate["arbitrate/router"][-1] == "3+ heads, held"
    assert points("alternate", 1, "round-robin")["rank/router"][-1] == "input 7"
    runtime = points("runtime")
    assert {
        "arbitrate/router@primary",
        "arbitrate/router@alternate",
        "choice/router@primary",
    } <= set(runtime)
    assert runtime["alternate/router"] == ("flipped, circuits held", "flipped, none held")
    assert runtime["release/router"][-1] == "BLOCKED forward, not closing"


@pytest.mark.parametrize("mode, priority", [("alternate", "fixed"), ("primary", "round-robin")])
def test_steered_rounds_close_the_routers_holes(mode, priority):
    model = RN1Model(mode, 0x5EED, priority)
    coverage = model.start_coverage()
    check = _check(model, 2)
    _run(check, "random", transmissions("random", 3, random.Random(2), check.layout))
    holes = len(coverage.holes())
    assert holes
    rounds = 0
    for name, queues, knobs, setting in hole_rounds(check, random.Random(4), tries=400):
        if setting is not None:
            model.alternate = setting
        _run(check, name, queues, knobs)
        assert len(coverage.holes()) < holes  # each round tried first hits a hole
        holes, rounds = len(coverage.holes()), rounds + 1
    assert coverage.holes() == [] and rounds > 0 and check.scoreboard.mismatches == 0


# The networks driven at their channels.


def _network(design, size, seed=1):
    if design == "rn1-bidelta":
        model = RN1BideltaModel(size, seed)
        return model, bidelta_layout(model.net)
    model = RN1UnitTreeModel(size, seed)
    return model, unit_tree_layout(model.tree)


def _outputs_of(model, check, rng, count, patterns):
    trace = []
    step = model.step

    def traced_step(i_fwd, o_bk):
        trace.append((model.o_fwd, model.i_bk))
        step(i_fwd, o_bk)

    model.step = traced_step
    for name in patterns:
        _run(check, name, transmissions(name, count, rng, check.layout))
    del model.step
    return trace


@pytest.mark.parametrize("design, size", [("rn1-bidelta", 16), ("rn1-unit-tree", 2)])
def test_counting_does_not_change_the_network(design, size):
    (plain, layout), (counted, _) = _network(design, size), _network(design, size)
    coverage = counted.start_coverage()
    # The unit tree's 160 channels: one random transmission each (a hot spot is long).
    count, patterns = (2, ("random", "hotspot")) if size > 2 else (1, ("random",))
    traces = [
        _outputs_of(m, _check(m, 3, layout), random.Random(3), count, patterns)
        for m in (plain, counted)
    ]
    assert traces[0] == traces[1]
    assert coverage.as_dict()["hit"] > 0.6 * coverage.as_dict()["bins"], coverage.holes()


@pytest.mark.parametrize("design, size", [("rn1-bidelta", 16), ("rn1-unit-tree", 2)])
def test_network_counts_agree_with_the_traffic(design, size):
    """Every transmission gets through once (its first status at its input channel,
    CONNECTED, after the BLOCKED answers its sender counted) and is acknowledged once at
    its destination's output channel."""
    model, layout = _network(design, size)
    coverage = model.start_coverage()
    check = _check(model, 4, layout)
    rng = random.Random(4)
    sent = 0
    for name in ("random", "hotspot") if size > 2 else ("random",):
        queues = transmissions(name, 3 if size > 2 else 1, rng, layout)
        _run(check, name, queues)
        sent += sum(map(len, queues))
    hits = {name: p["bins"] for name, p in coverage.as_dict()["points"].items()}
    assert sum(hits["retries"].values()) == sum(hits["deliver"].values()) == sent
    assert check.scoreboard.mismatches == 0
    # A sender's BLOCKED answers are the discards of every stage and the receivers' refusals.
    discards = sum(p["answered BLOCKED"] for n, p in hits.items() if n.startswith("discard/"))
    assert check.stats["blocked_answers"] >= discards > 0
    assert hits["retries"]["4+ retries"] > 0 or size == 2  # the hot spot


@pytest.mark.parametrize("design, size", [("rn1-bidelta", 16)])
def test_steered_rounds_close_the_networks_holes(design, size):
    model, layout = _network(design, size)
    coverage = model.start_coverage()
    check = _check(model, 2, layout)
    _run(check, "random", transmissions("random", 2, random.Random(2), layout))
    holes = len(coverage.holes())
    for name, queues, knobs, _ in hole_rounds(check, random.Random(4), tries=400):
        _run(check, name, queues, knobs)
        assert len(coverage.holes()) < holes
        holes = len(coverage.holes())
    assert coverage.holes() == [] and check.scoreboard.mismatches == 0


def test_network_points_follow_the_design_point():
    points = {p.name: p.bins for p in RN1BideltaModel(16).cover_points()}
    # Stage 1 of 16 is the dual-crossbar stage: one output per group, no choice to make.
    assert "choice/S0" in points and "choice/S1" not in points
    assert points["deliver"] == tuple(f"endpoint {e}" for e in range(16))
    assert points["retries"] == ("first try", "1 retry", "2-3 retries", "4+ retries")
    # The one router of 4 endpoints sees their eight links: every bin can happen.
    small = {p.name: p.bins for p in RN1BideltaModel(4).cover_points()}
    assert len(small["arbitrate/S0"]) == 9 and len(small["rank/S0"]) == 7


def test_unit_tree_bench_traffic_leaves_no_hole():
    """The unit tree bench's phases (random, then a hot spot: one transmission per channel
    each, its smallest run) and the rounds it steers after them hit every bin; on the model,
    since the 160-channel RTL is a slow test (``fattree sim rn1-unit-tree --coverage``,
    tests/test_rn1_unit_tree.py)."""
    model, layout = _network("rn1-unit-tree", 2, 2)
    coverage = model.start_coverage()
    rng = random.Random(1)
    check = _check(model, rng.getrandbits(32), layout)
    for name in ("random", "hotspot"):
        _run(check, name, transmissions(name, 1, rng, layout))
    assert coverage.holes()  # at this point the phases leave holes ...
    for name, queues, knobs, _ in hole_rounds(check, random.Random(rng.getrandbits(32)), tries=200):
        _run(check, name, queues, knobs)
    assert coverage.holes() == [] and check.scoreboard.mismatches == 0  # ... the rounds close
    hits = coverage.as_dict()["points"]
    assert len(hits["deliver"]["bins"]) == 65  # every subtree and the top


def _walked_senders(network, tag_of, routes):
    """:func:`grouped_route_senders` restated the plain way: every sender's heads followed
    through every output they may take, one path at a time (minutes at two stages)."""
    out_of = {(id(a), pa): (b, pb) for (_, a, pa), (_, b, pb) in network._links}
    where = {}
    for key, r in network.routers.items():
        for gkey, inputs, _ in arbitration_groups(r.mode):
            for k, i in enumerate(inputs, 1):
                where[id(r), i, gkey[-1]] = (key, gkey, k)
    groups, asked, ends = {}, {}, set()

    def walk(sender, element, port, heads, k):
        if not isinstance(element, RN1Model):  # a swallow drops the byte it routed
            nxt = out_of.get((id(element), 0))
            if nxt is not None and k + 1 < len(heads):
                walk(sender, *nxt, heads, k + 1)
            return
        d = direction(heads[k])
        key, gkey, place = where[id(element), port, d]
        senders, places = groups.setdefault((key, gkey), (set(), set()))
        senders.add(sender)
        places.add(place)
        asked.setdefault(key, set()).add(d)
        if k == len(heads) - 1:
            ends.add(key)
        passed = [*heads[:k], pass_head(heads[k]), *heads[k + 1 :]]
        for o in outputs_for(element.mode, port, d):
            nxt = out_of.get((id(element), o))
            if nxt is not None and isinstance(nxt[0], RN1Model | RN1SwallowModel):
                walk(sender, *nxt, passed, k)

    starts = {c: (b, pb) for (kind, c, _), (_, b, pb) in network._links if kind == "edge"}
    for sources, heads in routes:
        for sender, channel in sources:
            walk(sender, *starts[channel], list(heads), 0)
    tags = {}
    for (key, _), (senders, places) in groups.items():
        mode, most, won, outs, alone = tags.get(tag_of(key), ("", 0, set(), set(), False))
        won |= set(sorted(places)[:-1])
        outs |= {o for d in asked[key] for o in (2 * d, 2 * d + 1)}
        most = max(most, min(len(senders), len(places)))
        tags[tag_of(key)] = (network.routers[key].mode, most, won, outs, alone or key in ends)
    return {t: (m, n, tuple(sorted(w)), tuple(sorted(o)), a) for t, (m, n, w, o, a) in tags.items()}


@pytest.mark.parametrize(
    "model",
    [
        lambda: RN1BideltaModel(16),
        lambda: RN1UnitTreeModel(2),
        lambda: RN1FatTreeModel(1, None, 1),
        lambda: RN1HybridModel(12, 1),
        lambda: RN1HybridModel(48, 1, 5),
    ],
    ids=["bidelta-16", "unit-tree-2", "fat-tree-1", "hybrid-12", "hybrid-48"],
)
def test_route_senders_agree_with_every_path_walked(model):
    """The bins' source (senders per group, the places that can win, the outputs a choice
    can give, where a last head byte is routed), found segment by segment with the senders
    carried as sets, equals every path walked alone."""
    model = model()
    routes = model.route_paths()
    assert grouped_route_senders(model, model.router_tag, routes) == _walked_senders(
        model, model.router_tag, routes
    )
    paths = [(s, c, heads) for sources, heads in routes for s, c in sources]
    assert route_senders(model, model.router_tag, paths) == _walked_senders(
        model, model.router_tag, routes
    )


def test_node_routes_share_a_clusters_heads():
    """The hybrid's routes found once per cluster and destination are every node's heads to
    every other node (heads name their destination), on both its links."""
    net = RN1HybridModel(12, 2).net
    routes = node_routes(net, net.cluster)
    for a in (0, 5, 11, 12, 400, 767):
        for k in (0, 1):
            sent = Counter(tuple(h) for sources, h in routes if (2 * a + k, 2 * a + k) in sources)
            assert sent == Counter(tuple(net.heads(a, b)) for b in range(net.nodes) if b != a)
