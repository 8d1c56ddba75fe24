"""cocotb bench of the selector on the generated Verilog, Verilator (default) and Icarus."""

import shutil

import pytest

from fattree.designs import get_design
from fattree.sim.cocotb_runner import run_bench

pytestmark = pytest.mark.cocotb

SIMULATORS = [
    "verilator",
    pytest.param(
        "icarus",
        marks=pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog"),
    ),
]


@pytest.mark.parametrize("simulator", SIMULATORS)
@pytest.mark.parametrize("width", [1, 8, 33])
def test_random_messages(simulator, width, tmp_path):
    result = run_bench(
        get_design("selector"),
        {"width": width},
        simulator,
        seed=width,
        bench={"frames": 150},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0
    assert s["checked"] == 150 * width
    assert s["cycles"] > 150 * 2


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_broken_reference_is_caught(simulator, tmp_path):
    # The scoreboard is real: a deliberately wrong model makes the bench fail.
    result = run_bench(
        get_design("selector"),
        {"width": 4},
        simulator,
        seed=3,
        bench={"frames": 40, "mutation": True},
        root=tmp_path,
    )
    assert not result.passed
    assert result.failed == 1
    assert result.summary["cycle_mismatches"] > 0
