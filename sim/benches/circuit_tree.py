"""cocotb bench of :class:`fattree.hdl.circuit_tree.CircuitFatTree`: driver, monitor,
scoreboard.

Phases of traffic run one after the other on the same network: random (``frames`` messages
in all), transpose, bit reversal, a random cyclic shift, and a hot spot (every node sends two
messages to node 0). Two checks run side by side:

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
from collections import Counter

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.cocotb_runner import (
    TwoCheckScoreboard,
    bench_config,
    clock_and_reset,
    write_summary,
)
from fattree.sim.models.circuit import CircuitTreeModel, Driver, traffic

OUTPUTS = ("tx_ready", "tx_done", "tx_reject", "rx_valid", "rx_data")


class Ports:
    """The per-node ports of the flattened Verilog (``tx_valid__3`` ...)."""

    def __init__(self, dut, leaves: int):
        self.leaves = leaves
        self.signals = {
            name: [getattr(dut, f"{name}__{n}") for n in range(leaves)]
            for name in OUTPUTS + ("tx_valid", "tx_dest", "tx_data")
        }
        self.inputs = [self.signals[name] for name in ("tx_valid", "tx_dest", "tx_data")]
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


class Scoreboard(TwoCheckScoreboard):
    def __init__(self, model: CircuitTreeModel):
        super().__init__()
        self.model = model

    def check_cycle(self, cycle: int, inputs, seen: list[list[int]]) -> None:
        want = self.model.step(*inputs)
        expected = [want.tx_ready, want.tx_done, want.tx_reject, want.rx_valid, want.rx_data]
        if seen != expected:
            self.cycle_mismatches += 1
            for name, got, exp in zip(OUTPUTS, seen, expected, strict=True):
                if got != exp:
                    self._report(f"cycle {cycle}: {name} = {got}, model says {exp}")
                    break

    def check_messages(self, phase: str, sent, received) -> None:
        want = Counter((dest, data) for _src, dest, data in sent)
        got = Counter(received)
        self.messages_checked += len(sent)
        if want != got:
            self.message_mismatches += 1
            lost = want - got
            extra = got - want
            self._report(f"{phase}: lost {dict(lost)}, unexpected or duplicated {dict(extra)}")


async def run_phase(dut, ports, scoreboard, queues, phase, cycle, limit):
    """Drive one phase until every message is acknowledged; returns the next cycle."""
    driver = Driver(queues)
    total = sum(len(q) for q in queues)
    done = 0
    received = []
    start = cycle
    while done < total and cycle - start < limit:
        # Called on a falling edge: sample this cycle's outputs, drive its inputs.
        seen = ports.sample()
        inputs = driver.inputs()
        ports.drive(*inputs)
        scoreboard.check_cycle(cycle, inputs, seen)
        driver.taken(seen[0])
        done += sum(seen[1])
        received += [(n, seen[4][n]) for n in range(ports.leaves) if seen[3][n]]
        cycle += 1
        await FallingEdge(dut.clk)
    if done < total:
        scoreboard.message_mismatches += 1
        scoreboard._report(f"{phase}: {total - done} messages not acknowledged in {limit} cycles")
    # The last acknowledge arrives after the last delivery: nothing is left in flight.
    scoreboard.check_messages(phase, driver.sent, received)
    return cycle, total


@cocotb.test()
async def traffic_phases(dut):
    config = bench_config()
    p = config["params"]
    leaves, width, length = p["leaves"], p["width"], p["length"]
    frames = config["bench"].get("frames", 200)
    mutation = bool(config["bench"].get("mutation", False))
    rng = random.Random(config["seed"])
    model = CircuitTreeModel(leaves, width, length, p["seed"], p["retry"], mutation=mutation)
    ports = Ports(dut, leaves)
    scoreboard = Scoreboard(model)

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
    cycle = 0
    counts = {}
    started = time.perf_counter()
    for name, queues in phases:
        cycle, counts[name] = await run_phase(
            dut, ports, scoreboard, queues, name, cycle, limit=200_000
        )
    seconds = time.perf_counter() - started

    mismatches = scoreboard.mismatches
    write_summary(
        config,
        {
            "cycles": cycle,
            "messages": counts,
            **scoreboard.summary(),
            "seconds": round(seconds, 3),
            "cycles_per_second": round(cycle / seconds, 1) if seconds else None,
        },
    )
    assert mismatches == 0, f"{mismatches} mismatches; first: {scoreboard.first_mismatch}"
