"""The hypercube router and network (amaranth.sim) against the cycle-exact model; the model
on its own at larger sizes; parameter checks; the cocotb bench."""

import random
import re
import shutil
from collections import Counter

import pytest

from fattree.hdl.hypercube import HypercubeNetwork, HypercubeNode
from fattree.sim.checks.hypercube import (
    CHECKS,
    INPUTS,
    OUTPUTS,
    HypercubeCheck,
    bench_phases,
    hole_rounds,
)
from fattree.sim.models.hypercube import HypercubeModel, run_model, traffic
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate
from fattree.spec.hypercube import (
    check_hypercube,
    link_fields,
    neighbour,
    relative_address,
    split_dest,
    tx_fields,
)


def ports(dut):
    g, nodes = dut.processors, dut.nodes
    return {
        "tx_valid": [dut.tx[i].valid for i in range(g)],
        "tx_ready": [dut.tx[i].ready for i in range(g)],
        "tx_dest": [dut.tx[i].payload.dest for i in range(g)],
        "tx_data": [dut.tx[i].payload.data for i in range(g)],
        "rx_valid": [dut.rx[i].valid for i in range(g)],
        "rx_ready": [dut.rx[i].ready for i in range(g)],
        "rx_data": [dut.rx[i].payload.data for i in range(g)],
        "refer": [dut.refer[n] for n in range(nodes)],
    }


def lockstep(
    dim, procs, buffers, phases, *, stall=0.0, mutate=False, limit=3000, seed=1, cover=False
):
    """Run ``phases`` (name, queues, and optionally the phase's options) through the RTL and
    the model side by side (``cover``: the model counting its cover points); returns the
    scoreboard, the check and the model."""
    dut = HypercubeNetwork(dim, procs, buffers, 8)
    model = HypercubeModel(dim, procs, buffers, 8)
    if cover:
        model.start_coverage()
    scoreboard = Scoreboard(CHECKS, mutate=mutate)
    signals = ports(dut)
    checks = []

    async def bench(ctx):
        def read():
            return [[ctx.get(s) for s in signals[name]] for name in OUTPUTS]

        def drive(*values):
            for name, value in zip(INPUTS, values, strict=True):
                for s, v in zip(signals[name], value, strict=True):
                    ctx.set(s, v)

        check = HypercubeCheck(
            model, scoreboard, read, drive, ctx.tick, stall=stall, rng=random.Random(seed)
        )
        checks.append(check)
        for name, queues, *options in phases:
            await check.phase(name, queues, limit, **(options[0] if options else {}))

    simulate(dut, bench)
    return scoreboard, checks[0], model


def assert_clean(scoreboard, phases):
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert scoreboard.checked == sum(len(q) for _, queues, *_ in phases for q in queues)


@pytest.mark.parametrize(
    ("dim", "procs", "buffers", "stall"),
    [(2, 1, 1, 0.0), (3, 2, 2, 0.3), (2, 4, 0, 0.5)],
)
def test_bench_phases_match_the_model(dim, procs, buffers, stall):
    # Random traffic, a permutation, transpose, bit reversal and a hot spot, one after the
    # other: every output every cycle as the model says, every message delivered once.
    rng = random.Random(dim * 100 + procs)
    phases = bench_phases(dim, procs, 8, rng, frames=3 * (1 << dim) * procs)
    scoreboard, check, model = lockstep(dim, procs, buffers, phases, stall=stall)
    assert_clean(scoreboard, phases)
    assert check.longest > dim  # reported, and at least the cube's diameter
    assert check.referrals == model.referrals
    if stall:
        assert check.backpressure_cycles > 0


def test_buffer_exhaustion_forces_referrals():
    # A hot spot with one buffer slot per node: the buffers fill and messages are referred
    # (the RTL's own refer outputs count them), yet every message arrives exactly once.
    rng = random.Random(7)
    phases = [("hotspot", traffic("hotspot", 3, 2, 8, rng, messages=3))]
    scoreboard, check, model = lockstep(3, 2, 1, phases, stall=0.3)
    assert_clean(scoreboard, phases)
    assert check.referrals > 10
    assert check.referrals == model.referrals
    assert check.phases["hotspot"]["longest"] >= 45  # 45 messages through one receiver


def test_no_buffers_refers_every_blocked_message():
    # buffers=0: a message that finds no wire of its relative address free is referred at once.
    rng = random.Random(3)
    phases = [("random", traffic("random", 3, 2, 8, rng, messages=4))]
    scoreboard, check, _ = lockstep(3, 2, 0, phases)
    assert_clean(scoreboard, phases)
    assert check.referrals > 0


