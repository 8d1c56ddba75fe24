"""cocotb bench of :class:`fattree.hdl.Selector`: driver, monitor, scoreboard.

Random frames of random bit-serial messages (one per wire, M bit random) are driven with
random idle gaps. :class:`fattree.sim.checks.selector.SelectorCheck` runs two checks side by
side:

* cycle by cycle, every output against :class:`SelectorModel` (the cycle-exact reference);
* message by message, every branch message the monitor reassembles against the paper's rule
  :func:`select_message` applied to what the driver sent on that wire.

The random frames never fill a branch at 8 wires or cut a frame; last come the frames that
close what they left of the model's coverage (:func:`~fattree.sim.checks.selector.hole_frames`,
each tried on a copy of the model first; reported as ``steered``), with or without
``coverage`` set (``fattree sim --coverage``, which adds the model's cover points to the
summary).

Inputs are driven and outputs sampled on the falling clock edge, half a cycle away from the
rising edge where the design samples and updates, so neither side races the other.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import FallingEdge

from fattree.sim.checks.selector import CHECKS, SelectorCheck, hole_frames
from fattree.sim.cocotb_runner import bench_config, clock_and_reset, write_summary
from fattree.sim.scoreboard import Scoreboard

#: Candidate frames tried on a copy of the model to close the coverage's holes (microseconds
#: each; a handful are kept at the default point).
HOLE_TRIES = 2000


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
    # Counted always: the last frames steer into its holes, with or without --coverage.
    coverage = check.model.start_coverage()
    await check.run(frames)
    # A failed run is not steered: the design no longer follows the model the frames are
    # tried on.
    steered = []
    tries = 0 if scoreboard.mismatches else HOLE_TRIES
    for frame in hole_frames(check.model, random.Random(rng.getrandbits(32)), tries):
        steered.append(frame)
        await check.run([frame])

    write_summary(
        config,
        scoreboard.summary(
            check.cycle,
            frames=len(frames),
            steered=len(steered),
            **({"coverage": coverage.as_dict()} if config["bench"].get("coverage") else {}),
        ),
    )
    scoreboard.raise_on_mismatch()
    whole = len(frames) + sum(len(f) >= 2 for f in steered)
    assert scoreboard.checked == whole * width
