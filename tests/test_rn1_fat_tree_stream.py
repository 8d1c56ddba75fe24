"""DeHon's 64-node fat-tree with an RN1 endpoint per node (``rn1-fat-tree``,
hdl/rn1/fat_tree.py ``RN1FatTreeStream``): the unit-tree route rule of the endpoints
(fattree/spec/rn1_endpoint.py), the endpoint with that rule against its model, RTL endpoints
on the network's model, the model of the whole design, and (behind ``--run-slow``) the whole
design's RTL against its model in amaranth.sim and as a cocotb bench."""

import random
import shutil

import pytest
from amaranth import Elaboratable, Module
from amaranth.hdl import Value

from fattree.designs import get_design
from fattree.hdl.rn1.endpoint import RN1Endpoint
from fattree.hdl.rn1.fat_tree import RN1FatTreeStream
from fattree.sim.checks.rn1_endpoint import (
    CHECKS,
    STREAM_OUTPUTS,
    model_outputs,
    run_stream_model,
    simulate_endpoint,
    simulate_stream,
)
from fattree.sim.models.rn1_endpoint import RN1EndpointModel, RN1FatTreeStreamModel
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate
from fattree.spec.rn1 import CONNECTED, ctrl_of, data_of, word
from fattree.spec.rn1_bidelta import ENDPOINT_LINKS
from fattree.spec.rn1_endpoint import (
    TIMEOUT,
    head,
    path_routers,
    route_heads,
    status_cycles,
    unit_tree_head,
)
from fattree.spec.rn1_tree import SUBTREES, UnitTree, fat_tree_network

RETRIES = ("immediate", "round", "backoff")
N = SUBTREES


# The route rule (definitions).


def test_unit_tree_heads_reach_every_destination_from_every_node():
    """From every node to every node (itself included), the head byte leads there: the
    unit tree's own inverse (:meth:`UnitTree.destination`) gives the destination back, and
    the routers it crosses are those of the paper's stage skipping (``1 + L``)."""
    for node in range(N):
        heads = route_heads("unit-tree", N, node)
        for dest in range(N):
            h = heads[dest]
            assert h == unit_tree_head(node, dest)
            assert UnitTree.destination(node, h) == dest, (node, dest, h)
            level = max(1, ((node ^ dest).bit_length() + 1) // 2)
            assert h & 3 == level - 1  # the up router's crossover
            # Unused directions are 0: the head holds 1 + L directions, at most 4.
            assert h >> 2 * (1 + level) == 0


def test_a_node_to_itself_goes_through_its_level_1_node():
    assert [unit_tree_head(n, n) for n in (0, 1, 6, 63)] == [0x00, 0x04, 0x08, 0x0C]
    assert unit_tree_head(5, 4) == 0x00 and unit_tree_head(5, 6) == 0x08  # siblings alike


def test_bidelta_rule_is_unchanged():
    for n in (4, 16, 64, 256):
        assert route_heads("bidelta", n, n - 1) == [head(n, d) for d in range(n)]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: route_heads("tree", 64), "route must be one of bidelta, unit-tree, not 'tree'"),
        (
            lambda: route_heads("unit-tree", 16),
            "endpoints must be 64 for route 'unit-tree', not 16",
        ),
        (lambda: route_heads("unit-tree", 64, 64), "node must be between 0 and 63, not 64"),
        (lambda: unit_tree_head(0, -1), "dest must be between 0 and 63, not -1"),
        (lambda: RN1Endpoint(16, route="unit-tree"), "endpoints must be 64 for route 'unit-"),
        (lambda: RN1Endpoint(16, node=16), "node must be between 0 and 15, not 16"),
        (lambda: RN1EndpointModel(64, route=None), "route must be one of bidelta, unit-tree"),
        (lambda: RN1FatTreeStream(seed=-1), "seed must be at least 0, not -1"),
        (lambda: RN1FatTreeStream(retry="never"), "retry must be one of 'immediate', 'round'"),
        (lambda: RN1FatTreeStream(max_bytes=65), "max_bytes must be between 1 and 64, not 65"),
        (lambda: RN1FatTreeStreamModel(seed=1.5), "seed must be an integer"),
        (lambda: RN1FatTreeStreamModel(max_bytes=0), "max_bytes must be between 1 and 64"),
    ],
)
def test_parameter_errors(call, message):
    with pytest.raises((TypeError, ValueError)) as raised:
        call()
    assert str(raised.value).startswith(message)


