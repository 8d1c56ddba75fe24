"""cocotb bench of :class:`fattree.hdl.Selector`: driver, monitor, scoreboard.

Random frames of random bit-serial messages (one per wire, M bit random) are driven with
random idle gaps. :class:`fattree.sim.checks.selector.SelectorCheck` runs two checks side by
side:

* cycle by cycle, every output against :class:`SelectorModel` (the cycle-exact reference);
* message by message, every branch message the monitor reassembles against the paper's rule
  :func:`select_message` applied to what the driver sent on that wire.

Inputs are driven and outputs sampled on the falling clock edge, half a cycle away from the
rising edge where the design samples and updates, so neither side races the other.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.checks.selector import CHECKS, SelectorCheck
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.scoreboard import Scoreboard


def random_frames(rng: random.Random, width: int, count: int) -> list[list[int]]:
    """Frames of per-wire messages: M bit (p = 3/4), address bit, 0-8 more bits; a gap of
    0-3 idle cycles follows, during which the wires keep their paths (and carry noise)."""
    frames = []
    for _ in range(count):
        length = rng.randint(2, 10)
        words = [rng.getrandbits(width) for _ in range(length)]
        words[0] = sum((rng.random() < 0.75) << w for w in range(width))
        gap = rng.choice([0, 0, 0, 1, 2, 3])
        words += [rng.getrandbits(width) for _ in range(gap)]
        frames.append(words)
    return frames


@cocotb.test()
async def random_messages(dut):
    config = bench_config()
    width = config["params"]["width"]
    frames_count = config["bench"].get("frames", 200)
    rng = random.Random(config["seed"])
    scoreboard = Scoreboard(CHECKS, mutate=config["bench"].get("mutation", False))

    def read():
        return int(dut.start_o.value), int(dut.one.value), int(dut.zero.value)

    def drive(start, word):
        dut.start.value = start
        dut.i.value = word

    await clock_and_reset(dut, dut.start, dut.i)

    frames = random_frames(rng, width, frames_count)
    check = SelectorCheck(width, scoreboard, read, drive, lambda: FallingEdge(dut.clk))
    await check.run(frames)

    write_summary(config, scoreboard.summary(check.cycle, frames=len(frames)))
    scoreboard.raise_on_mismatch()
    assert scoreboard.checked == len(frames) * width
