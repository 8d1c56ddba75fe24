"""cocotb bench of :class:`fattree.hdl.rn1.unit_tree.RN1UnitTree`: the endpoints of
:mod:`fattree.sim.checks.rn1` on every channel of the unit tree (each subtree's links and the
top's), with the unit-tree layout: heads name a destination subtree or the top. Phases:
random destinations (``frames`` transmissions in all), then a hot spot (every transmission to
subtree 0). Checks: every output word against :class:`RN1UnitTreeModel` cycle by cycle, and
every transmission delivered exactly once to its destination with its bytes intact.
"""

from __future__ import annotations

import cocotb

from fattree.sim.benches.rn1 import run_phases
from fattree.sim.checks.rn1 import unit_tree_layout
from fattree.sim.cocotb_runner import bench_config
from fattree.sim.models.rn1 import RN1UnitTreeModel


@cocotb.test()
async def traffic_phases(dut):
    p = bench_config()["params"]
    model = RN1UnitTreeModel(p["width"], p["seed"])
    await run_phases(dut, model, unit_tree_layout(model.tree))
