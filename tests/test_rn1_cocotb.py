"""cocotb bench of the RN1 router on the generated Verilog, Icarus and Verilator.

Icarus builds and runs the bench in about a second; Verilator takes most of a minute to
build the router, so its runs are slow tests."""

import shutil

import pytest

from fattree.designs import get_design
from fattree.sim.cocotb_runner import run_bench

pytestmark = pytest.mark.cocotb

SIMULATORS = [
    pytest.param("verilator", marks=pytest.mark.slow),
    pytest.param(
        "icarus",
        marks=pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog"),
    ),
]


@pytest.mark.parametrize("simulator", SIMULATORS)
@pytest.mark.parametrize("mode", ["primary", "alternate"])
def test_traffic_phases(simulator, mode, tmp_path):
    result = run_bench(
        get_design("rn1"),
        {"mode": mode, "seed": 0x5EED},
        simulator,
        seed=7,
        bench={"frames": 64},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0
    # Random, hot spot, then the stress phases (rounds: four times as many, short ones).
    phases = {"random": 64, "hotspot": 64, "rounds": 4 * 64, "burst": 64}
    assert s["transmissions"] == {**phases, "burst-turns": 64, "noise": 64}
    assert s["checked"] == sum(s["transmissions"].values())
    assert s["heads_blocked"] > 0 and s["turned_segments"] > 0


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_broken_reference_is_caught(simulator, tmp_path):
    result = run_bench(
        get_design("rn1"),
        {"mode": "primary", "seed": 1},
        simulator,
        seed=3,
        bench={"frames": 16, "mutation": True},
        root=tmp_path,
    )
    assert not result.passed
    assert result.failed == 1
    assert result.summary["cycle_mismatches"] == 1