# One endpoint with the unit-tree rule.


@pytest.mark.parametrize("node", [0, 22, 63])
def test_endpoint_sends_its_table_head_to_every_destination(node):
    """The RTL's head byte for every destination, read off its output link: the table of the
    definitions, which reaches that destination (above). A stand-in network answers
    CONNECTED two cycles after each close."""
    dut = RN1Endpoint(N, "immediate", 7, 1, "unit-tree", node)
    seen = {}

    async def bench(ctx):
        prev = [0, 0]
        answer = [None, None]
        for dest in range(N):
            ctx.set(dut.tx.valid, 1)
            ctx.set(dut.tx.payload.dest, dest)
            ctx.set(dut.tx.payload.data, dest ^ 0x5A)
            ctx.set(dut.tx.payload.last, 1)
            assert ctx.get(dut.tx.ready)  # back in LOAD after the last CONNECTED
            await ctx.tick()
            ctx.set(dut.tx.valid, 0)
            while ctx.get(dut.sent) <= dest:
                for k in range(ENDPOINT_LINKS):
                    fwd = ctx.get(Value.cast(dut.o[k].fwd))
                    if ctrl_of(fwd) and not ctrl_of(prev[k]):
                        seen[dest] = data_of(fwd)
                    if ctrl_of(prev[k]) and not ctrl_of(fwd):
                        answer[k] = 2
                    prev[k] = fwd
                    ctx.set(Value.cast(dut.o[k].bk), word(0, CONNECTED) if answer[k] == 0 else 0)
                    answer[k] = None if answer[k] in (None, 0) else answer[k] - 1
                await ctx.tick()

    simulate(dut, bench)
    assert seen == {d: unit_tree_head(node, d) for d in range(N)}


@pytest.mark.parametrize(("node", "retry"), [(0, "immediate"), (37, "round"), (63, "backoff")])
def test_endpoint_matches_model(node, retry):
    """Every output every cycle (the head bytes on the links included) against the model
    with the same rule, the network played by stand-ins (random statuses and remote
    senders): 1500 cycles."""
    sb, check = simulate_endpoint(
        RN1Endpoint(N, retry, 0x1D, 4, "unit-tree", node),
        RN1EndpointModel(N, retry, 0x1D, 4, "unit-tree", node),
        1500,
        node,
    )
    assert sb.mismatches == 0, sb.first_mismatch
    assert check.stats["sent"] > 50 and check.stats["retries"] > 10
    assert check.stats["received"] > 50 and check.stats["dropped"] > 0


def test_a_model_with_the_bidelta_rule_is_caught():
    """The cycle check sees the head: a model of the wrong rule mismatches at once."""
    sb, _ = simulate_endpoint(
        RN1Endpoint(N, "immediate", 3, 2, "unit-tree", 9),
        RN1EndpointModel(N, "immediate", 3, 2, "bidelta", 9),
        300,
        1,
    )
    assert sb.mismatches > 0 and "o_fwd" in sb.first_mismatch


# RTL endpoints on the network's model: the route rule through the unit tree's wiring.


class _Endpoints(Elaboratable):
    """A few RTL endpoints side by side (nodes ``nodes``), for a network played in Python."""

    def __init__(self, nodes, retry, seed, max_bytes):
        from fattree.spec.rn1_endpoint import endpoint_seed

        self.nodes = nodes
        self.eps = [
            RN1Endpoint(N, retry, endpoint_seed(seed, e), max_bytes, "unit-tree", e) for e in nodes
        ]

    def elaborate(self, platform):
        m = Module()
        for e, ep in zip(self.nodes, self.eps, strict=True):
            m.submodules[f"ep_{e}"] = ep
        return m


