"""cocotb bench of :class:`fattree.hdl.hypercube.HypercubeNetwork`: the Connection Machine's
hypercube (Stanfill 1987, section 4.2) on generated Verilog.

Phases of traffic run one after the other on the same network: random (``frames`` messages
in all, 4096 by default: the queues stay full, buffers fill and every node refers), a random
permutation, transpose, bit reversal, and a hot spot (every processor sends two messages to
processor 0, which fills the buffers and forces referrals), and last the rounds that close
what those left of the model's coverage
(:func:`~fattree.sim.checks.hypercube.hole_rounds`, reported as ``steered``; none where the
phases before hit every bin, as at the default point).
:class:`fattree.sim.checks.hypercube.HypercubeCheck` runs two checks side by side:

* cycle by cycle, every output (per processor ``tx.ready``, ``rx.valid``, ``rx.payload``; per
  node ``refer``) against :class:`HypercubeModel`, the cycle-exact reference;
* message by message, every message taken from a processor is delivered exactly once, to its
  destination, with its data intact.

The receivers stall at random: each ``rx.ready`` is low in a cycle with the probability of
the bench knob ``backpressure`` (percent; 0 = always ready). The summary reports the
referrals (from the design's ``refer`` outputs), the longest time in network (cycles from a
transmit transfer to its receive transfer), and per phase its messages, cycles, referrals and
longest time; with ``coverage`` set (``fattree sim --coverage``) the model's cover points.

Inputs are driven and outputs sampled on the falling clock edge, half a cycle away from the
rising edge where the design samples and updates.
"""

from __future__ import annotations

import random
import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.checks.hypercube import CHECKS, HypercubeCheck, bench_phases, hole_rounds
from fattree.sim.cocotb_runner import (
    MessagePorts,
    bench_config,
    clock_and_reset,
    write_summary,
)
from fattree.sim.models.hypercube import HypercubeModel
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.hypercube import tx_fields

#: Candidate rounds tried on a copy of the model to close the coverage's holes (a few
#: milliseconds each at dim 3; none when the phases before left no hole).
HOLE_TRIES = 3000


class Ports(MessagePorts):
    """The streams of :class:`MessagePorts`, one per processor, and ``refer__2`` per node."""

    def __init__(self, dut, dim: int, procs: int, data_bits: int):
        self.processors = (1 << dim) * procs
        super().__init__(dut, self.processors, tx_fields(dim, procs, data_bits))
        #: Outputs in the check's OUTPUTS order.
        self.outputs = [
            self.ports("tx__{}__ready"),
            self.ports("rx__{}__valid"),
            self.ports("rx__{}__payload"),
            self.ports("refer__{}", 1 << dim),
        ]


@cocotb.test()
async def traffic_phases(dut):
    config = bench_config()
    p = config["params"]
    dim, procs, buffers, data_bits = p["dim"], p["procs"], p["buffers"], p["data_bits"]
    # Enough random messages that every processor's queue stays full for a while: buffers
    # fill and every node refers (at 256, the mutants of fattree.mutants showed nodes whose
    # referral paths were never used); still about a second on Icarus at dim 2.
    frames = config["bench"].get("frames", 4096)
    backpressure = config["bench"].get("backpressure", 20)
    rng = random.Random(config["seed"])
    model = HypercubeModel(dim, procs, buffers, data_bits)
    # Counted always: the last rounds steer into its holes, with or without --coverage.
    coverage = model.start_coverage()
    ports = Ports(dut, dim, procs, data_bits)
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    check = HypercubeCheck(
        model,
        scoreboard,
        ports.sample,
        ports.drive,
        lambda: FallingEdge(dut.clk),
        stall=backpressure / 100,
        rng=random.Random(rng.getrandbits(32)),
    )
    n = ports.processors
    ports.drive([0] * n, [0] * n, [0] * n, [1] * n)
    await clock_and_reset(dut)

    started = time.perf_counter()
    for name, queues in bench_phases(dim, procs, data_bits, rng, frames):
        await check.phase(name, queues, limit=100_000)
    steer = random.Random(rng.getrandbits(32))
    steered = 0
    # A run that has failed already is not steered: the design no longer follows the model
    # the rounds are tried on, and a failing mutant would spend the tries for nothing.
    tries = 0 if scoreboard.mismatches else HOLE_TRIES
    for name, queues, options in hole_rounds(model, steer, tries=tries):
        steered += await check.phase(name, queues, limit=100_000, **options)
        if scoreboard.mismatches:
            break
    seconds = time.perf_counter() - started
    write_summary(
        config,
        scoreboard.summary(
            check.cycle,
            phases=check.phases,
            referrals=check.referrals,
            longest_in_network=check.longest,
            backpressure=backpressure,
            backpressure_cycles=check.backpressure_cycles,
            steered=steered,
            seconds=round(seconds, 3),
            **({"coverage": coverage.as_dict()} if config["bench"].get("coverage") else {}),
        ),
    )
    scoreboard.raise_on_mismatch()
