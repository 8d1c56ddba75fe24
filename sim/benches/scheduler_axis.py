"""cocotb bench of the scheduler's AXI4-Stream top (``scheduler_axis``, docs/axis.md), driven by
cocotbext-axi as a user outside Amaranth would drive it.

An ``AxiStreamSource`` on ``s_axis_requests`` and an ``AxiStreamSink`` on ``m_axis_results``
(``AxiStreamBus.from_prefix``; clock ``aclk``, reset ``aresetn`` active low; ``byte_lanes=1``:
one beat is one whole request or result, no ``tlast``), each with a random pause generator: the
source idles, and the sink holds ``tready`` low, in a cycle with the probability of the bench
knob ``backpressure`` (percent, default 30).

The commands are the native bench's (:func:`fattree.sim.checks.scheduler.make_commands`:
bursts from all nodes and from two hot leaf switches, releases, clears, then a permutation),
all queued at once. The scheduler's contract is one result per request, in request order, so
the check is order for order: every result against the sequential reference field by field,
and a link ledger that does not trust the model (``reference_mismatches``,
``double_grants``).
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamFrame, AxiStreamSink, AxiStreamSource

from fattree.sim.axis_ends import axis_end, start_axis
from fattree.sim.checks.scheduler import CHECKS, Packer, ResultCheck, make_commands, tree_of
from fattree.sim.cocotb_runner import bench_config, write_summary
from fattree.sim.scoreboard import Scoreboard


@cocotb.test()
async def axis_commands(dut):
    config = bench_config()
    # FT(levels, w), or FT(levels, m, w) with the design's m.
    tree = tree_of(config["params"])
    bursts = config["bench"].get("frames", 200)
    percent = config["bench"].get("backpressure", 30)
    rng = random.Random(config["seed"])
    packer = Packer(tree.levels, tree.w, tree.m)
    commands, expected = make_commands(tree, rng, bursts)
    scoreboard = Scoreboard(CHECKS, unit="results", mutate=config["bench"].get("mutation", False))
    results = ResultCheck(tree, expected, scoreboard)

    source = axis_end(dut, "s_axis_requests", AxiStreamSource, rng, percent)
    sink = axis_end(dut, "m_axis_results", AxiStreamSink, rng, percent)
    await start_axis(dut)

    for command in commands:
        source.send_nowait(AxiStreamFrame([packer.request(*command)]))
    limit = 40 * len(commands) + 100 * tree.num_switches + 1000
    cycles = 0
    while scoreboard.checked < len(commands) and cycles < limit:
        await RisingEdge(dut.aclk)
        cycles += 1
        while not sink.empty():
            results.check(packer.result(sink.recv_nowait().tdata[0]))
    for _ in range(20):  # a result beyond the last request would be a duplicate
        await RisingEdge(dut.aclk)
    extra = 0
    while not sink.empty():
        sink.recv_nowait()
        extra += 1
    if extra:
        scoreboard.fail("reference_mismatches", f"{extra} results beyond the last request")
    if scoreboard.checked < len(commands):
        scoreboard.fail(
            "reference_mismatches", f"only {scoreboard.checked} of {len(commands)} results"
        )

    write_summary(
        config,
        scoreboard.summary(
            cycles, commands=len(commands), granted=results.granted, backpressure=percent
        ),
    )
    scoreboard.raise_on_mismatch()