@pytest.mark.parametrize("retry", RETRIES)
def test_rtl_endpoints_on_the_network_model(retry):
    """Five RTL endpoints (nodes 0, 1, 6, 27, 63: every level of the unit tree apart) on the
    cycle-exact model of the 52-router unit tree, against the whole design's model driven
    alike (the other 59 nodes idle): every output of those five every cycle, and every
    message delivered once, to its destination, with its bytes: the RTL's heads route."""
    nodes, mb, seed = [0, 1, 6, 27, 63], 3, 2
    dut = _Endpoints(nodes, retry, seed, mb)
    model = RN1FatTreeStreamModel(seed, retry, mb)  # the reference
    net = RN1FatTreeStreamModel(seed, retry, mb).net  # the network the RTL talks to
    rng = random.Random(5)
    queues = {e: [] for e in nodes}
    for e in nodes:
        for _ in range(6):
            queues[e].append((rng.choice(nodes), [rng.getrandbits(8) for _ in range(mb)]))
        queues[e].append((0, [e, e]))  # a hot spot on node 0
    want = sorted((d, tuple(b)) for q in queues.values() for d, b in q)
    sb = Scoreboard(CHECKS)
    got = []

    async def bench(ctx):
        frames = {e: [] for e in nodes}
        beat = dict.fromkeys(nodes, 0)
        go = 0  # the rounds' register, as the design has it (the idle nodes are never busy)
        for cycle in range(4000):
            # The RTL's outputs now, and the network model's.
            o_fwd = [0] * net.channels
            i_bk = [0] * net.channels
            n_fwd, n_bk = net.o_fwd, net.i_bk
            for e, ep in zip(nodes, dut.eps, strict=True):
                for k in range(ENDPOINT_LINKS):
                    o_fwd[2 * e + k] = ctx.get(Value.cast(ep.o[k].fwd))
                    i_bk[2 * e + k] = ctx.get(Value.cast(ep.i[k].bk))
                    ctx.set(Value.cast(ep.i[k].fwd), n_fwd[2 * e + k])
                    ctx.set(Value.cast(ep.o[k].bk), n_bk[2 * e + k])
            want_out = model_outputs(model.endpoints)
            tx = [(0, 0, 0, 0)] * N
            seen = {}
            for e, ep in zip(nodes, dut.eps, strict=True):
                seen[e] = {
                    "tx_ready": ctx.get(ep.tx.ready),
                    "rx_valid": ctx.get(ep.rx.valid),
                    "sent": ctx.get(ep.sent),
                    "retries": ctx.get(ep.retries),
                    "received": ctx.get(ep.received),
                    "dropped": ctx.get(ep.dropped),
                    "timeouts": ctx.get(ep.timeouts),
                }
                seen[e]["rx_beat"] = ctx.get(ep.rx.payload.as_value()) if seen[e]["rx_valid"] else 0
                sb.compare(
                    "cycle_mismatches",
                    f"cycle {cycle} node {e}",
                    [seen[e][key] for key in STREAM_OUTPUTS],
                    [want_out[key][e] for key in STREAM_OUTPUTS],
                    list(STREAM_OUTPUTS),
                )
                if queues[e]:
                    dest, data = queues[e][0]
                    tx[e] = (1, data[beat[e]], dest, int(beat[e] == len(data) - 1))
                ctx.set(ep.tx.valid, tx[e][0])
                ctx.set(ep.tx.payload.data, tx[e][1])
                ctx.set(ep.tx.payload.dest, tx[e][2])
                ctx.set(ep.tx.payload.last, tx[e][3])
                ctx.set(ep.rx.ready, 1)
                ctx.set(ep.go, go)
            go = int(not any(ctx.get(ep.busy) for ep in dut.eps))
            model.step(tx, [1] * N)
            net.step(o_fwd, i_bk)
            await ctx.tick()
            for e in nodes:
                if tx[e][0] and seen[e]["tx_ready"]:
                    beat[e] += 1
                    if beat[e] == len(queues[e][0][1]):
                        queues[e].pop(0)
                        beat[e] = 0
                if seen[e]["rx_valid"]:
                    frames[e].append(seen[e]["rx_beat"] & 0xFF)
                    if seen[e]["rx_beat"] >> 8:
                        got.append((e, tuple(frames[e])))
                        frames[e] = []
            if len(got) == len(want):
                break

    simulate(dut, bench)
    assert sb.mismatches == 0, sb.first_mismatch
    assert sorted(got) == want
    assert sum(ep.retries for ep in model.endpoints) > 0


