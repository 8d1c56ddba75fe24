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

A second reference model takes every command in the cycle the design takes it and counts the
cover points (:class:`~fattree.sim.checks.scheduler.CoverFeed`; docs/scheduler.md,
"Coverage"); last come the rounds that close what the phases left of them
(:func:`~fattree.sim.checks.scheduler.hole_rounds`: a few commands back to back, tried on a
copy of the model first; reported as ``steered``), with or without ``coverage`` set
(``fattree sim --coverage``, which adds the counts to the summary).

Inputs are driven and outputs sampled on the falling clock edge, half a cycle away from the
rising edge where the design samples and updates.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from fattree.sim.checks.scheduler import (
    CHECKS,
    CoverFeed,
    Packer,
    ResultCheck,
    hole_rounds,
    make_commands,
    stalled_clears,
    tree_of,
)
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.scoreboard import Scoreboard
from fattree.spec.scheduler import Op

#: Candidate rounds tried on a copy of the model to close the coverage's holes (about a
#: millisecond each; none are kept where the phases hit every bin).
HOLE_TRIES = 2000


class Driver:
    """Sends commands and takes results on the design's streams, one falling edge per cycle;
    feeds every command to ``feed`` in the cycle the design takes it."""

    def __init__(self, dut, packer, results, feed, rng):
        self.dut, self.packer, self.results, self.feed, self.rng = dut, packer, results, feed, rng
        self.cycles = 0

    async def send(self, commands, *, idle=0.0, stall=None, holds=None, steered=False):
        """Send ``commands`` (idle cycles with probability ``idle`` before each; results not
        ready with probability ``stall``, else ``holds``: command index -> cycles to hold them
        from its first offer) until every result is in. ``steered``: the results expected are
        the feed's, appended as each command is taken."""
        dut, rng = self.dut, self.rng
        target = self.results.scoreboard.checked + len(commands)
        sent, stalled_until, offered, valid = 0, 0, 0, False
        limit = self.cycles + 40 * len(commands) + 100 * self.feed.model.tree.num_switches + 1000
        while self.results.scoreboard.checked < target and self.cycles < limit:
            await FallingEdge(dut.clk)
            self.cycles += 1
            # A valid request stays until it is accepted.
            if not valid:
                valid = sent < len(commands) and rng.random() >= idle
                if valid:
                    dut.requests__payload.value = self.packer.request(*commands[sent])
                    offered = self.cycles
                    hold = (holds or {}).get(sent, 0)
                    stalled_until = max(stalled_until, self.cycles + hold)
            ready = self.cycles >= stalled_until if stall is None else rng.random() >= stall
            dut.requests__valid.value = int(valid)
            dut.results__ready.value = int(ready)
            # Sample the settled handshakes: they are what the next rising edge will act on.
            await ReadOnly()
            if valid and int(dut.requests__ready.value):
                command = commands[sent]
                at = offered if command[0] == Op.CLEAR else self.cycles
                want = self.feed.take(command, at)
                if steered:
                    self.results.expected.append(want)
                sent += 1
                valid = False
            if ready and int(dut.results__valid.value):
                self.results.check(self.packer.result(int(dut.results__payload.value)))
        return sent


@cocotb.test()
async def random_commands(dut):
    config = bench_config()
    # FT(levels, w), or FT(levels, m, w) with the design's m.
    tree = tree_of(config["params"])
    bursts = config["bench"].get("frames", 200)
    rng = random.Random(config["seed"])
    packer = Packer(tree.levels, tree.w, tree.m)
    commands, expected = make_commands(tree, rng, bursts)
    more, more_expected, holds = stalled_clears(tree, rng)
    scoreboard = Scoreboard(CHECKS, unit="results", mutate=config["bench"].get("mutation", False))
    results = ResultCheck(tree, expected + more_expected, scoreboard)
    feed = CoverFeed(tree)
    driver = Driver(dut, packer, results, feed, rng)

    await clock_and_reset(dut, dut.requests__valid, dut.requests__payload, dut.results__ready)

    sent = await driver.send(commands, idle=0.15, stall=0.2)
    # The directed phase sends without idle cycles and stalls results only where it says.
    sent += await driver.send(more, holds=holds)
    steered = 0
    # A run that has failed already is not steered: the design no longer follows the model
    # the rounds are tried on.
    tries = 0 if scoreboard.mismatches or sent < len(commands) + len(more) else HOLE_TRIES
    for round_ in hole_rounds(feed, random.Random(rng.getrandbits(32)), tries):
        steered += await driver.send(round_, steered=True)
        if scoreboard.mismatches:
            break
    total = len(commands) + len(more) + steered

    write_summary(
        config,
        scoreboard.summary(
            driver.cycles,
            commands=total,
            stalled_clear_commands=len(more),
            granted=results.granted,
            steered=steered,
            **({"coverage": feed.coverage.as_dict()} if config["bench"].get("coverage") else {}),
        ),
    )
    assert scoreboard.checked == total, f"only {scoreboard.checked} results"
    scoreboard.raise_on_mismatch()
