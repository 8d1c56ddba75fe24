"""cocotb bench of the circuit trees, :class:`fattree.hdl.circuit_tree.CircuitFatTree`
(``circuit-tree-paper``) and :class:`fattree.hdl.circuit_fast.tree.CircuitFastTree`
(``circuit-tree``): driver, monitor, scoreboard; the design's name picks the model
(:data:`MODELS`).

Phases of traffic run one after the other on the same network: random (``frames`` messages
in all), transpose, bit reversal, a random cyclic shift, a hot spot (every node sends two
messages to node 0), and the phases that steer into the rules' rarer situations
(:func:`~fattree.sim.checks.circuit_tree.steering_phases`: random messages from senders that
start at random delays, a hot spot with receivers stalled 90 % of the cycles), and last the
rounds that close what those left of the model's coverage
(:func:`~fattree.sim.checks.circuit_tree.hole_rounds`, reported as ``steered``), then rounds
that meet every arbitration situation of the routers below the top, claimant by claimant and
port by port, held or free, and every way up
(:func:`~fattree.sim.checks.circuit_collisions.collision_rounds`, reported as
``collisions``): the cover points lump these together. For the fast
tree (:data:`fattree.sim.checks.circuit_tree.TRAFFIC`) a random message may go to its sender's
own node, and each sender pauses in 20 % of the cycles it has a message to offer, so that the
nodes do not send in step.
:class:`fattree.sim.checks.circuit_tree.CircuitTreeCheck` runs two checks side by side:

* cycle by cycle, every output of every node (``tx_ready``, ``tx_done``, ``tx_reject``,
  ``rx_valid``, ``rx_data``) against the design's cycle-exact model;
* message by message, every message taken by a node is delivered exactly once, to its
  destination, with its data intact (a multiset per destination: none lost or duplicated).

The receivers stall at random: each receive stream's ``ready`` is low in a cycle with the
probability of the bench knob ``backpressure`` (percent, default from the design table: 30;
0 = always ready). The summary reports ``backpressure_cycles`` (node-cycles in which a
received message waited for a receiver that was not ready) and ``receiver_rejects``
(messages an interface rejected because its receive stream was still full).

Inputs are driven and outputs sampled on the falling clock edge, half a cycle away from the
rising edge where the design samples and updates.
"""

from __future__ import annotations

import random
import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.checks.circuit_collisions import collision_rounds
from fattree.sim.checks.circuit_tree import (
    CHECKS,
    MODELS,
    TRAFFIC,
    CircuitTreeCheck,
    bench_phases,
    hole_rounds,
    steering_phases,
)
from fattree.sim.cocotb_runner import (
    MessagePorts,
    bench_config,
    clock_and_reset,
    write_summary,
)
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.circuit import tx_fields

#: Candidate rounds tried on a copy of the model to close the coverage's holes (each a few
#: milliseconds; none when the phases before left no hole).
HOLE_TRIES = 3000
#: Candidate rounds aimed at one router, tried on a copy of the model to meet every situation
#: of its arbitration (a few milliseconds each; at 4 leaves the paper's tree meets all 80 in
#: about 1000, the fast tree 164 of 172 in 2700).
COLLISION_TRIES = 2000


class Ports(MessagePorts):
    """The streams of :class:`MessagePorts`, and ``tx_done__3``, ``tx_reject__3``."""

    def __init__(self, dut, leaves: int, width: int, length: int):
        super().__init__(dut, leaves, tx_fields(leaves, width, length))
        #: Outputs in the check's OUTPUTS order.
        self.outputs = [
            self.ports("tx__{}__ready"),
            self.ports("tx_done__{}"),
            self.ports("tx_reject__{}"),
            self.ports("rx__{}__valid"),
            self.ports("rx__{}__payload"),
        ]


@cocotb.test()
async def traffic_phases(dut):
    config = bench_config()
    p = config["params"]
    leaves, width, length = shape = p["leaves"], p["width"], p["length"]
    frames = config["bench"].get("frames", 200)
    backpressure = config["bench"]["backpressure"]
    rng = random.Random(config["seed"])
    model = MODELS[config["design"]](p)
    # Counted always: the last phases steer into its holes, with or without --coverage.
    coverage = model.start_coverage()
    ports = Ports(dut, leaves, width, length)
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    extra = TRAFFIC[config["design"]]
    check = CircuitTreeCheck(
        model,
        scoreboard,
        ports.sample,
        ports.drive,
        lambda: FallingEdge(dut.clk),
        stall=backpressure / 100,
        rng=random.Random(rng.getrandbits(32)),
        gaps=extra["gaps"],
    )

    ports.drive([0] * leaves, [0] * leaves, [0] * leaves, [1] * leaves)
    # Cycle 0 of the model is the half cycle where this returns: reset state, and the next
    # rising edge is the first one without reset (the LFSRs advance on it).
    await clock_and_reset(dut)

    phases = [
        (name, queues, {}) for name, queues in bench_phases(*shape, rng, frames, own=extra["own"])
    ]
    phases += steering_phases(*shape, rng, frames, stalls=backpressure > 0)
    counts = {}
    started = time.perf_counter()
    for name, queues, options in phases:
        counts[name] = await check.phase(name, queues, limit=200_000, **options)
    steer = random.Random(rng.getrandbits(32))
    counts["steered"] = 0
    # A run that has failed already is not steered: the design no longer follows the model
    # the rounds are tried on, and a failing mutant would spend the tries for nothing.
    tries = 0 if scoreboard.mismatches else HOLE_TRIES
    for name, queues, options in hole_rounds(
        model, width, length, steer, own=extra["own"], tries=tries
    ):
        counts["steered"] += await check.phase(name, queues, limit=200_000, **options)
        if scoreboard.mismatches:
            break
    counts["collisions"] = 0
    # The routers' claims one by one: the cover points lump them together. Not with faults:
    # a round into a dead link is never answered.
    wanted = extra["collisions"] and not p.get("faults")
    tries = COLLISION_TRIES if wanted and not scoreboard.mismatches else 0
    for name, queues, options in collision_rounds(model, steer, tries):
        counts["collisions"] += await check.phase(name, queues, limit=200_000, **options)
        if scoreboard.mismatches:
            break
    seconds = time.perf_counter() - started

    cycle = check.cycle
    write_summary(
        config,
        scoreboard.summary(
            cycle,
            messages=counts,
            backpressure=backpressure,
            backpressure_cycles=check.backpressure_cycles,
            receiver_rejects=sum(ni.rx_rejects for ni in model.nis),
            faults=p.get("faults", ""),
            unacknowledged=sum(getattr(model, "unacknowledged", [0])),
            undelivered=check.undelivered,
            seconds=round(seconds, 3),
            cycles_per_second=round(cycle / seconds, 1) if seconds else None,
            **({"coverage": coverage.as_dict()} if config["bench"].get("coverage") else {}),
        ),
    )
    scoreboard.raise_on_mismatch()