# The whole design's model.


@pytest.mark.parametrize("retry", RETRIES)
def test_model_delivers_random_traffic_and_self_messages(retry):
    """64 nodes, 3 random messages each (themselves included), then one to itself each:
    every message delivered once, to its destination, with its bytes."""
    model = RN1FatTreeStreamModel(3, retry, 4)
    rng = random.Random(2)
    to_self = [[(e, [rng.getrandbits(8) for _ in range(3)])] for e in range(N)]
    check = run_stream_model(model, [("random", 3), ("self", to_self)], max_bytes=4)
    assert check.stats["messages"] == N * 4
    assert [ep.sent for ep in model.endpoints] == [4] * N
    assert sum(ep.received for ep in model.endpoints) == N * 4


def test_no_status_wait_reaches_the_timeout():
    """The fat-tree's endpoints keep the default status timeout: in the model under random
    and self traffic no attempt waits longer than ``status_cycles(4)`` (up router and three
    down layers) for its status, so no timeout fires in a working network."""
    model = RN1FatTreeStreamModel(3, "immediate", 2)
    longest = 0
    for ep in model.endpoints:
        step = ep.step

        def counted(*args, ep=ep, step=step):
            nonlocal longest
            waiting, age = ep.state == 3, ep.age  # WAIT
            step(*args)
            if waiting and ep.state != 3:
                longest = max(longest, age + 1)

        ep.step = counted
    run_stream_model(model, [("random", 3), ("hotspot", 1)], max_bytes=2)
    assert status_cycles(3) < longest <= status_cycles(path_routers("unit-tree", N)) < TIMEOUT
    assert sum(ep.timeouts for ep in model.endpoints) == 0


def test_model_hot_spot_backoff_cuts_the_retries():
    """All 64 nodes send 2 messages to node 0: immediate retry collides again and again,
    back-off spreads the senders."""
    retries = {}
    for retry in ("immediate", "backoff"):
        model = RN1FatTreeStreamModel(1, retry, 2)
        check = run_stream_model(model, [("hotspot", 2)], max_bytes=2)
        assert check.stats["messages"] == 2 * N
        retries[retry] = check.stats["retries"]
    assert retries["backoff"] * 3 < retries["immediate"]


def test_top_links_stay_idle():
    """The root's 32 top links each way are channels of the network beyond the nodes' 128;
    the design ties them off, and no route between nodes uses them."""
    assert len(fat_tree_network(1).inputs) == 2 * N + 32
    model = RN1FatTreeStreamModel(1, "immediate", 4)
    tops = []
    original = model.net.step

    def step(i_fwd, o_bk):
        tops.append(any(model.net.o_fwd[2 * N :]) or any(i_fwd[2 * N :]))
        original(i_fwd, o_bk)

    model.net.step = step
    run_stream_model(model, [("random", 3)], max_bytes=4)
    assert len(tops) > 50 and not any(tops)


# The whole design's RTL (52 routers and 64 endpoints: slow in amaranth.sim and simulators).


@pytest.mark.slow
def test_rtl_matches_model():
    sb, check = simulate_stream(
        RN1FatTreeStream(1, "backoff", 2),
        RN1FatTreeStreamModel(1, "backoff", 2),
        [("random", 1), ("hotspot", 1)],
        seed=9,
        max_bytes=2,
    )
    assert sb.mismatches == 0, sb.first_mismatch
    # Over-long frames (5 %) are dropped and counted, not delivered.
    assert check.stats["messages"] + check.stats["dropped"] == 2 * N


