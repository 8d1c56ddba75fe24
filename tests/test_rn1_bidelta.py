"""The RN1 bidelta network as data (fattree/spec/rn1_bidelta.py): wiring and routing."""

import random
from collections import Counter

import pytest

from fattree.spec.rn1 import pass_head
from fattree.spec.rn1_bidelta import bidelta

NETS = {(n, seed): bidelta(n, seed) for n in (4, 16, 64) for seed in (0, 9)}


@pytest.mark.parametrize("key", NETS)
def test_every_port_is_wired_once(key):
    net = NETS[key]
    sources = Counter(src for src, _ in net.links)
    sinks = Counter(dst for _, dst in net.links)
    assert set(sources.values()) == {1} and set(sinks.values()) == {1}
    ports = {
        (j, r, p) for j in range(net.stages) for r in range(net.routers_per_stage) for p in range(8)
    }
    assert {dst[1:] for dst in sinks if dst[0] == "in"} == ports
    assert {src[1:] for src in sources if src[0] == "out"} == ports
    assert {src for src in sources if src[0] == "ep_out"} == {
        ("ep_out", e, k) for e in range(net.endpoints) for k in (0, 1)
    }


def _follow(net, start, digits):
    sink_of = net.sink_of()
    frontier, reached = [start], set()
    while frontier:
        sink = sink_of[frontier.pop()]
        if sink[0] == "ep_in":
            reached.add(sink)
            continue
        _, j, r, p = sink
        d = digits[j]
        if net.mode(j) == "alternate":
            frontier.append(("out", j, r, 4 * (p // 4) + d))
        else:
            frontier += [("out", j, r, 2 * d), ("out", j, r, 2 * d + 1)]
    return reached


@pytest.mark.parametrize("key", NETS)
def test_every_endpoint_reaches_every_endpoint_by_every_path(key):
    net = NETS[key]
    for src in range(net.endpoints):
        for dst in range(net.endpoints):
            for k in (0, 1):
                reached = _follow(net, ("ep_out", src, k), net.digits(dst))
                assert reached and reached <= {("ep_in", dst, 0), ("ep_in", dst, 1)}


@pytest.mark.parametrize("n", [16, 64])
def test_two_ways_in_and_out_use_different_routers(n):
    net = bidelta(n, 4)
    sink_of = net.sink_of()
    for e in range(n):
        assert sink_of["ep_out", e, 0][2] != sink_of["ep_out", e, 1][2]
        feeders = {src[2] for src, dst in net.links if dst[:2] == ("ep_in", e)}
        assert len(feeders) == 2


def test_random_wiring_depends_on_the_seed():
    assert bidelta(64, 1).links != bidelta(64, 2).links
    assert bidelta(64, 1).links == bidelta(64, 1).links


@pytest.mark.parametrize("n", [4, 16, 64, 256])
def test_head_byte_names_the_destination(n):
    net = bidelta(n)
    for dest in range(n):
        head = net.head(dest, fill=0xFF)
        assert net.destination(head) == dest
        h = head
        for j in range(net.stages):
            assert h & 3 == net.digits(dest)[j]
            h = pass_head(h)


def _direction_pairs(net):
    """Per (router, direction), the routers (or chips of a last-stage pair) its two links
    enter."""
    sink_of = net.sink_of()
    pairs = {}
    for j in range(net.stages - 1):
        for r in range(net.routers_per_stage):
            for d in range(4):
                pairs[j, r, d] = [sink_of["out", j, r, 2 * d + k][2] for k in (0, 1)]
    return pairs


@pytest.mark.parametrize("n", [16, 64, 256])
def test_random_wiring_keeps_a_directions_links_on_different_routers(n):
    for seed in range(40 if n < 256 else 5):
        pairs = _direction_pairs(bidelta(n, seed))
        assert all(a != b for a, b in pairs.values()), seed


@pytest.mark.parametrize(
    "n, seeds", [(16, range(40)), pytest.param(64, range(1, 9), marks=pytest.mark.slow)]
)
def test_any_one_dead_router_leaves_every_pair_connected_for_every_seed(n, seeds):
    # Before the dealing kept a direction's links apart, seed 1 at 64 endpoints had router
    # (2, 1) cutting 19 pairs, and 37 of seeds 1..40 had some router that cut pairs.
    for seed in seeds:
        net = bidelta(n, seed)
        for j in range(net.stages):
            for r in range(net.routers_per_stage):
                assert all(map(all, net.connected({(j, r)}))), (seed, j, r)
    # Two dead routers can cut pairs (both chips of a last-stage pair: their 8 endpoints).
    cut = bidelta(n, 1).connected({(net.stages - 1, 0), (net.stages - 1, 1)})
    assert [dst for dst in range(n) if not any(row[dst] for row in cut)] == list(range(8))
    assert sum(not x for row in cut for x in row) == 8 * n


def test_the_random_dealing_is_uniform_among_the_allowed():
    from fattree.spec.rn1_bidelta import deal_apart

    # Two groups of two links onto two routers of two slots: 16 allowed dealings of 24.
    groups, routers = [["a", "b"], ["c", "d"]], [[0, 1], [2, 3]]
    rng = random.Random(1)
    seen = Counter(tuple(deal_apart(groups, routers, rng)) for _ in range(4000))
    assert len(seen) == 16 and min(seen.values()) > 180
    for dealing in seen:
        where = dict(dealing)
        assert where["a"] // 2 != where["b"] // 2 and where["c"] // 2 != where["d"] // 2
    # In order without a generator: a group's links on consecutive routers.
    assert deal_apart(groups, routers) == [("a", 0), ("b", 2), ("c", 1), ("d", 3)]
    with pytest.raises(AssertionError, match="cannot be kept apart"):
        deal_apart([["a", "b", "c"], ["d"]], routers, rng)


@pytest.mark.parametrize("cluster, seeds, step", [(12, (4, 5), 1), (48, (4,), 4)])
def test_hybrid_cluster_random_wiring_survives_any_one_fault(cluster, seeds, step):
    # The same dealing in the hybrid leaf cluster (seed 5, 12 nodes, used to lose 21 pairs to
    # router s1_1; seed 4, 48 nodes, 24 to s2_5).
    import numpy as np

    from fattree.spec.rn1_hybrid import hybrid_network

    for seed in seeds:
        net = hybrid_network(cluster, 1, seed)
        everyone = ~np.eye(cluster, dtype=bool)
        for key in net.routers:
            assert (net.connected(dead=[key]) == everyone).all(), (seed, key)
        ends = [src for src, dst in net.links if src[0] in ("out", "ep_out") and dst[0] != "top_up"]
        for end in ends[::step]:  # every link of 48 nodes is ~30 s: a quarter of them
            assert (net.connected(links=[end]) == everyone).all(), (seed, end)


def test_parameter_errors():
    with pytest.raises(ValueError, match=r"endpoints must be one of 4, 16, 64, 256, not 32"):
        bidelta(32)
    with pytest.raises(ValueError, match=r"seed must be at least 0, not -1"):
        bidelta(16, -1)


# --- the network's hardware against its model ---------------------------------------------


def check_network(endpoints, seed, pattern, count, mutate=False):
    from fattree.hdl.rn1.bidelta import RN1Bidelta
    from fattree.sim.checks.rn1 import bidelta_layout, simulate_network
    from fattree.sim.models.rn1 import RN1BideltaModel

    model = RN1BideltaModel(endpoints, seed)
    layout = bidelta_layout(model.net)
    dut = RN1Bidelta(endpoints, seed)
    return simulate_network(dut, model, layout, pattern, count, seed, mutate=mutate)


@pytest.mark.parametrize(
    "pattern, count", [("random", 2), pytest.param("hotspot", 1, marks=pytest.mark.slow)]
)
def test_network_matches_model(pattern, count):
    scoreboard, check = check_network(16, 3, pattern, count)
    scoreboard.raise_on_mismatch()
    assert scoreboard.checked == 32 * count
    assert check.stats["blocked"] > 0 and check.stats["turn_segments"] > 0


def test_network_broken_reference_fails():
    scoreboard, _ = check_network(4, 1, "random", 2, mutate=True)
    assert scoreboard.failures["cycle_mismatches"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("seed", [5, 6])
def test_network_64_matches_model(seed):
    scoreboard, _ = check_network(64, seed, "random", 2)
    scoreboard.raise_on_mismatch()


@pytest.mark.slow
@pytest.mark.cocotb
@pytest.mark.parametrize("mutate", [False, True])
def test_network_cocotb_bench(mutate, tmp_path):
    import shutil

    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    if shutil.which("iverilog") is None:
        pytest.skip("no iverilog")
    result = run_bench(
        get_design("rn1-bidelta"),
        {"endpoints": 16, "seed": 2},
        "icarus",
        seed=4,
        bench={"frames": 32, "mutation": mutate},
        root=tmp_path,
    )
    if mutate:
        assert not result.passed and result.summary["cycle_mismatches"] == 1
    else:
        assert result.passed, result.summary.get("first_mismatch") or result.log
        assert result.summary["checked"] == 64


def test_open_probability_experiment():
    import argparse

    from fattree.sim.experiments import registry
    from fattree.sim.experiments.rn1_open_probability import open_probability

    light = open_probability(16, 0.005, 600, 4, 3)
    heavy = open_probability(16, 0.5, 600, 4, 3)
    assert light == open_probability(16, 0.005, 600, 4, 3)  # seeded
    first, first_ok, tries, ok = heavy
    assert tries > first > 0 and ok <= tries and first_ok <= first
    # Light traffic opens (almost) always; heavy traffic is blocked often.
    assert light[1] / light[0] > 0.8 > heavy[1] / heavy[0]
    args = argparse.Namespace(endpoints=16, loads=[0.05], cycles=300, length=4, seed=1)
    result = registry()["dehon-open-probability"].run(args)
    assert result.rows[0][:2] == ["bidelta", 16] and result.rows[0][4] == 0.05
    assert 0 < result.rows[0][6] <= 1


@pytest.mark.parametrize("key", NETS)
def test_heads_reach_their_destination(key):
    # The head as the routers pass it on (rotated at every stage), through the wiring.
    net = NETS[key]
    sink_of = net.sink_of()
    for src in range(net.endpoints):
        for dst in range(net.endpoints):
            frontier, reached = [(("ep_out", src, dst % 2), net.head(dst, fill=src))], set()
            while frontier:
                end, h = frontier.pop()
                sink = sink_of[end]
                if sink[0] == "ep_in":
                    reached.add(sink)
                    continue
                _, j, r, p = sink
                d = h & 3
                ports = [4 * (p // 4) + d] if net.mode(j) == "alternate" else [2 * d, 2 * d + 1]
                frontier += [(("out", j, r, q), pass_head(h)) for q in ports]
            assert reached and reached <= {("ep_in", dst, 0), ("ep_in", dst, 1)}


@pytest.mark.parametrize("n", [16, 64])
@pytest.mark.parametrize("random_wiring", [True, False])
def test_any_one_dead_router_leaves_every_pair_connected(n, random_wiring):
    net = bidelta(n, 2, random_wiring)
    assert all(all(row) for row in net.connected(set()))
    for j in range(net.stages):
        for r in range(net.routers_per_stage):
            assert all(all(row) for row in net.connected({(j, r)})), (j, r)


def test_faults_experiment_random_wiring_beats_regular():
    import argparse

    from fattree.sim.experiments import registry

    args = argparse.Namespace(endpoints=64, faults=[8], trials=10, seed=1)
    result = registry()["dehon-faults"].run(args)
    (row,) = result.rows
    col = {c: i for i, c in enumerate(result.columns)}
    random_mean, regular_mean = row[col["random: pairs"]], row[col["regular: pairs"]]
    assert row[0] == 8 and 0 < regular_mean < random_mean < 1
    # Worst-placed sets only up to --worst (1).
    assert [row[c] for name, c in col.items() if name.endswith("worst-placed")] == [None] * 3
    # Two dead routers of one dual-crossbar pair cut their endpoints off: the worst case.
    net = bidelta(16, 2)
    cut = net.connected({(1, 0), (1, 1)})
    assert not any(cut[s][d] for s in range(16) for d in range(8))


@pytest.mark.cocotb
def test_network_cocotb_coverage_has_no_hole(tmp_path):
    # The small point: 4 endpoints (one router), Icarus; every bin of the model's cover
    # points hit (docs/dehon.md, "Coverage"), by the phases and the rounds steered after.
    import shutil

    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    if shutil.which("iverilog") is None:
        pytest.skip("no iverilog")
    result = run_bench(
        get_design("rn1-bidelta"),
        {"endpoints": 4, "seed": 1},
        "icarus",
        seed=1,
        bench={"frames": 32, "coverage": True},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["coverage"]["holes"] == [], s["coverage"]
    points = s["coverage"]["points"]
    assert sum(points["deliver"]["bins"].values()) == s["checked"]
    assert points["release/S0"]["bins"]["BLOCKED forward"] > 0  # steered: refused replies


@pytest.mark.slow  # the default point, 16 endpoints, on Verilator: build and run
@pytest.mark.cocotb
def test_network_coverage_closes_at_the_default_point(tmp_path, capsys):
    import json

    from fattree.scripts.main import main

    argv = ["sim", "rn1-bidelta", "--coverage", "--json", "--build-root", str(tmp_path)]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["coverage"]["holes"] == []
    assert code == 0 and out["passed"]
