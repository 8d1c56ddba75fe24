"""CircuitFastTree RTL (amaranth.sim) against CircuitFastTreeModel, in lock step.

The shared check of the circuit trees (:class:`CircuitTreeCheck`) compares every output of
every node in every cycle with the model and checks that every message is delivered exactly
once; here at small trees, every window, short and long messages (longer than the fate delay,
so a slot's fate arrives while its words still leave) and stalled receivers.
"""

import json
import random
import shutil

import pytest

from fattree.hdl.circuit_fast.tree import CircuitFastTree
from fattree.sim.checks.circuit_tree import (
    CHECKS,
    INPUTS,
    OUTPUTS,
    CircuitTreeCheck,
    dut_signals,
)
from fattree.sim.models.circuit import traffic
from fattree.sim.models.circuit_fast import CircuitFastTreeModel
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate


def lockstep(leaves, width, length, window, seed, queues, *, stall=0.0, mutate=False):
    dut = CircuitFastTree(leaves, width, length, seed, window)
    model = CircuitFastTreeModel(leaves, width, length, seed, window)
    scoreboard = Scoreboard(CHECKS, mutate=mutate)
    signals = dut_signals(dut, leaves)

    async def bench(ctx):
        def read():
            return [[ctx.get(s) for s in signals[name]] for name in OUTPUTS]

        def drive(*values):
            for name, value in zip(INPUTS, values, strict=True):
                for n in range(leaves):
                    ctx.set(signals[name][n], value[n])

        check = CircuitTreeCheck(
            model, scoreboard, read, drive, ctx.tick, stall=stall, rng=random.Random(seed)
        )
        await check.phase("traffic", queues, 20_000)

    simulate(dut, bench)
    return scoreboard, model


def _queues(pattern, leaves, width, length, seed, messages=6):
    rng = random.Random(seed)
    return traffic(pattern, leaves, width, length, rng, messages=messages)


@pytest.mark.parametrize(
    "leaves, width, length, window, stall",
    [
        (4, 8, 2, 8, 0.0),
        (4, 8, 2, 2, 0.3),
        (4, 4, 1, 1, 0.5),
        (8, 8, 2, 8, 0.3),
        (8, 2, 3, 4, 0.0),
        (4, 8, 9, 2, 0.3),  # longer than F = 7: fates arrive while words still leave
        (2, 1, 1, 16, 0.9),
    ],
)
@pytest.mark.parametrize("pattern", ["random", "hotspot"])
def test_tree_matches_model(leaves, width, length, window, stall, pattern):
    queues = _queues(pattern, leaves, width, length, seed=leaves + length + window)
    scoreboard, model = lockstep(leaves, width, length, window, 3, queues, stall=stall)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert scoreboard.checked == sum(len(q) for q in queues)
    if pattern == "hotspot":
        assert sum(model.unacknowledged) > 0  # the hot spot makes heads meet


@pytest.mark.parametrize("pattern", ["transpose", "bit-reversal"])
def test_tree_permutations(pattern):
    queues = _queues(pattern, 8, 8, 2, seed=5)
    scoreboard, _ = lockstep(8, 8, 2, 8, 1, queues, stall=0.2)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch


def test_broken_model_is_caught():
    queues = _queues("random", 4, 8, 2, seed=1)
    scoreboard, _ = lockstep(4, 8, 2, 4, 1, queues, mutate=True)
    assert scoreboard.mismatches > 0


@pytest.mark.slow
@pytest.mark.parametrize("window", [1, 8])
def test_tree_matches_model_16(window):
    queues = _queues("random", 16, 8, 2, seed=window, messages=8)
    scoreboard, _ = lockstep(16, 8, 2, window, 2, queues, stall=0.3)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch


def _cocotb(simulator, tmp_path, leaves, frames, *, mutation=False, **knobs):
    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    params = {"leaves": leaves, "width": 8, "length": 2, "seed": 3, "window": 4}
    bench = {"frames": frames, "mutation": mutation, **knobs}
    return run_bench(
        get_design("circuit-tree"), params, simulator, seed=1, bench=bench, root=tmp_path
    )


def _simulator() -> str:
    return "icarus" if shutil.which("iverilog") else "verilator"


@pytest.mark.cocotb
def test_cocotb_traffic(tmp_path):
    # Every phase of the circuit trees' bench, receivers stalled 30 % of the cycles; every
    # bin of the model's cover points hit (docs/circuit_tree_fast.md, "Coverage").
    result = _cocotb(_simulator(), tmp_path, 4, frames=32, coverage=True)
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0
    assert s["messages_checked"] == sum(s["messages"].values()) > 32
    assert s["backpressure_cycles"] > 0 and s["unacknowledged"] > 0
    assert s["coverage"]["holes"] == [], s["coverage"]
    # Lemma 1's collision: both parents claiming one down port in one cycle, either first.
    assert min(s["coverage"]["points"]["claims/L0"]["bins"].values()) > 0


@pytest.mark.cocotb
@pytest.mark.slow  # the default point, 16 nodes, on Verilator: about 80 s
def test_cocotb_coverage_closes_at_the_default_point(tmp_path, capsys):
    from fattree.scripts.main import main

    code = main(["sim", "circuit-tree", "--coverage", "--json", "--build-root", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["coverage"]["holes"] == []
    assert code == 0 and out["passed"]


@pytest.mark.cocotb
def test_cocotb_broken_model_is_caught(tmp_path):
    result = _cocotb(_simulator(), tmp_path, 4, frames=8, mutation=True)
    assert not result.passed