def test_hole_rounds_on_the_rtl():
    # The same rounds through the RTL in lock step: the `ready` option drives the design's
    # receivers as the copy of the model saw them, and every message arrives once.
    rng = random.Random(1)
    phases = bench_phases(2, 2, 8, rng, frames=12)
    trial = HypercubeModel(2, 2, 1)
    trial.start_coverage()
    for _name, queues in phases:
        run_model(trial, queues)
    steered = []
    for name, queues, options in hole_rounds(trial, random.Random(2), tries=3000):
        start = trial.cycle
        run_model(trial, queues, rx_ready=lambda c, s=start, r=options["ready"]: r(c - s))
        steered.append((name, queues, options))
    assert trial.coverage.holes() == []
    scoreboard, check, model = lockstep(2, 2, 1, [*phases, *steered], cover=True)
    assert_clean(scoreboard, [*phases, *steered])
    assert model.coverage.holes() == [] and check.referrals == model.referrals
    assert all(check.phases[name]["messages"] for name, _, _ in steered)


def test_broken_model_is_caught():
    rng = random.Random(5)
    phases = [("random", traffic("random", 2, 1, 8, rng, messages=2))]
    scoreboard, _, _ = lockstep(2, 1, 1, phases, mutate=True)
    assert scoreboard.mismatches == 1


def _first_rx_valid(model, src, dest, cycles=12):
    """Send one message from processor ``src`` to ``dest`` at cycle 0; the cycles in which
    ``dest``'s rx is valid (never read)."""
    n = model.processors
    seen = []
    for t in range(cycles):
        valid = [int(t == 0 and g == src) for g in range(n)]
        out = model.step(valid, [dest] * n, [0x5A] * n, [0] * n)
        seen.append(out.rx_valid[dest])
    return seen.index(1), all(seen[seen.index(1) :])


def test_node_timing_one_hop():
    # Timing diagram of docs/hypercube.md: tx beat at t, decided at t+1, over wire i at t+2
    # (arrival register at t+3), decided (deliver) at t+3, written at the end of t+4, rx
    # valid from t+5 and held until read.
    model = HypercubeModel(2, 1, 1)
    assert _first_rx_valid(model, 0, 2) == (5, True)
    assert model.hops == 1


def test_node_timing_two_cycles_a_hop():
    # Each further hop adds two cycles (decide, send); a message to its own node skips the
    # wires: decided at t+1, written at the end of t+2.
    assert _first_rx_valid(HypercubeModel(2, 1, 1), 0, 0) == (3, True)
    assert _first_rx_valid(HypercubeModel(2, 1, 1), 0, 3) == (7, True)
    assert _first_rx_valid(HypercubeModel(3, 1, 1), 0, 7) == (9, True)


