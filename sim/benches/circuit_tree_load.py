"""cocotb measurement of :class:`fattree.hdl.circuit_tree.CircuitFatTree` under open-loop load.

Run by ``fattree experiment load-latency`` through ``run_bench(..., bench_module=...)``. The
bench setting ``points`` is a list of :class:`fattree.sim.circuit_load.Point` fields; each
point runs from a reset of the whole network, driven by
:class:`fattree.sim.circuit_load.OpenLoop` (the same driver the model run uses, so the same
draws and inputs), and the summary holds each point's
figures (``points``: a list of ``{"point": ..., "figures": ...}``) and the cycles per second.

This bench measures the RTL only (no model in the loop): that the figures equal the model's
is what the experiment shows and ``tests/test_load_latency.py`` asserts.

Inputs are driven and outputs sampled on the falling clock edge, as in
:mod:`fattree.sim.benches.circuit_tree`.
"""

from __future__ import annotations

import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.benches.circuit_tree import Ports
from fattree.sim.circuit_load import OpenLoop, Point
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, reset, write_summary


@cocotb.test()
async def load_points(dut):
    config = bench_config()
    p = config["params"]
    leaves, width, length = p["leaves"], p["width"], p["length"]
    ports = Ports(dut, leaves, width, length)
    ports.drive([0] * leaves, [0] * leaves, [0] * leaves, [1] * leaves)
    await clock_and_reset(dut)
    results = []
    cycles = 0
    started = time.perf_counter()
    for k, fields in enumerate(config["bench"]["points"]):
        point = Point(**fields)
        if k:
            ports.drive([0] * leaves, [0] * leaves, [0] * leaves, [1] * leaves)
            await reset(dut)
        run = OpenLoop(leaves, width, length, point)
        clk = dut.clk
        while not run.finished:
            seen = ports.sample()
            valid, dest, data, ready = run.inputs()
            ports.drive(valid, dest, data, ready)
            run.observe(seen[0], seen[3], seen[4])
            await FallingEdge(clk)
        cycles += run.cycle
        results.append({"point": point.as_dict(), "figures": run.figures()})
    seconds = time.perf_counter() - started
    write_summary(
        config,
        {
            "cycles": cycles,
            "checked": sum(r["figures"]["delivered"] for r in results),
            "unit": "messages delivered in the windows",
            "mismatches": 0,
            "first_mismatch": None,
            "points": results,
            "seconds": round(seconds, 3),
            "cycles_per_second": round(cycles / seconds, 1) if seconds else None,
        },
    )
