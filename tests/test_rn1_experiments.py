"""DeHon's experiments on the cycle-exact models: opening a connection on the bidelta network
and the fat-tree of unit trees (``dehon-open-probability``), and delivery around dead routers
and links (``dehon-faults --delivery``, with the port disabling of :class:`RN1PortsModel`)."""

from __future__ import annotations

import argparse
import random

import pytest

from fattree.sim.experiments import registry
from fattree.sim.experiments.rn1_faults import deliver, traffic
from fattree.sim.experiments.rn1_open_probability import (
    make_network,
    measure_open,
    pick_destination,
)
from fattree.sim.models.rn1 import RN1BideltaModel, RN1FatTreeModel, RN1Model, RN1PortsModel
from fattree.spec.rn1 import BLOCKED, CONNECTED, DROP, ctrl_of, data_of, word

# --- the port disabling -------------------------------------------------------------------


def _random_words(rng, n):
    # Heads, bytes, closes and statuses, protocol or not: every path of the router.
    return [
        rng.choice([0, word(1, rng.getrandbits(8)), word(0, rng.getrandbits(8))]) for _ in range(n)
    ]


def test_ports_model_with_nothing_disabled_is_the_router():
    rng = random.Random(5)
    plain, ports = RN1Model("primary", 7), RN1PortsModel("primary", 7)
    for _ in range(3000):
        i_fwd, o_bk = _random_words(rng, 8), _random_words(rng, 8)
        plain.step(i_fwd, o_bk)
        ports.step(i_fwd, o_bk)
        assert (plain.o_fwd, plain.i_bk, plain.decisions) == (
            ports.o_fwd,
            ports.i_bk,
            ports.decisions,
        )


def test_a_network_without_faults_has_only_plain_routers():
    model = RN1BideltaModel(16, 1)
    assert {type(r) for r in model.routers.values()} == {RN1Model} and model.dead_channels == []


def test_a_disabled_output_is_never_granted():
    head = [word(1, 0b01)] + [0] * 7  # input 0 asks for direction 1: outputs 2 and 3
    took = set()
    for seed in range(1, 60):
        plain, ports = RN1Model("primary", seed), RN1PortsModel("primary", seed, (), [2])
        plain.step(head, [0] * 8)
        ports.step(head, [0] * 8)
        took.add(plain.decisions[0])
        assert ports.decisions[0] == ("open", 3) and ports.o_fwd[3] and not ports.o_fwd[2]
    assert took == {("open", 2), ("open", 3)}  # the random choice, when both are enabled
    # Two heads for direction 1 and one enabled output: the second is blocked, and told so.
    ports = RN1PortsModel("primary", 1, (), [3])
    ports.step([word(1, 0b01), word(1, 0b01)] + [0] * 6, [0] * 8)
    assert ports.decisions[:2] == [("open", 2), "blocked"]
    ports.step([word(1, 9), word(0, DROP)] + [0] * 6, [0] * 8)
    assert ports.i_bk[1] == word(0, BLOCKED)
    # Alternate mode: input 0's crossbar has one output per direction; disabled, a head
    # for it is blocked.
    alt = RN1PortsModel("alternate", 1, (), [1])
    alt.step(head, [0] * 8)
    assert alt.decisions[0] == "blocked"


def test_a_disabled_input_is_ignored():
    ports = RN1PortsModel("primary", 1, [0], ())
    ports.step([word(1, 0b01)] + [0] * 7, [0] * 8)
    assert ports.decisions == [None] * 8 and not any(ports.o_fwd)


