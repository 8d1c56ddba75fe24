"""cocotb bench of the fault experiment (:mod:`fattree.sim.experiments.faults`) on a circuit
tree built with a fault list: :class:`fattree.hdl.circuit_tree.CircuitFatTree`
(``circuit-tree-paper``) or :class:`fattree.hdl.circuit_fast.tree.CircuitFastTree`
(``circuit-tree``); the design's name picks the model and the run's bookkeeping.

The experiment's traffic (``messages`` per node, from the ``traffic`` seed) and bookkeeping
(:data:`~fattree.sim.models.circuit_fault_run.RUNS`: a message is timed out ``limit`` cycles
after its interface took it) run on the RTL's outputs, while every output is compared, cycle
by cycle, with the design's model (:data:`fattree.sim.checks.circuit_tree.MODELS`) built with
the same faults. The summary holds the RTL's figures and the scoreboard's
``cycle_mismatches``.
"""

from __future__ import annotations

import random
import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.benches.circuit_tree import Ports
from fattree.sim.checks.circuit_tree import MODELS, OUTPUTS
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.circuit_fault_run import RUNS, fault_queues
from fattree.sim.scoreboard import Scoreboard


@cocotb.test()
async def fault_run(dut):
    config = bench_config()
    p, knobs = config["params"], config["bench"]
    leaves, width, length = p["leaves"], p["width"], p["length"]
    model = MODELS[config["design"]](p)
    ports = Ports(dut, leaves, width, length)
    scoreboard = Scoreboard(
        ("cycle_mismatches",), unit="cycles", mutate=knobs.get("mutation", False)
    )
    queues = fault_queues(leaves, knobs["messages"], random.Random(knobs["traffic"]))
    run = RUNS[config["design"]](queues, knobs["limit"])
    ready = [1] * leaves

    ports.drive([0] * leaves, [0] * leaves, [0] * leaves, ready)
    await clock_and_reset(dut)
    started = time.perf_counter()
    while not run.finished:
        seen = ports.sample()
        valid, dest, data = run.inputs()
        ports.drive(valid, dest, data, ready)
        want = model.step(valid, dest, data, ready)
        expected = [want.tx_ready, want.tx_done, want.tx_reject, want.rx_valid, want.rx_data]
        if None in want.rx_data:  # a model that leaves rx_data open while rx_valid is 0
            pairs = zip(seen[4], want.rx_data, strict=True)
            seen = [*seen[:4], [d if w is not None else None for d, w in pairs]]
        scoreboard.compare("cycle_mismatches", f"cycle {run.cycle}", seen, expected, OUTPUTS)
        run.observe(valid, seen[0], seen[3], seen[4], seen[1], seen[2])
        await FallingEdge(dut.clk)
    seconds = time.perf_counter() - started
    scoreboard.checked = run.cycle
    write_summary(
        config,
        scoreboard.summary(
            run.cycle,
            figures=run.figures(),
            faults=p["faults"],
            seconds=round(seconds, 3),
        ),
    )
    scoreboard.raise_on_mismatch()
