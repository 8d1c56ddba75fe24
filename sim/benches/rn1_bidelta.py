"""cocotb bench of :class:`fattree.hdl.rn1_bidelta.RN1Bidelta`: endpoints, model, scoreboard.

The endpoints of :mod:`fattree.sim.checks.rn1` on every network channel (each endpoint's two
ways in and two ways out run independent senders and receivers), with the bidelta layout:
heads name destination endpoints. Phases: random destinations (``frames`` transmissions in
all), then a hot spot (every transmission to endpoint 0). Checks: every output word against
:class:`RN1BideltaModel` cycle by cycle (the same RN1 models, LFSR seeds and wiring), and
every transmission delivered exactly once to its destination with its bytes intact, every
segment after a turn received as sent.
"""

from __future__ import annotations

import random
import time

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.benches.rn1 import Ports
from fattree.sim.checks.rn1 import CHECKS, RN1Check, bidelta_layout, transmissions
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.models.rn1 import RN1BideltaModel
from fattree.sim.scoreboard import Scoreboard


@cocotb.test()
async def traffic_phases(dut):
    config = bench_config()
    p = config["params"]
    frames = config["bench"].get("frames", 200)
    rng = random.Random(config["seed"])
    model = RN1BideltaModel(p["endpoints"], p["seed"])
    layout = bidelta_layout(model.net)
    n = layout.channels
    ports = Ports(dut, n)
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))
    check = RN1Check(
        model,
        scoreboard,
        ports.sample,
        ports.drive,
        lambda: FallingEdge(dut.clk),
        rng=random.Random(rng.getrandbits(32)),
        layout=layout,
    )
    ports.drive([0] * n, [0] * n)
    await clock_and_reset(dut)

    per_input = max(1, -(-frames // n))
    counts = {}
    started = time.perf_counter()
    for name in ("random", "hotspot"):
        queues = transmissions(name, per_input, rng, layout)
        counts[name] = await check.phase(name, queues, limit=50_000 * per_input)
    seconds = time.perf_counter() - started
    cycle = check.cycle
    write_summary(
        config,
        scoreboard.summary(
            cycle,
            transmissions=counts,
            heads_blocked=check.stats["blocked"],
            busy_or_blocked_answers=check.stats["blocked_answers"],
            circuits_released=check.stats["release"],
            turned_segments=check.stats["turn_segments"],
            seconds=round(seconds, 3),
            cycles_per_second=round(cycle / seconds, 1) if seconds else None,
        ),
    )
    scoreboard.raise_on_mismatch()