def test_a_dead_router_disables_the_links_into_it():
    model = RN1BideltaModel(16, 1, dead=[(0, 1)])
    feeding = sorted(
        2 * end[1] + end[2]
        for end, sink in model.net.links
        if end[0] == "ep_out" and sink[1:3] == (0, 1)
    )
    assert model.dead_channels == feeding and len(feeding) == 8
    assert model.routers[0, 1].disabled_outputs == frozenset(range(8))
    # The stage-1 routers it feeds ignore those inputs.
    fed = {sink[1:3] for end, sink in model.net.links if end[:3] == ("out", 0, 1)}
    assert all(model.routers[k].disabled_inputs for k in fed)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"dead": [(9, 9)]}, "dead: (9, 9) is not"),
        ({"dead": 3}, "dead must be"),
        ({"dead_links": [("out", 0, 0, 9)]}, "dead_links"),
        ({"random_wiring": 1}, "random_wiring must be"),
    ],
)
def test_bad_faults_are_named(kwargs, message):
    with pytest.raises(
        (TypeError, ValueError), match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        RN1BideltaModel(16, 1, **kwargs)


# --- delivery under faults: the model against the definitions' path search ---------------------


def _run(
    network, endpoints, stages, dead=(), links=(), pattern="permutation", wiring=True, cluster=12
):
    model, nodes, heads = make_network(network, endpoints, stages, 1, wiring, dead, links, cluster)
    plan = traffic(pattern, list(range(nodes)), nodes, 2, random.Random(3))
    res = deliver(model, nodes, heads, plan, 4, 48, 2)
    if network == "bidelta":
        reach = model.net.connected(set(dead))
    else:
        reach = model.net.connected(dead=dead, links=links)
    cut = sorted((s, d) for s in plan for d in plan[s] if not reach[s][d])
    assert cut and set(cut) <= set(res["given_up"])  # no path: never delivered, never hung
    assert len(res["delivered"]) + len(res["given_up"]) == sum(map(len, plan.values()))
    assert res["wrong"] == 0  # each confirmed message arrived once, where it was sent
    # A message given up though the path search finds a path lost to traffic: sent alone
    # around the same faults, it is delivered.
    unlucky = [pair for pair in res["given_up"] if pair not in cut]
    for s, d in unlucky:
        model.reset()
        alone = deliver(model, nodes, heads, {s: [d] * 4}, 4, 48, 5)
        assert len(alone["delivered"]) == 4, (s, d)
    return len(unlucky)


@pytest.mark.parametrize("wiring", [True, False])
def test_bidelta_delivery_around_dead_routers_matches_the_path_search(wiring):
    # Both chips of a last-stage pair: their eight endpoints are unreachable (and one
    # first-stage chip: the nodes whose link enters it use the other).
    assert _run("bidelta", 16, 1, [(1, 0), (1, 1), (0, 2)], wiring=wiring) <= 1


def test_fat_tree_delivery_around_dead_links_and_routers():
    model = RN1FatTreeModel(1, 1)
    rng = random.Random(4)
    routers = sorted(model.routers)
    links = sorted(s for s, d in model.net.links if d[0] != "top_up" and s[0] != "top_down")
    dead, cut = rng.sample(routers, 6), rng.sample(links, 60)
    assert _run("fat-tree", 64, 1, dead, cut, pattern="random") <= 2


def test_hybrid_delivery_around_dead_routers():
    model, _, _ = make_network("hybrid", 48, 1, 1, cluster=48)
    dead = random.Random(2).sample(sorted(model.routers), 5)
    assert _run("hybrid", 48, 1, dead, cluster=48) <= 2


def test_wrong_arrivals_are_counted():
    # The check itself: a receiver that sees a transmission nobody confirmed.
    model, nodes, heads = make_network("bidelta", 16, 1, 1)
    plan = {0: [5]}
    res = deliver(model, nodes, heads, plan, 4, 8, 1)
    assert res["delivered"] == [(0, 5)] and res["wrong"] == 0

    class Liar:
        # The model, but every CONNECTED is reported as arriving twice.
        def __init__(self, inner):
            self.inner = inner
            self.dead_channels, self.channels = inner.dead_channels, inner.channels

        @property
        def o_fwd(self):
            out = self.inner.o_fwd
            return out[:12] + out[10:12] + out[14:]  # node 5's words also appear at node 6

        @property
        def i_bk(self):
            return self.inner.i_bk

        def step(self, i_fwd, o_bk):
            self.inner.step(i_fwd, o_bk)

    model.reset()
    res = deliver(Liar(model), nodes, heads, plan, 4, 8, 1)
    assert res["wrong"] >= 1


def test_delivery_experiment_rows():
    args = argparse.Namespace(
        delivery=True,
        network="bidelta",
        endpoints=16,
        stages=None,
        kind="routers",
        faults=[2],
        trials=1,
        pattern=["random"],
        messages=1,
        give_up=32,
        senders=None,
        length=4,
        seed=1,
    )
    result = registry()["dehon-faults"].run(args)
    col = {c: i for i, c in enumerate(result.columns)}
    assert [(r[0], r[1]) for r in result.rows] == [
        (0, "random"),
        (0, "regular"),
        (2, "random"),
        (2, "regular"),
    ]
    for r in result.rows:
        # Every message is delivered or given up; a given-up one with a path is reported.
        assert (
            r[col["delivered"]] + r[col["given up: no path"]] + r[col["given up: with a path"]]
            == r[col["messages"]]
        )
        assert r[col["given up: no path"]] == r[col["no path"]]
    assert all(r[col["no path"]] == 0 for r in result.rows[:2])


def test_delivery_options_are_checked():
    base = {
        "delivery": True,
        "network": "bidelta",
        "endpoints": 16,
        "stages": 2,
        "kind": "routers",
        "faults": [1],
        "trials": 1,
        "pattern": ["random"],
        "messages": 1,
        "give_up": 4,
        "senders": None,
        "length": 4,
        "seed": 1,
    }
    run = registry()["dehon-faults"].run
    with pytest.raises(ValueError, match="--stages"):
        run(argparse.Namespace(**base))
    with pytest.raises(ValueError, match="--kind links"):
        run(argparse.Namespace(**{**base, "stages": None, "kind": "links"}))
    with pytest.raises(ValueError, match="--senders"):
        run(argparse.Namespace(**{**base, "stages": None, "senders": 17}))
    with pytest.raises(ValueError, match="--delivery"):
        run(argparse.Namespace(**{**base, "delivery": False}))
    with pytest.raises(ValueError, match="--cluster"):
        run(argparse.Namespace(**{**base, "stages": None, "cluster": 48}))
    # Without --delivery its options are refused, not ignored.
    from fattree.sim.experiments.rn1_faults import DELIVERY_OPTIONS

    plain = {**base, "delivery": False, "cluster": None, **dict.fromkeys(DELIVERY_OPTIONS)}
    with pytest.raises(ValueError, match="--cluster is the hybrid fat-tree's"):
        run(argparse.Namespace(**{**plain, "cluster": 48}))
    with pytest.raises(ValueError, match="--kind stacks: the trees' non-leaf"):
        run(argparse.Namespace(**{**base, "stages": None, "kind": "stacks"}))
    for option in DELIVERY_OPTIONS:
        flag = "--" + option.replace("_", "-")
        with pytest.raises(ValueError, match=f"{flag} goes with --delivery"):
            run(argparse.Namespace(**{**plain, option: base.get(option) or 1}))
    # Not given with --delivery: the defaults.
    result = run(
        argparse.Namespace(
            **{**base, "stages": None, "faults": [1], "give_up": None, "kind": None, "length": None}
        )
    )
    assert result.params["give_up"] == 64 and result.params["kind"] == "routers"


@pytest.mark.parametrize("faults", [(), ((1, 0), (1, 1), (0, 2))])
def test_retry_strategies_deliver_everything_with_a_path(faults):
    # Two hot spots (14 nodes send to node 0, then to node 12; with node 0's last-stage pair
    # dead it has no path) on the bidelta network, each strategy: every message with a path
    # is delivered, every one without is given up, none arrives wrongly; and waiting costs
    # fewer tries per delivered message than retrying at once.
    model, nodes, heads = make_network("bidelta", 16, 1, 1, True, list(faults))
    reach = model.net.connected(set(faults))
    plan = {e: [0, 12] for e in range(1, 16) if e != 12}
    tries = {}
    for retry in ("immediate", "round", "backoff"):
        model.reset()
        # 24 tries: a cut pair's back-off waits grow to 1020 cycles a try (64 take ~30 s).
        res = deliver(model, nodes, heads, plan, 4, 24 if faults else 64, 1, retry)
        assert res["wrong"] == 0
        assert sorted(res["given_up"]) == sorted(
            (s, d) for s in plan for d in plan[s] if not reach[s][d]
        )
        tries[retry] = res["tries"] / len(res["delivered"])
    assert tries["backoff"] < tries["immediate"] and tries["round"] < tries["immediate"]
    with pytest.raises(ValueError, match="retry must be one of immediate, round, backoff"):
        deliver(model, nodes, heads, plan, 4, 64, 1, "later")


class _Starts:
    """A network model that records ``(cycle, node)`` of every try's first head byte."""

    def __init__(self, inner):
        self.inner, self.channels = inner, inner.channels
        self.dead_channels = inner.dead_channels
        self.cycle, self.starts, self.prev = 0, [], [0] * inner.channels

    o_fwd = property(lambda self: self.inner.o_fwd)
    i_bk = property(lambda self: self.inner.i_bk)

    def step(self, i_fwd, o_bk):
        for c, w in enumerate(i_fwd):
            if ctrl_of(w) and not ctrl_of(self.prev[c]):
                self.starts.append((self.cycle, c // 2))
        self.prev = list(i_fwd)
        self.cycle += 1
        self.inner.step(i_fwd, o_bk)


def test_rounds_start_only_when_no_try_is_under_way():
    # Three nodes to node 0 (two links in): two get through, one is BLOCKED. Immediately:
    # everyone at cycle 0, the loser again in the cycle its BLOCKED is back (7). Rounds: the
    # first waits for go (cycle 1, after the idle cycle 0), the retry for the round after the
    # two winners' tries are confirmed (10), not at its own BLOCKED.
    def starts(retry):
        model, nodes, heads = make_network("bidelta", 16, 1, 1)
        spy = _Starts(model)
        res = deliver(spy, nodes, heads, {1: [0], 2: [0], 3: [0]}, 4, 8, 1, retry)
        assert len(res["delivered"]) == 3 and res["tries"] == 4
        return spy.starts

    assert starts("immediate") == [(0, 1), (0, 2), (0, 3), (7, 1)]
    assert starts("round") == [(1, 1), (1, 2), (1, 3), (10, 3)]


def test_a_dead_parent_stack_on_the_hybrid_tree():
    # 12-node clusters have one parent unit tree: with it dead every message between
    # clusters has no path and is given up (none hangs), every one inside is delivered.
    args = argparse.Namespace(
        delivery=True,
        network="hybrid",
        cluster=12,
        endpoints=64,
        stages=2,
        kind="stacks",
        faults=[1],
        trials=1,
        pattern=["random"],
        retry=["immediate"],
        messages=1,
        give_up=8,
        senders=24,
        length=4,
        seed=1,
    )
    result = registry()["dehon-faults"].run(args)
    col = {c: i for i, c in enumerate(result.columns)}
    rows = {(r[0], r[1], r[col["retry"]]): r for r in result.rows}
    assert len(rows) == 4
    for (faults, _, _), r in rows.items():
        assert (
            r[col["given up: with a path"]] == 0
            and r[col["given up: no path"]] == r[col["no path"]]
        )
        if faults:
            assert r[col["no path"]] > 18 and r[col["delivered"]] == 24 - r[col["no path"]]
        else:
            assert r[col["delivered"]] == 24


def test_hybrid_connectivity_rows():
    # ~10 s: every one of the 64 clusters removed, in three wirings.
    args = argparse.Namespace(
        network="hybrid", cluster=12, endpoints=64, faults=[1], trials=3, seed=1
    )
    result = registry()["dehon-faults"].run(args)
    rows = {(r[0], r[1]): r[2:] for r in result.rows}
    n, c = 768, 12
    inside = 64 * c * (c - 1) / (n * (n - 1))  # the one parent tree gone: inside clusters only
    assert rows["parent stacks", 1] == pytest.approx([inside] * 6)
    leaf = 1 - (2 * c * (n - 1) - c * (c - 1)) / (n * (n - 1))
    assert rows["leaf stacks", 1] == pytest.approx([leaf] * 6)
    assert rows["routers", 1][:4] == [1, 1, 1, 1]  # one dead router of 656 cuts no pair
    assert result.params["cluster"] == 12


# --- opening a connection -------------------------------------------------------------------


@pytest.mark.parametrize(
    "network, nodes, cluster", [("bidelta", 16, 12), ("fat-tree", 64, 12), ("hybrid", 48, 48)]
)
def test_open_counts_are_the_models_own_events(network, nodes, cluster):
    # Every try's status came back (the run drains), each blocked try was blocked by one
    # router, and every try is a head the router behind the sender's link decided.
    def run():
        return measure_open(network, nodes, 0.1, 150, 3, 2, count_decisions=True, cluster=cluster)

    c = run()
    assert c["tries"] - c["ok"] == c["blocked"] > 0
    assert c["heads_in"] == c["tries"] > c["first"] >= c["first_ok"] > 0
    assert c == run()  # seeded


def test_mixed_local_traffic_opens_more_on_the_fat_tree_only():
    def p(network, local):
        c = measure_open(network, 64, 0.1, 300, 4, 1, local=local, level=1)
        return c["first_ok"] / c["first"]

    # A unit tree's up layer (dual-crossbar mode since 5770e72) gives a level-1 node's
    # links one output per direction per crossbar: uniform traffic sends 48 of 63 heads to
    # the level-3 crossover, half local traffic spreads them over two directions (docs/dehon.md,
    # load 0.1: 0.32 uniform, 0.41 half local). The bidelta network routes every pair
    # through the same three stages.
    assert p("fat-tree", 0.5) > p("fat-tree", 0.0) + 0.1
    assert abs(p("bidelta", 0.5) - p("bidelta", 0.0)) < 0.06


def test_pick_destination():
    rng = random.Random(1)
    for _ in range(2000):
        src = rng.randrange(64)
        d = pick_destination(rng, src, 64, 1.0, 1)
        assert d != src and d // 4 == src // 4
        d = pick_destination(rng, src, 64, 0.0, 1)
        assert d != src and 0 <= d < 64


def test_open_experiment_rows_and_options(tmp_path):
    args = argparse.Namespace(
        network=["fat-tree", "bidelta", "hybrid"],
        endpoints=None,
        stages=1,
        cluster=48,
        loads=[0.05],
        local=[0.0, 0.5],
        level=2,
        cycles=100,
        active=None,
        length=4,
        seed=1,
    )
    result = registry()["dehon-open-probability"].run(args)
    assert [(r[0], r[1], r[3]) for r in result.rows] == [
        ("fat-tree", 64, 0.0),
        ("fat-tree", 64, 0.5),
        ("bidelta", 64, 0.0),
        ("bidelta", 64, 0.5),
        ("hybrid", 48, 0.0),
        ("hybrid", 48, 0.5),
    ]
    assert all(0 < r[6] <= 1 for r in result.rows)
    registry()["dehon-open-probability"].plot(result, str(tmp_path / "open.png"))
    assert (tmp_path / "open.png").stat().st_size > 1000
    run = registry()["dehon-open-probability"].run
    for bad, message in [
        ({"network": ["bidelta"], "stages": 2}, "--stages"),
        ({"network": ["fat-tree"], "endpoints": 16}, "--endpoints"),
        ({"network": ["hybrid"], "cluster": 12, "level": 2}, "--level must be 1..1"),
        ({"level": 4}, "--level"),
        ({"active": 65}, "--active"),
    ]:
        with pytest.raises(ValueError, match=message):
            run(argparse.Namespace(**{**vars(args), **bad}))


def test_the_two_stage_fat_tree_with_a_sample_of_senders():
    # 4096 nodes: 16 of them send, for a few cycles; every status still comes back.
    c = measure_open("fat-tree", 4096, 0.2, 40, 3, 1, stages=2, active=16)
    assert c["tries"] >= c["first"] > 0 and c["ok"] > 0


def test_receivers_answer_at_the_close():
    from fattree.sim.experiments.rn1_open_probability import answer_closes

    got = answer_closes([word(1, 5), word(0, DROP), 0], [0, word(1, 7), word(0, DROP)])
    assert got == [0, word(0, CONNECTED), 0]
    assert not ctrl_of(got[1]) and data_of(got[1]) == CONNECTED


def test_sparse_stepping_with_faults_equals_the_plain_stepping():
    # RN1FatTreeModel steps only busy elements; with ports disabled it must still be the
    # plain network model cycle for cycle (same deliveries, tries and cycles).
    from fattree.sim.models.rn1 import RN1NetworkModel

    sparse = RN1FatTreeModel(1, 3)
    net = sparse.net
    rng = random.Random(7)
    dead = rng.sample(sorted(net.routers), 3)
    cut = rng.sample(sorted(s for s, d in net.links if d[0] != "top_up" and s[0] != "top_down"), 20)
    sparse = RN1FatTreeModel(1, 3, 1, True, dead, cut)
    plain = RN1NetworkModel(net.routers, net.links, net.inputs, net.outputs, (), dead, cut)
    assert plain.dead_channels == sparse.dead_channels
    plan = traffic("random", list(range(64)), 64, 2, random.Random(1))
    a = deliver(sparse, 64, net.heads, plan, 4, 16, 3)
    b = deliver(plain, 64, net.heads, plan, 4, 16, 3)
    assert a == b and a["given_up"] and a["delivered"]


def test_worst_placed_dead_routers():
    # Every set searched: one dead router cuts nothing (every wiring keeps an endpoint's two
    # ways on two routers), two can take a last-stage pair, whose 8 endpoints of 16 are then
    # unreachable (half the pairs), the worst there is.
    args = argparse.Namespace(endpoints=16, faults=[1, 2, 3], trials=2, seed=1, worst=2)
    result = registry()["dehon-faults"].run(args)
    col = {c: i for i, c in enumerate(result.columns)}
    wirings = ("random", "regular", "regular apart")
    worst = [tuple(r[col[f"{w}: worst-placed"]] for w in wirings) for r in result.rows]
    assert worst == [(1, 1, 1), (0.5, 0.5, 0.5), (None, None, None)]
    for bad, message in [
        ({"worst": 4}, "--worst must be 1..3, not 4"),
        ({"network": "fat-tree"}, "--worst is the bidelta rows'"),
        ({"delivery": True}, "--worst is the connectivity rows'"),
    ]:
        with pytest.raises(ValueError, match=message):
            registry()["dehon-faults"].run(argparse.Namespace(**{**vars(args), **bad}))


# --- the RTL under the same traffic (--rtl) -----------------------------------------------


@pytest.mark.parametrize("load", [pytest.param(0.05, marks=pytest.mark.slow), 0.3])
def test_rtl_counts_equal_the_models_at_two_loads(load):
    from fattree.sim.experiments.rn1_open_probability import measure_open_rtl

    model = measure_open("bidelta", 16, load, 120, 6, 1)
    rtl = measure_open_rtl(16, load, 120, 6, 1)
    assert rtl == model
    # The run is real traffic: blocked tries and retries at both loads.
    assert model["first"] > model["first_ok"] > 0 and model["tries"] > model["first"]


def test_rtl_of_another_wiring_does_not_agree_with_the_model():
    # The same traffic on the RTL of seed 2's wiring and LFSRs: a network the model of seed 1
    # does not describe, and the counts show it.
    from fattree.sim.experiments.rn1_open_probability import measure_open_rtl

    model = measure_open("bidelta", 16, 0.3, 120, 6, 1)
    assert measure_open_rtl(16, 0.3, 120, 6, 1, wiring_seed=2) != model


def _rtl_args(**changes):
    args = dict(
        network=["bidelta"],
        endpoints=4,
        stages=1,
        cluster=12,
        loads=[0.1, 0.4],
        local=[0.0],
        level=1,
        cycles=100,
        active=None,
        length=4,
        seed=3,
        rtl=True,
    )
    return argparse.Namespace(**{**args, **changes})


def test_rtl_option_reports_both_counts_and_stops_when_they_differ(monkeypatch):
    from fattree.sim.experiments import rn1_open_probability

    run = registry()["dehon-open-probability"].run
    result = run(_rtl_args())
    col = {c: i for i, c in enumerate(result.columns)}
    assert len(result.rows) == 2 and result.params["rtl"] is True
    for row in result.rows:
        assert row[col["model counts"]] == row[col["RTL counts"]]
        first, first_ok, tries, ok, cycles = map(int, row[col["RTL counts"]].split("/"))
        assert (first, tries) == (row[col["first tries"]], row[col["tries"]]) and cycles >= 100
    # An RTL that disagrees (another wiring under the same traffic) stops the run.
    real = rn1_open_probability.measure_open_rtl
    monkeypatch.setattr(
        rn1_open_probability,
        "measure_open_rtl",
        lambda *a, **k: real(*a, **k, wiring_seed=4),
    )
    with pytest.raises(rn1_open_probability.RTLMismatch, match="RTL and model differ at load 0.1"):
        run(_rtl_args())
    for bad in (
        {"network": ["hybrid"], "endpoints": None},
        {"network": ["fat-tree"], "endpoints": None, "stages": 2},
        {"network": ["bidelta"], "endpoints": 64},
    ):
        with pytest.raises(ValueError, match="--rtl runs only bidelta 4, bidelta 16, fat-tree 64"):
            run(_rtl_args(**bad))


def test_rtl_option_leaves_the_model_only_output_as_it_was():
    result = registry()["dehon-open-probability"].run(_rtl_args(rtl=False))
    assert "rtl" not in result.params and result.columns[-1] == "opened/link/cycle"


@pytest.mark.slow
@pytest.mark.parametrize("local", [0.0, 0.5])
def test_rtl_counts_equal_the_models_at_300_cycles(local):
    from fattree.sim.experiments.rn1_open_probability import measure_open_rtl

    for load in (0.02, 0.1, 0.5):
        model = measure_open("bidelta", 16, load, 300, 8, 1, local=local)
        assert measure_open_rtl(16, load, 300, 8, 1, local=local) == model, load


@pytest.mark.slow
def test_fat_tree_rtl_counts_equal_the_regular_models_at_two_loads():
    # RN1FatTree (52 routers, flat, in amaranth.sim: about 20 s to start) is regularly wired.
    from fattree.sim.experiments.rn1_open_probability import measure_open_rtl

    for load in (0.05, 0.3):
        model = measure_open("fat-tree", 64, load, 100, 6, 1, random_wiring=False)
        assert measure_open_rtl(64, load, 100, 6, 1, network="fat-tree") == model, load
        assert model["first"] > model["first_ok"] > 0