@pytest.mark.slow
@pytest.mark.cocotb
@pytest.mark.parametrize(
    "simulator",
    [
        "verilator",
        pytest.param(
            "icarus",
            marks=pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog"),
        ),
    ],
)
def test_cocotb_bench(simulator, tmp_path):
    from fattree.sim.cocotb_runner import run_bench

    result = run_bench(
        get_design("rn1-fat-tree"),
        {"seed": 1, "retry": "backoff", "max_bytes": 4},
        simulator,
        seed=5,
        bench={"frames": 64},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0 and s["retries"] > 0
    # Then the phases that steer into the model's coverage holes, if any were left.
    steered = s["messages"].get("hotspot-stalled", 0) + s["messages"].get("steered", 0)
    assert s["messages_checked"] + s["dropped_frames"] == 2 * N + steered


def test_soak_model_side():
    """The fat-tree's soak (sim/soak/rn1_stream.py, not registered in ``fattree soak``: its
    Verilator build is too slow for the default tests) writes one stimulus and one expected
    row per cycle, its own check passing, every message counted once by its sender."""
    import numpy as np

    from fattree.sim.soak.rn1_stream import RN1FatTreeStreamSoak

    params = {"seed": 1, "retry": "backoff", "max_bytes": 2}
    soak = RN1FatTreeStreamSoak(params, messages=150, seed=4)
    layout = soak.layout()
    chunks = list(soak.chunks(chunk=1000))
    stimulus = np.concatenate([c[0] for c in chunks])
    expected = np.concatenate([c[1] for c in chunks])
    assert stimulus.shape == (soak.cycles, len(layout.inputs)) and len(layout.inputs) == 3 * N
    assert expected.shape == (soak.cycles, len(layout.outputs))
    assert soak.failures == [] and soak.checked >= 150
    sent = [k for k, p in enumerate(layout.outputs) if p.name.startswith("sent__")]
    assert int(expected[-1, sent].sum()) == soak.checked


def test_bench_traffic_leaves_no_coverage_hole():
    """The stream bench's phases (``--frames 96``: random and hot spot, two messages per
    endpoint each, then the bursts) hit every bin of the model's cover points
    (docs/dehon.md, "Coverage of the network with endpoints"); on the model, since the
    design's RTL is a slow test. The routers' bins are those their groups can meet: a down3
    group sees at most three transmissions (from the quarters other than its direction's)."""
    from fattree.sim.benches.rn1_stream import BURST_MESSAGES
    from fattree.sim.checks.rn1_endpoint import Traffic, messages, run_stream_model

    model = RN1FatTreeStreamModel(1, "immediate", 8)
    coverage = model.start_coverage()
    points = {p.name: p.bins for p in model.cover_points()}
    assert "2 heads, none free" not in points["arbitrate/down3"]
    assert "3+ heads, none free" in points["arbitrate/down2"]
    rng = random.Random(1)
    seed, traffic = rng.getrandbits(32), Traffic(backpressure=20)
    phases = [(n, messages(n, N, 2, 8, rng, traffic.overlong)) for n in ("random", "hotspot")]
    check = run_stream_model(model, phases, seed, max_bytes=8, traffic=traffic)

    def run(name, queues, **kw):
        with pytest.raises(StopIteration):
            check.phase(name, queues, **kw).send(None)

    check.traffic = Traffic(idle=0, backpressure=20, overlong=0.0)
    for burst in range(max(2, BURST_MESSAGES // N)):
        run("burst", [[(burst, [rng.getrandbits(8)])] for _ in range(N)], settle=8)
    assert check.scoreboard.mismatches == 0
    assert coverage.holes() == [], coverage.holes()
    answers = coverage.as_dict()["points"]["answer"]["bins"]
    assert answers["BLOCKED by down3"] > 0 and answers["BLOCKED by the receiver"] > 0


@pytest.mark.slow  # the default point, 52 routers and 64 endpoints, on Verilator
@pytest.mark.cocotb
def test_cocotb_coverage_closes_at_the_default_point(tmp_path, capsys):
    import json

    from fattree.scripts.main import main

    argv = ["sim", "rn1-fat-tree", "--coverage", "--json", "--build-root", str(tmp_path)]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["coverage"]["holes"] == []
    assert code == 0 and out["passed"]
