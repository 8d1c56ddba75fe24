"""The scheduler bench's directed phase (sim/checks/scheduler.py: stalled_clears): commands
held in flight behind a stalled result stream, a CLEAR right behind them, the same commands
again; on the RTL (amaranth.sim) against the sequential reference."""

import random

import pytest

from fattree.hdl.scheduler import LevelWiseScheduler
from fattree.sim.checks.scheduler import (
    CHECKS,
    IN_FLIGHT,
    STALLS,
    ResultCheck,
    stalled_clears,
)
from fattree.sim.scoreboard import Scoreboard
from fattree.sim.testbench import simulate
from fattree.spec.scheduler import Op
from fattree.spec.topology import FatTree


def test_stalled_clears_shape():
    tree = FatTree(2, 2)
    commands, expected, holds = stalled_clears(tree, random.Random(1))
    assert len(commands) == len(expected) == len(STALLS) * sum(2 + 2 * k for k in IN_FLIGHT)
    assert sorted(holds.values()) == sorted(s for s in STALLS for _ in IN_FLIGHT)
    k = 0
    for stall in STALLS:
        for count in IN_FLIGHT:
            group = commands[k : k + 2 + 2 * count]
            want = expected[k : k + 2 + 2 * count]
            assert holds[k + 1] == stall  # the stall starts with the first request
            assert group[0][0] == group[count + 1][0] == Op.CLEAR
            first, again = group[1 : count + 1], group[count + 2 :]
            assert first == again and all(c[0] == Op.SCHEDULE for c in first)
            # Requests across the root: every level's links.
            assert all(tree.common_level(c[1], c[2]) == tree.levels - 1 for c in first)
            # After the CLEAR the reference grants the repeats exactly as the first time.
            assert want[1 : count + 1] == want[count + 2 :]
            k += 2 + 2 * count
    assert k == len(commands)


@pytest.mark.parametrize(("levels", "w"), [(2, 2), (3, 4)])
def test_rtl_passes_the_directed_phase(levels, w):
    # Driven as the cocotb bench drives it: no idle cycles, results.ready low for the
    # group's stall from its first request on, high otherwise.
    tree = FatTree(levels, w)
    commands, expected, holds = stalled_clears(tree, random.Random(levels * w))
    dut = LevelWiseScheduler(levels, w, memory="portable")
    scoreboard = Scoreboard(CHECKS, unit="results")
    results = ResultCheck(tree, expected, scoreboard)
    stalled_cycles = []

    async def bench(ctx):
        req, res = dut.requests, dut.results
        sent, cycle, stalled_until = 0, 0, 0
        offered = None
        while scoreboard.checked < len(commands):
            assert cycle < 60 * len(commands), f"stuck after {scoreboard.checked} results"
            if sent < len(commands) and offered != sent:
                offered = sent
                op, src, dst, ports = commands[sent]
                ctx.set(req.payload.op, op)
                ctx.set(req.payload.src, src)
                ctx.set(req.payload.dst, dst)
                for i, p in enumerate(ports):
                    ctx.set(req.payload.ports[i], p)
                stalled_until = max(stalled_until, cycle + holds.get(sent, 0))
            valid = sent < len(commands)
            ready = cycle >= stalled_until
            ctx.set(req.valid, valid)
            ctx.set(res.ready, ready)
            if not ready:
                stalled_cycles.append(cycle)
            if valid and ctx.get(req.ready):
                sent += 1
            if ready and ctx.get(res.valid):
                p = res.payload
                results.check(
                    (
                        Op(ctx.get(p.op)),
                        ctx.get(p.src),
                        ctx.get(p.dst),
                        ctx.get(p.granted),
                        tuple(ctx.get(p.ports[i]) for i in range(levels - 1)),
                    )
                )
            await ctx.tick()
            cycle += 1

    simulate(dut, bench)
    assert scoreboard.mismatches == 0, scoreboard.first_mismatch
    assert scoreboard.checked == len(commands) and results.granted > len(commands) // 4
    assert len(stalled_cycles) >= sum(STALLS)  # the stalls happened
