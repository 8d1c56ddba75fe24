"""cocotb bench of the selector on the generated Verilog, Verilator (default) and Icarus."""

import shutil

import pytest

from fattree.designs import get_design
from fattree.sim.cocotb_runner import run_bench

pytestmark = pytest.mark.cocotb

NO_ICARUS = pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog")


#: Each Verilator build is half a minute: the default run builds one width on it, Icarus the
#: two others.
POINTS = [
    *(pytest.param("icarus", w, marks=NO_ICARUS) for w in (1, 33)),
    pytest.param("icarus", 8, marks=[NO_ICARUS, pytest.mark.slow]),
    ("verilator", 8),
    *(pytest.param("verilator", w, marks=pytest.mark.slow) for w in (1, 33)),
]


@pytest.mark.parametrize(("simulator", "width"), POINTS)
def test_random_messages(simulator, width, tmp_path):
    # Random frames, then the frames that close the model's coverage (docs/selector.md,
    # "Coverage"): every bin hit, a full branch and a cut frame among them.
    result = run_bench(
        get_design("selector"),
        {"width": width},
        simulator,
        seed=width,
        bench={"frames": 150, "coverage": True},
        root=tmp_path,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0
    # One message per wire of each frame, random and steered (a cut frame has none).
    assert 150 * width <= s["checked"] <= (150 + s["steered"]) * width
    assert s["cycles"] > 150 * 2
    assert s["coverage"]["holes"] == [], s["coverage"]
    assert s["steered"] > 0 and s["coverage"]["points"]["length"]["bins"]["cut, messages lost"]


@pytest.mark.slow  # the default point (8 wires, 200 frames) through the command line
def test_coverage_closes_at_the_default_point(tmp_path, capsys):
    import json

    from fattree.scripts.main import main

    code = main(["sim", "selector", "--coverage", "--json", "--build-root", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    coverage = out["summary"]["coverage"]
    assert coverage["holes"] == [] and coverage["hit"] == coverage["bins"] == 35
    assert code == 0 and out["passed"]


@pytest.mark.parametrize(
    "simulator",
    [pytest.param("verilator", marks=pytest.mark.slow), pytest.param("icarus", marks=NO_ICARUS)],
)
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