# -- the model alone ---------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["random", "permutation", "transpose", "bit-reversal"])
@pytest.mark.parametrize(("dim", "procs", "buffers"), [(6, 4, 2), (8, 2, 0), (9, 1, 4)])
def test_model_delivers_every_message_once(pattern, dim, procs, buffers):
    rng = random.Random(dim)
    queues = traffic(pattern, dim, procs, 8, rng, messages=2)
    model = HypercubeModel(dim, procs, buffers)
    result = run_model(model, queues, limit=20_000)
    want = Counter((d, x) for q in queues for d, x in q)
    got = Counter((d.dest, d.data) for d in result.deliveries)
    assert got == want
    assert result.hops >= sum(
        bin(relative_address(g // procs, d // procs)).count("1")
        for g, q in enumerate(queues)
        for d, _ in q
    )
    assert result.longest < result.cycles


def test_model_hot_spot_one_message_per_cycle():
    # Everything to processor 0: its receiver takes one message per cycle, so the phase takes
    # about as many cycles as there are messages; referrals are many, drops none.
    model = HypercubeModel(5, 2, 2)
    result = run_model(model, traffic("hotspot", 5, 2, 8, random.Random(1), messages=1))
    assert result.messages == 63
    assert 63 <= result.cycles <= 63 + 10
    assert result.referrals > 0


def test_model_slow_receiver_loses_nothing():
    model = HypercubeModel(3, 2, 1)
    queues = traffic("random", 3, 2, 8, random.Random(2), messages=3)
    stalls = random.Random(4)
    result = run_model(model, queues, rx_ready=lambda _: [int(stalls.random() < 0.3)] * 16)
    assert len(result.deliveries) == 48


# -- definitions and parameters ----------------------------------------------------------------


def test_definitions():
    assert neighbour(5, 1) == 7
    assert relative_address(5, 3) == 6
    assert split_dest(13, 4) == (3, 1)
    assert tx_fields(4, 2, 8) == {"dest": 5, "data": 8}
    assert link_fields(4, 1, 8) == {"valid": 1, "rel": 4, "proc": 0, "data": 8}


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0, 1, 1, 8), ValueError, "dim must be between 1 and 16, not 0"),
        ((3, 3, 1, 8), ValueError, "procs must be a power of two of at least 1, not 3"),
        ((3, 32, 1, 8), ValueError, "procs must be at most 16, not 32"),
        ((3, 1, -1, 8), ValueError, "buffers must be between 0 and 16, not -1"),
        ((3, 1, 1, 0), ValueError, "data_bits must be between 1 and 64, not 0"),
        ((3.0, 1, 1, 8), TypeError, "dim must be an integer, not 3.0"),
    ],
)
def test_bad_parameters(args, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        check_hypercube(*args)


def test_rtl_size_limit():
    for component in (HypercubeNetwork, HypercubeNode):
        with pytest.raises(ValueError, match="^dim must be between 1 and 6, not 7$"):
            component(7)


#: Lines of the Verilog of a 3-cube (`fattree verilog hypercube -p dim=3`, without its header)
#: with its nodes in one module: 4,083 measured (with one module per node: 19,242).
DIM3_LINES = 5_000


def test_verilog_has_one_node_module():
    # Every node is the same circuit (its number is a port), so the Verilog holds one node
    # module that all 2^dim instances place.
    from fattree.designs import elaborate_verilog, get_design

    text = elaborate_verilog(
        get_design("hypercube"), {"dim": 3, "procs": 2, "buffers": 2, "data_bits": 8}
    )
    modules = re.findall(r"^module (\\?[^\s(]+)", text, re.M)
    assert modules == ["hypercube", "\\hypercube.node"]
    instances = re.findall(r"^  \\hypercube.node  node(\d+) \(", text, re.M)
    assert sorted(map(int, instances)) == list(range(8))
    for n in range(8):
        assert f"reg [2:0] addr{n} = 3'h{n};" in text
    assert text.count("\n") < DIM3_LINES


# -- cocotb --------------------------------------------------------------------------------------

ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")


def run_cocotb(simulator, tmp_path, *, dim=3, mutation=False, frames=48, coverage=False):
    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    return run_bench(
        get_design("hypercube"),
        {"dim": dim, "procs": 2, "buffers": 2, "data_bits": 8},
        simulator,
        seed=1,
        bench={"frames": frames, "mutation": mutation, "coverage": coverage},
        root=tmp_path,
    )


@pytest.mark.cocotb
@ICARUS
def test_cocotb_icarus(tmp_path):
    # The bench's phases, then the rounds that close the model's coverage (docs/hypercube.md,
    # "Coverage"): at this small point the phases leave holes, the rounds close every one
    # (256 messages: with fewer, a processor's transmit stream is never refused, a bin the
    # rounds do not aim at; with 1024 the phases alone close every bin).
    result = run_cocotb("icarus", tmp_path, frames=256, coverage=True)
    s = result.summary
    assert result.passed, s
    assert s["mismatches"] == 0
    assert s["referrals"] > 0
    assert s["coverage"]["holes"] == [], s["coverage"]
    assert s["steered"] > 0 and s["messages_checked"] > 256 + s["steered"]


@pytest.mark.cocotb
@pytest.mark.slow  # the default point (dim 4, 2 processors, 2 slots) on Verilator: 30 .. 100 s
def test_cocotb_coverage_closes_at_the_default_point(tmp_path, capsys):
    import json

    from fattree.scripts.main import main

    code = main(["sim", "hypercube", "--coverage", "--json", "--build-root", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    coverage = out["summary"]["coverage"]
    assert coverage["holes"] == [] and coverage["hit"] == coverage["bins"] == 163
    assert code == 0 and out["passed"]


@pytest.mark.cocotb
@ICARUS
def test_cocotb_icarus_mutated_model_fails(tmp_path):
    result = run_cocotb("icarus", tmp_path, mutation=True, frames=16)
    assert not result.passed
    assert result.summary["mismatches"] == 1


@pytest.mark.cocotb
@pytest.mark.parametrize(
    ("dim", "frames"),
    [
        pytest.param(2, 48, marks=pytest.mark.slow),
        pytest.param(3, 48, marks=pytest.mark.slow),
        pytest.param(4, 128, marks=pytest.mark.slow),
    ],
)
def test_cocotb_verilator(tmp_path, dim, frames):
    result = run_cocotb("verilator", tmp_path, dim=dim, frames=frames)
    assert result.passed, result.summary


@pytest.mark.slow
@pytest.mark.parametrize(("dim", "procs"), [(4, 4), (5, 2), (6, 1)])
def test_larger_cubes_match_the_model(dim, procs):
    # The RTL's sizes up to k = 6: random traffic and a hot spot, receivers stalling.
    rng = random.Random(dim)
    phases = [
        ("random", traffic("random", dim, procs, 8, rng, messages=2)),
        ("hotspot", traffic("hotspot", dim, procs, 8, rng, messages=1)),
    ]
    scoreboard, check, model = lockstep(dim, procs, 2, phases, stall=0.2)
    assert_clean(scoreboard, phases)
    assert check.referrals == model.referrals > 0


def test_routing_experiment_small():
    import argparse

    from fattree.sim.experiments import registry

    experiment = registry()["hypercube-routing"]
    parser = argparse.ArgumentParser()
    experiment.add_arguments(parser)
    args = parser.parse_args(["--dims", "3,5", "--procs", "1,2", "--load", "10,100"])
    result = experiment.run(args, lambda _text: None)
    rows = {(r[0], r[1], r[3]): r for r in result.rows}
    assert rows[5, 2, 100][4] == 64 and rows[5, 2, 10][4] == 6  # messages: one-to-one
    assert rows[5, 2, 10][5] < rows[5, 2, 100][5]  # light load is faster
    for k in (3, 5):
        assert rows[k, 2, 100][5] < 2 * rows[k, 1, 100][5]  # the paper's claim
    assert "doubling p" in result.notes[0]
