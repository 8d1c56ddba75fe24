"""cocotb bench of :class:`fattree.hdl.circuit_tree.CircuitFatTree`: driver, monitor,
scoreboard.

Phases of traffic run one after the other on the same network: random (``frames`` messages
in all), transpose, bit reversal, a random cyclic shift, and a hot spot (every node sends two
messages to node 0). :class:`fattree.sim.checks.circuit_tree.CircuitTreeCheck` runs two
checks side by side:

* cycle by cycle, every output of every node (``tx_ready``, ``tx_done``, ``tx_reject``,
  ``rx_valid``, ``rx_data``) against :class:`CircuitTreeModel`, the cycle-exact reference
  with the same LFSRs, arbitration and interface state machines;
* message by message, every message taken by a node is delivered exactly once, to its
  destination, with its data intact (a multiset per destination: none lost or duplicated).

Inputs are driven and outputs sampled on the falling clock edge, half a cycle away from the
rising edge where the design samples and updates.
"""

from __future__ import annotations

import random
import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.checks.circuit_tree import CHECKS, INPUTS, OUTPUTS, CircuitTreeCheck
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.circuit import CircuitTreeModel, traffic
from fattree.sim.scoreboard import Scoreboard


class Ports:
    """The per-node ports of the flattened Verilog (``tx_valid__3`` ...)."""

    def __init__(self, dut, leaves: int):
        self.leaves = leaves
        self.signals = {
            name: [getattr(dut, f"{name}__{n}") for n in range(leaves)] for name in OUTPUTS + INPUTS
        }
        self.inputs = [self.signals[name] for name in INPUTS]
        self.driven = None

    def drive(self, valid, dest, data) -> None:
        """Set the inputs; only those that change are written (each write is a VPI call)."""
        values = (valid, dest, data)
        last = self.driven
        for k, (handles, new) in enumerate(zip(self.inputs, values, strict=True)):
            old = last[k] if last is not None else None
            for n in range(self.leaves):
                if old is None or old[n] != new[n]:
                    handles[n].value = new[n]
        self.driven = tuple(list(v) for v in values)

    def sample(self) -> list[list[int]]:
        return [[int(s.value) for s in self.signals[name]] for name in OUTPUTS]


@cocotb.test()
async def traffic_phases(dut):
    config = bench_config()
    p = config["params"]
    leaves, width, length = p["leaves"], p["width"], p["length"]
    frames = config["bench"].get("frames", 200)
    rng = random.Random(config["seed"])
    model = CircuitTreeModel(leaves, width, length, p["seed"], p["retry"])
    ports = Ports(dut, leaves)
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    check = CircuitTreeCheck(
        model, scoreboard, ports.sample, ports.drive, lambda: FallingEdge(dut.clk)
    )

    ports.drive([0] * leaves, [0] * leaves, [0] * leaves)
    # Cycle 0 of the model is the half cycle where this returns: reset state, and the next
    # rising edge is the first one without reset (the LFSRs advance on it).
    await clock_and_reset(dut)

    per_node = max(1, -(-frames // leaves))
    phases = [
        ("random", traffic("random", leaves, width, length, rng, messages=per_node)),
        ("transpose", traffic("transpose", leaves, width, length, rng)),
        ("bit-reversal", traffic("bit-reversal", leaves, width, length, rng)),
        (
            "shift",
            traffic("shift", leaves, width, length, rng, shift=rng.randrange(1, leaves)),
        ),
        ("hotspot", traffic("hotspot", leaves, width, length, rng, messages=2)),
    ]
    counts = {}
    started = time.perf_counter()
    for name, queues in phases:
        counts[name] = await check.phase(name, queues, limit=200_000)
    seconds = time.perf_counter() - started

    cycle = check.cycle
    write_summary(
        config,
        scoreboard.summary(
            cycle,
            messages=counts,
            seconds=round(seconds, 3),
            cycles_per_second=round(cycle / seconds, 1) if seconds else None,
        ),
    )
    scoreboard.raise_on_mismatch()
