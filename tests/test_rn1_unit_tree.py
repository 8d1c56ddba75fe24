"""One 2-wide unit tree of RN1 routers (amaranth.sim) against RN1UnitTreeModel, driven by the
RN1 endpoints with the unit-tree layout (every subtree pair, the top both ways)."""

import random

import pytest

from fattree.hdl.rn1.unit_tree import RN1UnitTree
from fattree.sim.checks.rn1 import (
    CHECKS,
    RN1Check,
    simulate_network,
    transmissions,
    unit_tree_layout,
)
from fattree.sim.models.rn1 import RN1UnitTreeModel
from fattree.sim.scoreboard import Scoreboard


def check_unit_tree(seed, pattern, count, mutate=False):
    model = RN1UnitTreeModel(2, seed)
    layout = unit_tree_layout(model.tree)
    dut = RN1UnitTree(2, seed)
    return simulate_network(dut, model, layout, pattern, count, seed, mutate=mutate)


@pytest.mark.parametrize("width", [2, 8])
def test_model_delivers_every_transmission_to_its_destination(width):
    # The model alone (its outputs read back), so only the transmission check can fail:
    # the wiring, the routes and the layout agree, every subtree pair and the top both ways.
    model = RN1UnitTreeModel(width, 5)
    layout = unit_tree_layout(model.tree)
    scoreboard = Scoreboard(CHECKS)
    rng = random.Random(width)

    async def tick():
        pass

    async def run():
        check = RN1Check(
            model,
            scoreboard,
            lambda: (model.o_fwd, model.i_bk),
            lambda *_: None,
            tick,
            rng=rng,
            layout=layout,
        )
        await check.phase("random", transmissions("random", 1, rng, layout))
        return check

    coro = run()
    try:
        coro.send(None)
    except StopIteration as done:
        check = done.value
    scoreboard.raise_on_mismatch()
    assert scoreboard.checked == 80 * width
    assert check.stats["blocked"] > 0 and check.stats["turn_segments"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("seed, pattern, count", [(2, "random", 1), (4, "hotspot", 2)])
def test_unit_tree_matches_model(seed, pattern, count):
    scoreboard, check = check_unit_tree(seed, pattern, count)
    scoreboard.raise_on_mismatch()
    assert scoreboard.checked == 160 * count
    assert check.stats["blocked"] > 0


def test_parameter_errors():
    with pytest.raises(ValueError, match=r"^width must be 2 or 8, not 4$"):
        RN1UnitTree(4)


def test_latency_experiment():
    import argparse

    from fattree.sim.experiments import registry
    from fattree.sim.experiments.rn1_latency import fat_tree_routers

    # Stage skipping: one up router per unit-tree stage, not per level.
    assert [fat_tree_routers(level) for level in range(1, 10)] == [2, 3, 4, 6, 7, 8, 10, 11, 12]
    result = registry()["dehon-latency"].run(argparse.Namespace(stages=[1, 2]))
    rows = {(r[0], r[1], r[3]): r for r in result.rows}
    # Measured on the models: one cycle per router.
    assert [rows["fat-tree", 1, level][5:] for level in (1, 2, 3)] == [
        [2, 2, 2],
        [3, 4, 3],
        [4, 6, 4],
    ]
    assert rows["bidelta", "-", "all"][2] == 256  # the last bidelta row
    assert [r[7] for r in result.rows if r[0] == "bidelta"] == [2, 3, None]
    assert sum(r[4] for r in result.rows if r[:2] == ["fat-tree", 2]) == 4096 - 1


def _bench(width, simulator, frames, root):
    import shutil

    from fattree.designs import get_design
    from fattree.sim.cocotb_runner import run_bench

    if simulator == "icarus" and shutil.which("iverilog") is None:
        pytest.skip("no iverilog")
    result = run_bench(
        get_design("rn1-unit-tree"),
        {"width": width, "seed": 2},
        simulator,
        bench={"frames": frames},
        root=root,
    )
    s = result.summary
    assert result.passed, s.get("first_mismatch") or result.log
    assert s["mismatches"] == 0 and s["checked"] == 2 * max(frames, 80 * width)


@pytest.mark.slow
@pytest.mark.cocotb
def test_verilog_is_the_hierarchical_export_and_matches_the_model(tmp_path):
    # `fattree verilog rn1-unit-tree` writes the routers as instances of the shared modules
    # (hdl/rn1/modules.py); the bench's endpoints on all 160 channels, every word checked.
    _bench(2, "icarus", 160, tmp_path)


@pytest.mark.slow
@pytest.mark.cocotb
def test_eight_wide_unit_tree_rtl_matches_the_model(tmp_path):
    # The 8-wide unit tree (208 RN1, 640 channels), on Verilator.
    _bench(8, "verilator", 640, tmp_path)


@pytest.mark.slow  # the default point, 160 channels, on Verilator: build and run
@pytest.mark.cocotb
def test_coverage_closes_at_the_default_point(tmp_path, capsys):
    import json

    from fattree.scripts.main import main

    argv = ["sim", "rn1-unit-tree", "--coverage", "--json", "--build-root", str(tmp_path)]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["coverage"]["holes"] == []
    assert code == 0 and out["passed"]
