"""cocotb bench of :class:`fattree.hdl.scheduler.LevelWiseScheduler`: driver, monitor,
scoreboard.

The driver sends ``frames`` bursts of 20 commands (schedule, release of an established
connection, now and then a clear; sources and destinations drawn either from all nodes or
from two "hot" leaf switches, so back-to-back commands hit the same memory rows), then a
clear and a random permutation of all nodes, with random idle cycles; the monitor takes
results under random back-pressure. Then a directed phase
(:func:`fattree.sim.checks.scheduler.stalled_clears`): commands sent back to back while the
result stream is stalled for 1 to 16 cycles, a CLEAR right behind them, the same commands
again (a CLEAR that starts before the pipeline is empty leaves links busy). The scoreboard
checks every result against the sequential reference (``SchedulerModel``, level-wise,
``keep``) field by field, and, independently of the model, that no link is ever held by two
established connections.

Inputs are driven and outputs sampled on the falling clock edge, half a cycle away from the
rising edge where the design samples and updates.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from fattree.sim.checks.scheduler import (
    CHECKS,
    Packer,
    ResultCheck,
    make_commands,
    stalled_clears,
    tree_of,
)
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.scoreboard import Scoreboard


@cocotb.test()
async def random_commands(dut):
    config = bench_config()
    # FT(levels, w), or FT(levels, m, w) with the design's m.
    tree = tree_of(config["params"])
    bursts = config["bench"].get("frames", 200)
    rng = random.Random(config["seed"])
    packer = Packer(tree.levels, tree.w, tree.m)
    commands, expected = make_commands(tree, rng, bursts)
    directed = len(commands)
    more, more_expected, holds = stalled_clears(tree, rng)
    commands, expected = commands + more, expected + more_expected
    scoreboard = Scoreboard(CHECKS, unit="results", mutate=config["bench"].get("mutation", False))
    results = ResultCheck(tree, expected, scoreboard)

    await clock_and_reset(dut, dut.requests__valid, dut.requests__payload, dut.results__ready)

    sent, cycles, stalled_until = 0, 0, 0
    limit = 40 * len(commands) + 100 * tree.num_switches + 1000
    valid = False
    while scoreboard.checked < len(commands) and cycles < limit:
        await FallingEdge(dut.clk)
        cycles += 1
        # Drive this cycle's inputs; a valid request stays until it is accepted. The
        # directed phase sends without idle cycles and stalls results only where it says.
        if not valid:
            valid = sent < len(commands) and (sent >= directed or rng.random() < 0.85)
            if valid:
                dut.requests__payload.value = packer.request(*commands[sent])
                stalled_until = max(stalled_until, cycles + holds.get(sent - directed, 0))
        ready = cycles >= stalled_until if sent >= directed else rng.random() < 0.8
        dut.requests__valid.value = int(valid)
        dut.results__ready.value = int(ready)
        # Sample the settled handshakes: they are what the next rising edge will act on.
        await ReadOnly()
        if valid and int(dut.requests__ready.value):
            sent += 1
            valid = False
        if ready and int(dut.results__valid.value):
            results.check(packer.result(int(dut.results__payload.value)))

    write_summary(
        config,
        scoreboard.summary(
            cycles,
            commands=len(commands),
            stalled_clear_commands=len(more),
            granted=results.granted,
        ),
    )
    assert scoreboard.checked == len(commands), f"only {scoreboard.checked} results"
    scoreboard.raise_on_mismatch()
