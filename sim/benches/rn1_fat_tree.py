"""cocotb bench of DeHon's fat-tree network (``rn1-fat-tree-network``: :class:`fattree.hdl.
rn1_fat_tree.RN1FatTree` of 1 or 2 unit-tree stages, routers and swallows as instances of
shared modules) against :class:`RN1FatTreeModel`, and of the hybrid fat-tree
(``rn1-hybrid``, :class:`fattree.hdl.rn1_hybrid.RN1Hybrid`) against :class:`RN1HybridModel`.

``frames`` transmissions between node pairs whose lowest common node lies at every level in
turn (:func:`fattree.sim.checks.rn1.level_pairs`; the hybrid: random pairs), each with its
head bytes (one per unit tree or cluster crossed), closed with TURN now and then, answered
BLOCKED now and then by a busy receiver and retried. Checks (:func:`network_phase`): every
output word of every channel against the model every cycle, and every transmission
delivered exactly once to its node with its bytes.
"""

from __future__ import annotations

import random
import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.benches.rn1 import Ports
from fattree.sim.checks.rn1 import (
    CHECKS,
    Knobs,
    level_pairs,
    network_phase,
    network_queues,
)
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.rn1 import RN1FatTreeModel, RN1HybridModel
from fattree.sim.scoreboard import Scoreboard

#: Endpoints' behaviour: turns and busy receivers, so statuses, turned segments and retries
#: cross the swallows both ways.
KNOBS = Knobs(start=0.5, turn=0.3, busy=0.1)


def _model(config):
    p = config["params"]
    if config["design"] == "rn1-hybrid":
        return RN1HybridModel(p["cluster"], p["stages"], None, p["seed"])
    return RN1FatTreeModel(p["stages"], None, p["seed"])


def _pairs(net, frames: int, rng: random.Random):
    nodes = net.nodes
    if nodes & (nodes - 1) == 0 and (nodes.bit_length() - 1) % 2 == 0:
        return level_pairs(nodes, frames, rng)
    pairs = []
    while len(pairs) < frames:
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        if a != b:
            pairs.append((a, b))
    return pairs


@cocotb.test()
async def traffic(dut):
    config = bench_config()
    rng = random.Random(config["seed"])
    model = _model(config)
    frames = config["bench"].get("frames", 64)
    n = model.channels
    ports = Ports(dut, n)
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    queues, want = network_queues(model.net, _pairs(model.net, frames, rng), rng)
    ports.drive([0] * n, [0] * n)
    await clock_and_reset(dut)
    started = time.perf_counter()
    counts = await network_phase(
        model,
        scoreboard,
        ports.sample,
        ports.drive,
        lambda: FallingEdge(dut.clk),
        queues,
        want,
        KNOBS,
        random.Random(rng.getrandbits(32)),
        limit=200 * frames + 2000,
    )
    seconds = time.perf_counter() - started
    cycles = counts.pop("cycles")
    write_summary(
        config,
        scoreboard.summary(
            cycles,
            channels=n,
            **counts,
            seconds=round(seconds, 3),
            cycles_per_second=round(cycles / seconds, 1) if seconds else None,
        ),
    )
    scoreboard.raise_on_mismatch()
